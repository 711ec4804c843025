package admin

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"pastebin/api/problem"
	"pastebin/store"
)

// auditPage is a page of the audit log and the address of the next, older one.
type auditPage struct {
	Entries []store.AuditEntry `json:"entries"`
	Next    string             `json:"next,omitempty"`
}

// readAuditPage reads the page of the audit log that r's before and limit parameters ask for.
func readAuditPage(r *http.Request, s *store.Store) (auditPage, error) {
	limit, perr := limitParam(r, 50)
	if perr != nil {
		return auditPage{}, perr
	}
	var before int64
	if v := r.URL.Query().Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return auditPage{}, problem.BadRequest.WithDetail("before must be the id of an audit entry.")
		}
		before = n
	}
	entries, err := s.Audit(r.Context(), before, limit)
	if err != nil {
		return auditPage{}, err
	}
	p := auditPage{Entries: entries}
	if p.Entries == nil {
		p.Entries = []store.AuditEntry{}
	}
	if len(entries) == limit {
		p.Next = "/admin/audit?before=" + strconv.FormatInt(entries[len(entries)-1].ID, 10) + "&limit=" + strconv.Itoa(limit)
	}
	return p, nil
}

// HandleAudit handles GET /admin/audit: every admin action, newest first, paged by before.
func HandleAudit(logger *slog.Logger, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := readAuditPage(r, s)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusOK, p)
	})
}

type auditView struct {
	view
	Entries []auditRow
	Next    string
}

// auditRow is an audit entry as the console shows it.
type auditRow struct{ store.AuditEntry }

// When is the entry's time, for people.
func (a auditRow) When() string { return a.At.UTC().Format("2006-01-02 15:04:05 UTC") }

// Details says what the action did, from the entry's detail: "legal: true, pastes: 3".
func (a auditRow) Details() string {
	keys := slices.Sorted(maps.Keys(a.Detail))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strings.ReplaceAll(k, "_", " ") + ": " + fmt.Sprint(a.Detail[k])
	}
	return strings.Join(parts, ", ")
}

// HandleAuditPage handles GET /admin/audit for browsers.
func HandleAuditPage(c *Console, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := readAuditPage(r, s)
		if err != nil {
			c.failed(w, r, err)
			return
		}
		v := auditView{view: c.view(r, "audit"), Next: p.Next}
		for _, e := range p.Entries {
			v.Entries = append(v.Entries, auditRow{e})
		}
		c.render(w, r, http.StatusOK, "audit", "Audit log", v)
	})
}
