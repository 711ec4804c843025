package store_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"pastebin/store/storetest"
)

// TestClockSkew: the test's process and its PostgreSQL share one machine's clock.
func TestClockSkew(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	skew, err := s.ClockSkew(context.Background())
	if err != nil || skew.Abs() > time.Second {
		t.Errorf("clock skew on one machine: %v, %v; want under a second", skew, err)
	}
}
