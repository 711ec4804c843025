package expiry

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestClaimsLookBackFromTheFront: claims start where the worker's last one ended, so a row the
// claims went past (another claim held it, then handed it back) is claimed only by the look from
// the front that an empty claim triggers; the worker claims every expired row before it stops.
func TestClaimsLookBackFromTheFront(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	first := e.paste("the earliest", time.Now().Add(-2*time.Hour))
	for i := range 25 {
		e.paste("later "+string(rune('a'+i)), time.Now().Add(-time.Hour+time.Duration(i)*time.Second))
	}
	held, err := e.store.ClaimExpired(ctx, 1, time.Time{}) // another worker's, handed back later
	if err != nil || !slices.Equal(held.Codes, []string{first}) {
		t.Fatalf("the other claim: %v, %v; want the earliest paste", held.Codes, err)
	}

	x := e.expirer(1, func(c *Config) { c.BatchSize = 10 })
	claims := make(chan batch)
	go func() { x.claimBatches(ctx, &run{}, claims); close(claims) }()
	var got []string
	for c := range claims {
		if len(got) == 0 {
			if slices.Contains(c.Codes, first) {
				t.Fatal("the first claim took the row another claim held")
			}
			if _, err := e.store.ReturnClaim(ctx, held); err != nil { // behind the claims now
				t.Fatal(err)
			}
		}
		got = append(got, c.Codes...)
	}
	if len(got) != 26 || !slices.Contains(got, first) {
		t.Errorf("claimed %d rows (the held one: %v), want all 26", len(got), slices.Contains(got, first))
	}
}
