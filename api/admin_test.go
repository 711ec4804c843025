package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"pastebin/store/storetest"
)

const adminToken = "an-admin-token-of-some-length"

func TestAdminDisabledWithoutToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(e.request(http.MethodPost, "/admin/cleanup", nil, "Authorization", "Bearer "+adminToken))
	if r.StatusCode != http.StatusNotFound || !contains(r.text(), "admin-disabled", "PASTEBIN_ADMIN_TOKEN") {
		t.Errorf("admin without a configured token: %d %s", r.StatusCode, r.body)
	}
}

func TestAdminAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	for _, tt := range []struct {
		name, auth string
		want       int
		wantType   string // the problem's type; "" for a success
	}{
		{"no token", "", http.StatusUnauthorized, "/problems/unauthorized"},
		{"wrong token", "Bearer not-the-admin-token-at-all", http.StatusUnauthorized, "/problems/wrong-admin-token"},
		{"another scheme", "Basic " + adminToken, http.StatusUnauthorized, "/problems/unauthorized"},
		{"right token", "Bearer " + adminToken, http.StatusOK, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := e.request(http.MethodGet, "/admin/cleanup/runs", nil)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			r := e.do(req)
			var p struct{ Type string }
			if tt.wantType != "" {
				_ = json.Unmarshal(r.body, &p)
			}
			if r.StatusCode != tt.want || p.Type != tt.wantType {
				t.Errorf("got %d %q, want %d %q: %s", r.StatusCode, p.Type, tt.want, tt.wantType, r.body)
			}
		})
	}
}

// TestAdminCleanupRun starts a run over HTTP, follows its report until it finishes, and checks the
// report against the database.
func TestAdminCleanupRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 2))
	ctx := context.Background()
	keys, err := storetest.Seed(ctx, e.store.Pool(), storetest.SeedSpec{Pastes: 1500, Expired: 1000, Shared: 0.4, Tag: "H"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := e.bucket.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	auth := []string{"Authorization", "Bearer " + adminToken}
	var backlog struct{ Expired int64 }
	_ = json.Unmarshal(e.get("/admin/cleanup/backlog", auth...).body, &backlog)
	if backlog.Expired != 1000 {
		t.Errorf("backlog %d, want 1000", backlog.Expired)
	}
	started := e.do(e.request(http.MethodPost, "/admin/cleanup", nil, auth...))
	if started.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d %s", started.StatusCode, started.body)
	}
	var run struct {
		ID                  int64
		Status              string
		Tombstoned, Claimed int64
		ContentFreed        int64 `json:"content_freed"`
		BlobsDeleted        int64 `json:"blobs_deleted"`
		Batches, Errors     int64
		DurationSeconds     float64 `json:"duration_seconds"`
		Pacing              struct{ Mode, Reason string }
	}
	_ = json.Unmarshal(started.body, &run)
	if loc := started.Header.Get("Location"); loc != "/admin/cleanup/runs/"+strconv.FormatInt(run.ID, 10) {
		t.Errorf("Location %q for run %d", loc, run.ID)
	}
	deadline := time.Now().Add(time.Minute)
	for run.Status == "running" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		_ = json.Unmarshal(e.get("/admin/cleanup/runs/"+strconv.FormatInt(run.ID, 10), auth...).body, &run)
	}
	if run.Status != "finished" {
		t.Fatalf("run %d is %q", run.ID, run.Status)
	}
	freed := int64(len(keys) - e.count(`SELECT count(*) FROM content`))
	if run.Claimed != 1000 || run.Tombstoned != int64(e.count(`SELECT count(*) FROM tombstones`)) ||
		run.ContentFreed != freed || run.BlobsDeleted != freed || run.Errors != 0 || run.Batches < 1 {
		t.Errorf("report %+v; the database shows %d content rows freed", run, freed)
	}
	if run.Pacing.Mode != "auto" {
		t.Errorf("report's pacing %+v, want the default, auto", run.Pacing)
	}
	var list struct{ Runs []struct{ ID int64 } }
	_ = json.Unmarshal(e.get("/admin/cleanup/runs?limit=5", auth...).body, &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != run.ID {
		t.Errorf("runs %+v", list.Runs)
	}
	if r := e.get("/admin/cleanup/runs/999999", auth...); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown run: %d", r.StatusCode)
	}
	if r := e.get("/admin/cleanup/runs?limit=0", auth...); r.StatusCode != http.StatusBadRequest {
		t.Errorf("limit=0: %d", r.StatusCode)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
