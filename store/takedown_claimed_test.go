package store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// expiredContent creates n pastes of the same bytes, all past their expiry.
func expiredContent(t *testing.T, s *store.Store, bytes string, n int) []string {
	t.Helper()
	codes := newContent(t, s, bytes, n)
	exec(t, s, `UPDATE pastes SET expires_at = now() - interval '1 hour' WHERE short_code = ANY($1)`, codes)
	return codes
}

// TestTakeDownOfClaimedPaste: cleanup has claimed expired pastes when an operator takes one down,
// and blocks the content of others. They are tombstoned with the takedown's reason (a legal one is
// 451 to readers, not 410 "expired") and release their reference then; the claim's finish comes
// after and leaves them alone. Every reference is released once.
func TestTakeDownOfClaimedPaste(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	taken := expiredContent(t, s, "claimed, then taken down", 3)
	blocked := expiredContent(t, s, "claimed, then blocked", 2)
	claim, err := s.ClaimExpired(ctx, 100, time.Time{})
	if err != nil || len(claim.Codes) != 5 {
		t.Fatalf("claim: %d rows, %v; want 5", len(claim.Codes), err)
	}

	res, err := s.TakeDown(ctx, store.Takedown{Code: taken[0], Reason: "court order", Legal: true}, operator)
	if err != nil || !res.TakenDown || !slices.Equal(res.Codes, taken[:1]) {
		t.Fatalf("takedown of a claimed paste: %+v, %v; want it taken down", res, err)
	}
	b, err := s.Block(ctx, store.Block{ContentHash: hashOf("claimed, then blocked"), Reason: "malware", TakeDown: true}, operator)
	if err != nil || len(b.Codes) != 2 || b.FreedContent != 1 {
		t.Fatalf("block of claimed pastes' content: %+v, %v; want both taken down and the content freed", b, err)
	}
	var gone *store.GoneError
	if _, err := s.Paste(ctx, taken[0]); !errors.As(err, &gone) || gone.Reason != store.ReasonLegal {
		t.Errorf("read of the claimed paste taken down: %v, want gone for %q", err, store.ReasonLegal)
	}
	if _, err := s.Paste(ctx, blocked[0]); !errors.As(err, &gone) || gone.Reason != store.ReasonTakedown {
		t.Errorf("read of a claimed paste of blocked content: %v, want gone for %q", err, store.ReasonTakedown)
	}

	rel, err := s.FinishClaim(ctx, claim, 0)
	if err != nil || !sameSet(rel.Codes, taken[1:]) || rel.FreedContent != 1 {
		t.Errorf("the claim's finish: tombstoned %v, freed %d (%v); want only %v, and their content", rel.Codes, rel.FreedContent, err, taken[1:])
	}
	if again, err := s.TakeDown(ctx, store.Takedown{Code: taken[0], Reason: "court order", Legal: true}, operator); err != nil || again.TakenDown {
		t.Errorf("retried takedown: %+v, %v; want nothing done", again, err)
	}
	refCountsExact(t, s)
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM content`); n != 0 {
		t.Errorf("%d content rows left, want both freed", n)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_outbox`); n != 2 {
		t.Errorf("%d blobs in the outbox, want the two contents' blobs once each", n)
	}
}

// TestTakeDownsRaceCleanup: operators take down and block pastes that cleanup has claimed while the
// claim's finish runs, in many rounds. Whatever the interleaving, each paste is tombstoned once, by
// one of them, and reads with that one's reason; the calls together report each paste once, and
// reference counts stay exact. Somewhere the operators must have won some pastes from cleanup. All
// of them lock pastes before content (store/release.go), so they queue rather than deadlock: a
// takedown that locked the content first deadlocked with the finish in most rounds. On this small
// table a finish's plan may walk its pastes in the heap's order, and meet a block the other way
// round now and then: at most a few transactions in all are run again.
func TestTakeDownsRaceCleanup(t *testing.T) {
	t.Parallel()
	retries := &countingHandler{message: "transaction retried after a conflict"}
	s := storetest.New(t, slog.New(retries))
	ctx := context.Background()
	operators := 0 // pastes the takedowns and blocks tombstoned, all of them claimed by cleanup
	for round := range 20 {
		var codes []string
		for c := range 4 {
			codes = append(codes, expiredContent(t, s, fmt.Sprintf("round %d content %d", round, c), 5)...)
		}
		claim, err := s.ClaimExpired(ctx, 100, time.Time{})
		if err != nil || len(claim.Codes) != 20 {
			t.Fatalf("round %d: claim of %d rows, %v; want 20", round, len(claim.Codes), err)
		}
		by := raceTakeDowns(t, s, claim, codes[:10], hashOf(fmt.Sprintf("round %d content 3", round)))
		all := slices.Concat(by[store.ReasonExpired], by[store.ReasonLegal], by[store.ReasonTakedown])
		if !sameSet(all, codes) {
			t.Fatalf("round %d: the finish and the takedowns tombstoned %d pastes in all (%d distinct), want each of the 20 once",
				round, len(all), len(slices.Compact(slices.Sorted(slices.Values(all)))))
		}
		operators += len(by[store.ReasonLegal]) + len(by[store.ReasonTakedown])
		for reason, tombstoned := range by {
			for _, code := range tombstoned {
				var gone *store.GoneError
				if _, err := s.Paste(ctx, code); !errors.As(err, &gone) || gone.Reason != reason {
					t.Fatalf("round %d: paste %s reads %v, want gone for %q, the reason of the call that tombstoned it", round, code, err, reason)
				}
			}
		}
	}
	if operators == 0 {
		t.Error("in no round did a takedown or a block take down a paste cleanup had claimed")
	}
	if n := retries.count.Load(); n > 3 {
		t.Errorf("%d transactions ran again after a deadlock in 20 rounds, want at most 3", n)
	}
	refCountsExact(t, s)
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM content`); n != 0 {
		t.Errorf("%d content rows left, want every one freed", n)
	}
}

// raceTakeDowns runs claim's finish, a legal takedown of each of codes and a block with takedown of
// the content blockedHash at once, and returns the pastes each reason's calls tombstoned (a paste
// as many times as it was).
func raceTakeDowns(t *testing.T, s *store.Store, claim store.Claim, codes []string, blockedHash []byte) map[string][]string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	by := map[string][]string{}
	add := func(reason string, tombstoned []string) {
		mu.Lock()
		defer mu.Unlock()
		by[reason] = append(by[reason], tombstoned...)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		<-start
		rel, err := s.FinishClaim(ctx, claim, 0)
		if err != nil {
			t.Errorf("finish: %v", err)
		}
		add(store.ReasonExpired, rel.Codes)
	})
	for _, code := range codes {
		wg.Go(func() {
			<-start
			res, err := s.TakeDown(ctx, store.Takedown{Code: code, Reason: "court order", Legal: true}, operator)
			if err != nil {
				t.Errorf("takedown: %v", err)
			}
			if res.TakenDown != (len(res.Codes) == 1) {
				t.Errorf("takedown answered TakenDown %v and tombstoned %v", res.TakenDown, res.Codes)
			}
			add(store.ReasonLegal, res.Codes)
		})
	}
	wg.Go(func() {
		<-start
		res, err := s.Block(ctx, store.Block{ContentHash: blockedHash, Reason: "malware", TakeDown: true}, operator)
		if err != nil {
			t.Errorf("block: %v", err)
		}
		add(store.ReasonTakedown, res.Codes)
	})
	close(start)
	wg.Wait()
	return by
}

// sameSet reports whether a and b hold the same strings, each once.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// countingHandler counts the log records with one message.
type countingHandler struct {
	message string
	count   atomic.Int64
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.message {
		h.count.Add(1)
	}
	return nil
}
