package web

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"pastebin/api/site"
	"pastebin/paste"
)

// maxReportForm bounds the report form's body: details at their limit, encoded, and the rest.
const maxReportForm = 16 << 10

// reportReasons are the form's reasons, in the order store.ReportReasons lists their values.
var reportReasons = []reasonChoice{
	{Value: "illegal", Label: "Illegal content"},
	{Value: "personal_data", Label: "Personal data"},
	{Value: "malware", Label: "Malware or phishing"},
	{Value: "spam", Label: "Spam"},
	{Value: "copyright", Label: "Copyright"},
	{Value: "other", Label: "Other"},
}

type reasonChoice struct {
	Value, Label string
	Selected     bool
}

// reportView is what the report form and its receipt show.
type reportView struct {
	Code             string
	ViewLimited      bool
	Reasons          []reasonChoice
	Details, Contact string
	Retention        string // how long a contact address is kept, in days; "" when no purge erases it
	Error            string
	Receipt          string // set once the report is filed
	StatusURL        string
}

func (pages *Pages) newReportView(code string, viewLimited bool, r paste.Report) reportView {
	v := reportView{Code: code, ViewLimited: viewLimited, Details: r.Details, Contact: r.Contact}
	if days := int64(pages.reportRetention / (24 * time.Hour)); days > 0 {
		v.Retention = site.Plural(days, "day")
	}
	for _, c := range reportReasons {
		c.Selected = c.Value == r.Reason
		v.Reasons = append(v.Reasons, c)
	}
	return v
}

// HandleReportPage handles GET /{code}/report: the report form of a paste its reader may see. An
// unknown or gone paste answers as its page does; the paste is not read and no view is taken.
func HandleReportPage(pages *Pages, rd *paste.Reader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := rd.Find(r.Context(), chi.URLParam(r, "code"))
		if err != nil {
			pages.site.Error(w, r, err)
			return
		}
		pages.renderReport(w, r, http.StatusOK, pages.newReportView(f.Paste.Code, f.Paste.ViewLimited(), paste.Report{}))
	})
}

// HandleReport handles the report form: the same report as POST /api/v1/pastes/{code}/reports,
// answered with a page that shows the receipt once. A field to correct shows the form again.
func HandleReport(pages *Pages, rp *paste.Reporter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxReportForm)
		code := chi.URLParam(r, "code")
		rep := paste.Report{Reason: r.PostFormValue("reason"), Details: r.PostFormValue("details"), Contact: r.PostFormValue("contact")}
		receipt, err := rp.File(r.Context(), code, rep)
		if err != nil {
			p := pages.site.Problem(r, err)
			if p.Status != http.StatusBadRequest && p.Status != http.StatusRequestEntityTooLarge {
				pages.site.ErrorPage(w, r, p)
				return
			}
			v := pages.newReportView(code, false, rep)
			v.Error = p.Detail
			pages.renderReport(w, r, p.Status, v)
			return
		}
		v := reportView{Code: code, Receipt: receipt, StatusURL: pages.site.URLs(r, "").Page + "api/v1/reports/" + receipt}
		w.Header().Set("Cache-Control", "no-store")
		pages.renderReport(w, r, http.StatusOK, v)
	})
}

func (pages *Pages) renderReport(w http.ResponseWriter, r *http.Request, status int, v reportView) {
	pages.site.Render(w, r, status, pages.report, site.Page{Title: "Report " + v.Code, NoIndex: true, Data: v})
}
