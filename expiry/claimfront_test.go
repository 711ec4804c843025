package expiry

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestClaimsLookBackFromTheFront: claims start where the worker's last one ended, so a row the
// claims went past (a user's transaction held it) is claimed only by the look from the front that an
// empty claim triggers; the worker claims every expired row before it stops.
func TestClaimsLookBackFromTheFront(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	first := e.paste("the earliest", time.Now().Add(-2*time.Hour))
	for i := range 25 {
		e.paste("later "+string(rune('a'+i)), time.Now().Add(-time.Hour+time.Duration(i)*time.Second))
	}
	held, err := e.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx)
	if _, err := held.Exec(ctx, `SELECT 1 FROM pastes WHERE short_code = $1 FOR UPDATE`, first); err != nil {
		t.Fatal(err)
	}

	x := e.expirer(1, func(c *Config) { c.BatchSize = 10 })
	claims := make(chan batch)
	go func() { x.claimBatches(ctx, &run{}, claims); close(claims) }()
	var got []string
	for c := range claims {
		if len(got) == 0 {
			if slices.Contains(c.Codes, first) {
				t.Fatal("the first claim took the row a transaction held")
			}
			if err := held.Rollback(ctx); err != nil { // behind the claims now
				t.Fatal(err)
			}
		}
		got = append(got, c.Codes...)
	}
	if len(got) != 26 || !slices.Contains(got, first) {
		t.Errorf("claimed %d rows (the held one: %v), want all 26", len(got), slices.Contains(got, first))
	}
}
