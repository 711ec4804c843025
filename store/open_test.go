package store_test

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestQueryExecModes: Open accepts the pgx modes whose parameters stay parameters, and refuses
// simple_protocol, which inlines them and defeats the pinned generic plans of store/release.go,
// whether or not the database is behind a transaction pooler.
func TestQueryExecModes(t *testing.T) {
	t.Parallel()
	base := storetest.NewDatabase(t)
	withMode := func(mode string) string {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("default_query_exec_mode", mode)
		u.RawQuery = q.Encode()
		return u.String()
	}
	pooler := []store.Option{store.BehindTransactionPooler()}
	for _, tt := range []struct {
		mode   string
		opts   []store.Option
		refuse string // "": accepted
	}{
		{mode: "exec"},
		{mode: "exec", opts: pooler},
		{mode: "cache_describe", opts: pooler},
		{mode: "cache_statement", opts: pooler, refuse: "cache statement"},
		{mode: "simple_protocol", refuse: "simple_protocol"},
		{mode: "simple_protocol", opts: pooler, refuse: "simple_protocol"},
	} {
		s, err := store.Open(context.Background(), withMode(tt.mode), slog.New(slog.DiscardHandler), tt.opts...)
		if err == nil {
			s.Close()
		}
		switch {
		case tt.refuse == "" && err != nil:
			t.Errorf("Open in mode %s (%d options): %v, want it accepted", tt.mode, len(tt.opts), err)
		case tt.refuse != "" && (err == nil || !strings.Contains(err.Error(), tt.refuse)):
			t.Errorf("Open in mode %s (%d options): %v, want it refused naming %q", tt.mode, len(tt.opts), err, tt.refuse)
		}
	}
}
