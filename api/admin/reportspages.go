package admin

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"pastebin/api/site"
	"pastebin/paste"
	"pastebin/store"
)

// The console's reports queue, its one-click decisions, and the preview of a reported paste.

// previewBytes is how much of a paste the preview shows.
const previewBytes = 16 << 10

type reportsView struct {
	view
	State  string
	States []string
	Cases  []caseView
}

// caseView is a case as the queue shows it: its reports, its pastes, and what to say in the audit log.
type caseView struct {
	store.Case
	Pastes  []store.ReportedPaste
	Reasons string // the reports' reasons, the decision's default reason
}

// ShortHash is the start of the case's content hash.
func (c caseView) ShortHash() string { return c.ContentHash[:12] + "…" }

func (c *Console) renderReports(w http.ResponseWriter, r *http.Request, s *store.Store, status int, v reportsView) {
	cases, err := s.Cases(r.Context(), v.State, 1000)
	var pastes map[string]store.ReportedPaste
	if err == nil {
		pastes, err = s.ReportedPastes(r.Context(), allCodes(cases))
	}
	if err != nil {
		c.failed(w, r, err)
		return
	}
	v.States = reportStates
	for _, cs := range cases {
		cv := caseView{Case: cs}
		var reasons []string
		for _, rep := range cs.Reports {
			if !slices.Contains(reasons, rep.Reason) {
				reasons = append(reasons, rep.Reason)
			}
		}
		cv.Reasons = "reported: " + strings.Join(reasons, ", ")
		for _, code := range cs.Codes {
			cv.Pastes = append(cv.Pastes, pastes[code])
		}
		v.Cases = append(v.Cases, cv)
	}
	c.render(w, r, status, "reports", "Reports", v)
}

func allCodes(cases []store.Case) []string {
	codes := []string{}
	for _, c := range cases {
		codes = append(codes, c.Codes...)
	}
	return codes
}

// HandleReportsPage handles GET /admin/reports for browsers: the queue of a state, open by default.
func HandleReportsPage(c *Console, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		state, p := stateParam(r)
		if p != nil {
			c.site.ErrorPage(w, r, p)
			return
		}
		c.renderReports(w, r, s, http.StatusOK, reportsView{view: c.view(r, "reports"), State: state})
	})
}

// HandleCaseTakedownForm handles the queue's take-down buttons: the same decision as POST
// /admin/reports/{hash}/takedown, then the queue again.
func HandleCaseTakedownForm(c *Console, s *store.Store, cs *paste.Cases) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := paste.CaseAction{Reason: r.PostFormValue("reason"), Legal: r.PostFormValue("legal") != "", Block: r.PostFormValue("block") != ""}
		c.decide(w, r, s, func(hash []byte) (paste.CaseResult, error) {
			return cs.TakeDown(r.Context(), hash, a, sessionOf(r).actor)
		}, func(res paste.CaseResult) string {
			msg := site.Plural(int64(res.PastesTakenDown), "paste") + " taken down"
			if res.Blocked {
				msg += ", content blocked"
			}
			return msg
		})
	})
}

// HandleCaseDismissForm handles the queue's dismiss button: the same as POST
// /admin/reports/{hash}/dismiss.
func HandleCaseDismissForm(c *Console, s *store.Store, cs *paste.Cases) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reason := r.PostFormValue("reason")
		c.decide(w, r, s, func(hash []byte) (paste.CaseResult, error) {
			return cs.Dismiss(r.Context(), hash, reason, sessionOf(r).actor)
		}, func(paste.CaseResult) string { return "dismissed" })
	})
}

// decide runs a decision on the case of the request's {hash} and shows the open queue with what it did.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, s *store.Store, do func([]byte) (paste.CaseResult, error), did func(paste.CaseResult) string) {
	v := reportsView{view: c.view(r, "reports"), State: store.ReportOpen}
	hash, p := caseHash(r)
	if p == nil {
		p = checkReason(r.PostFormValue("reason"))
	}
	if p != nil {
		v.Error = p.Detail
		c.renderReports(w, r, s, p.Status, v)
		return
	}
	res, err := do(hash)
	if fp := c.formProblem(r, err); fp != nil {
		v.Error = fp.Detail
		c.renderReports(w, r, s, fp.Status, v)
		return
	} else if err != nil {
		c.failed(w, r, err)
		return
	}
	v.Notice = "Case " + shortHash(hash) + ": " + did(res) + "; " + site.Plural(res.ReportsClosed, "report") + " closed."
	c.renderReports(w, r, s, http.StatusOK, v)
}

type previewView struct {
	view
	Preview   paste.Preview
	Text      string
	Truncated bool
}

// HandlePreviewPage handles GET /admin/pastes/{code}/preview: the start of a paste's text, escaped,
// for an operator judging a report. It takes no view of a view-limited paste.
func HandlePreviewPage(c *Console, rd *paste.Reader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pv, err := rd.Preview(r.Context(), chi.URLParam(r, "code"), previewBytes)
		var gone *store.GoneError
		if errors.As(err, &gone) || errors.Is(err, store.ErrNotFound) {
			c.site.ErrorPage(w, r, c.site.Problem(r, err))
			return
		}
		if err != nil {
			c.failed(w, r, err)
			return
		}
		v := previewView{view: c.view(r, "reports"), Preview: pv, Text: strings.ToValidUTF8(string(pv.Text), "\uFFFD"), Truncated: pv.Truncated}
		w.Header().Set("Cache-Control", "no-store")
		c.render(w, r, http.StatusOK, "preview", "Preview of "+pv.Paste.Code, v)
	})
}
