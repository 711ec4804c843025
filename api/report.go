package api

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/api/site"
	"pastebin/paste"
)

// maxReportBody bounds a report's request body: its details at their limit, escaped, and the rest.
const maxReportBody = 16 << 10

// jsonReport is the body of POST /api/v1/pastes/{code}/reports.
type jsonReport struct {
	Reason  string `json:"reason"`
	Details string `json:"details"`
	Contact string `json:"contact"`
}

// handleReportCreate handles POST /api/v1/pastes/{code}/reports: 201 with the report's receipt.
func handleReportCreate(st *site.Site, rp *paste.Reporter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		report, err := decodeJSONReport(w, r)
		if err != nil {
			st.Error(w, r, err)
			return
		}
		receipt, err := rp.File(r.Context(), chi.URLParam(r, "code"), report)
		if err != nil {
			st.Error(w, r, err)
			return
		}
		w.Header().Set("Location", "/api/v1/reports/"+receipt)
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusCreated, map[string]string{"id": receipt})
	})
}

// decodeJSONReport reads a report as JSON, at most maxReportBody bytes of it.
func decodeJSONReport(w http.ResponseWriter, r *http.Request) (paste.Report, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return paste.Report{}, problem.MediaType.WithDetail("Send the report as application/json.")
	}
	var body jsonReport
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReportBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&body)
	if err == nil {
		err = jsonEnd(dec)
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return paste.Report{}, problem.ReportTooLarge.WithDetail("A report's body is at most " + strconv.Itoa(maxReportBody) + " bytes.")
	case err != nil && isBodyFault(err):
		return paste.Report{}, &problem.BodyError{Err: err}
	case err != nil:
		return paste.Report{}, problem.BadRequest.WithDetail("Malformed JSON: " + err.Error())
	}
	return paste.Report(body), nil
}

// handleReportStatus handles GET /api/v1/reports/{id}: the state of the report whose receipt is id.
func handleReportStatus(st *site.Site, rp *paste.Reporter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, err := rp.Status(r.Context(), chi.URLParam(r, "id"))
		if err != nil {
			st.Error(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusOK, status)
	})
}
