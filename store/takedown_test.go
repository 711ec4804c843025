package store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

var operator = store.Actor{Name: "token:test", Via: store.ViaAPI}

// newContent creates n pastes of the same bytes (the first uploads, the others share it).
func newContent(t *testing.T, s *store.Store, bytes string, n int) []string {
	t.Helper()
	ctx := context.Background()
	np := store.NewPaste{ContentHash: hashOf(bytes), Size: int64(len(bytes)), OwnerTokenHash: store.HashToken("owner")}
	var codes []string
	for i := range n {
		var p store.Paste
		var err error
		if i == 0 {
			p, err = s.CreatePasteWithBlob(ctx, np, "blobs/"+bytes)
		} else {
			p, err = s.CreatePasteShared(ctx, np)
		}
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, p.Code)
	}
	return codes
}

// refCountsExact is invariant 1, checked with plain SQL.
func refCountsExact(t *testing.T, s *store.Store) {
	t.Helper()
	a := storetest.Check(t, s.Pool(), nil)
	if len(a.RefMismatches) > 0 || len(a.Unreferenced) > 0 || a.LiveWithout > 0 {
		t.Errorf("ref counts: mismatches %v, content at 0 %v, live pastes without content %d", a.RefMismatches, a.Unreferenced, a.LiveWithout)
	}
}

// TestTakeDownIsTheOwnersDelete: a takedown moves the paste to DELETED with its own reason and
// releases one reference, exactly as the owner's delete; the last one frees the content and queues
// its blob; a retry changes nothing; each call is in the audit log with the content's hash.
func TestTakeDownIsTheOwnersDelete(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	codes := newContent(t, s, "abuse", 2)

	res, err := s.TakeDown(ctx, store.Takedown{Code: codes[0], Reason: "spam"}, operator)
	if err != nil || !res.TakenDown || len(res.Codes) != 1 || res.FreedContent != 0 {
		t.Fatalf("first takedown: %+v, %v", res, err)
	}
	var gone *store.GoneError
	if _, err := s.Paste(ctx, codes[0]); !errors.As(err, &gone) || gone.Reason != store.ReasonTakedown {
		t.Errorf("read after takedown: %v, want gone for %q", err, store.ReasonTakedown)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT ref_count FROM content`); n != 1 {
		t.Errorf("ref_count %d after one of two pastes went, want 1", n)
	}
	res, err = s.TakeDown(ctx, store.Takedown{Code: codes[1], Reason: "court order", Legal: true}, operator)
	if err != nil || !res.TakenDown || res.FreedContent != 1 || len(res.BlobKeys) != 1 {
		t.Fatalf("last takedown: %+v, %v", res, err)
	}
	if _, err := s.Paste(ctx, codes[1]); !errors.As(err, &gone) || gone.Reason != store.ReasonLegal {
		t.Errorf("read after a legal takedown: %v, want gone for %q", err, store.ReasonLegal)
	}
	again, err := s.TakeDown(ctx, store.Takedown{Code: codes[1], Reason: "court order", Legal: true}, operator)
	if err != nil || again.TakenDown || len(again.Codes) != 0 || string(again.ContentHash) != string(hashOf("abuse")) {
		t.Errorf("retried takedown: %+v, %v; want nothing done, the content still known", again, err)
	}
	if _, err := s.TakeDown(ctx, store.Takedown{Code: "nosuchpaste", Reason: "x"}, operator); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("takedown of an unknown code: %v, want ErrNotFound", err)
	}
	refCountsExact(t, s)
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_deletions WHERE blob_key = 'blobs/abuse'`); n != 1 {
		t.Errorf("the freed blob is %d times in the outbox, want once", n)
	}
	entries, err := s.Audit(ctx, 0, 10)
	if err != nil || len(entries) != 3 {
		t.Fatalf("audit: %d entries, %v; want 3", len(entries), err)
	}
	if e := entries[0]; e.Action != store.ActionTakedown || e.Code != codes[1] || e.Reason != "court order" ||
		e.ContentHash == "" || e.Detail["taken_down"] != false || e.Actor != operator.Name {
		t.Errorf("newest audit entry %+v, want the retried takedown", e)
	}
}

// TestBlockTakesDownEveryCopy blocks content by one paste's code: every live paste of it goes in
// one transaction, creates of it are refused on both create paths and write nothing, other
// content is untouched, and unblocking lets it be stored again.
func TestBlockTakesDownEveryCopy(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	copies := newContent(t, s, "malware", 3)
	other := newContent(t, s, "fine", 1)

	res, err := s.TakeDown(ctx, store.Takedown{Code: copies[1], Reason: "malware", Block: true}, operator)
	if err != nil || !res.TakenDown || !res.Blocked || len(res.Codes) != 3 || res.FreedContent != 1 {
		t.Fatalf("takedown with block: %+v, %v; want all 3 copies down and the content freed", res, err)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM tombstones WHERE deleted_reason = 'takedown'`); n != 3 {
		t.Errorf("%d pastes taken down, want 3", n)
	}
	if _, err := s.Paste(ctx, other[0]); err != nil {
		t.Errorf("a paste of other content: %v", err)
	}
	before := tableSizes(t, s)
	np := store.NewPaste{ContentHash: hashOf("malware"), Size: 7, OwnerTokenHash: store.HashToken("x")}
	if _, err := s.CreatePasteShared(ctx, np); !errors.Is(err, store.ErrBlocked) {
		t.Errorf("dedup create of blocked content: %v, want ErrBlocked", err)
	}
	if _, err := s.CreatePasteWithBlob(ctx, np, "blobs/malware-again"); !errors.Is(err, store.ErrBlocked) {
		t.Errorf("create of blocked content with an upload: %v, want ErrBlocked", err)
	}
	if after := tableSizes(t, s); after != before {
		t.Errorf("refused creates wrote something: %s, then %s", before, after)
	}
	// A retried block of the paste, a tombstone now, finds its content in the audit log.
	again, err := s.Block(ctx, store.Block{Code: copies[1], Reason: "again", TakeDown: true}, operator)
	if err != nil || again.Added || len(again.Codes) != 0 {
		t.Errorf("retried block: %+v, %v; want the content found, blocked already, nothing taken down", again, err)
	}
	removed, err := s.Unblock(ctx, hashOf("malware"), "appeal", operator)
	if err != nil || !removed {
		t.Fatalf("unblock: %v, %v", removed, err)
	}
	if _, err := s.CreatePasteWithBlob(ctx, np, "blobs/malware-again"); err != nil {
		t.Errorf("create after unblock: %v", err)
	}
	refCountsExact(t, s)
}

func tableSizes(t *testing.T, s *store.Store) string {
	t.Helper()
	return fmt.Sprint(storetest.Count(t, s.Pool(), `SELECT count(*) FROM pastes`),
		storetest.Count(t, s.Pool(), `SELECT count(*) FROM content`),
		storetest.Count(t, s.Pool(), `SELECT coalesce(sum(ref_count), 0) FROM content`),
		storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_deletions`))
}

// TestBlockOfGoneContentUnknown: a paste deleted by its owner keeps no content hash, and no
// takedown recorded one, so blocking "its content" is refused rather than guessed.
func TestBlockOfGoneContentUnknown(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	codes := newContent(t, s, "deleted by owner", 1)
	if _, err := s.DeletePaste(ctx, codes[0], "owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Block(ctx, store.Block{Code: codes[0], Reason: "late report"}, operator); !errors.Is(err, store.ErrContentUnknown) {
		t.Errorf("block of a deleted paste's content: %v, want ErrContentUnknown", err)
	}
}

// TestAuditIsAppendOnly: nobody, not even the table's owner, changes or removes an audit entry.
func TestAuditIsAppendOnly(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := s.Unblock(ctx, hashOf("x"), "", operator); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`UPDATE admin_audit SET reason = 'forged'`, `DELETE FROM admin_audit`, `TRUNCATE admin_audit`} {
		if _, err := s.Pool().Exec(ctx, q); err == nil {
			t.Errorf("%s succeeded on the audit log", q)
		}
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM admin_audit WHERE reason = ''`); n != 1 {
		t.Errorf("%d untouched audit entries, want 1", n)
	}
}

// TestBlockRacesCreates blocks content while creators keep storing it, over both create paths, in
// many rounds. Whatever the interleaving, once the block has committed no live paste of that
// content is left: each create either committed before the block's takedown saw it, or saw the
// block and wrote nothing. Reference counts stay exact. Creates must have overlapped the blocks
// (one ran while a block did), or the test proved nothing; and one round holds a create at its
// COMMIT, its paste inserted and its locks taken, while the block starts: the block must wait for
// it and take its paste down.
func TestBlockRacesCreates(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	overlapped := 0
	for round := range 20 {
		content := fmt.Sprintf("raced content %d", round)
		hash := hashOf(content)
		stop := make(chan struct{})
		var tries creates
		var wg sync.WaitGroup
		for creator := range 4 {
			wg.Go(func() { createUntilBlocked(t, s, content, creator, stop, &tries) })
		}
		newContent(t, s, content, 1) // at least one paste, so the block has something to take down
		begun := time.Now()
		res, err := s.Block(ctx, store.Block{ContentHash: hash, Reason: "race", TakeDown: true}, operator)
		ended := time.Now()
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("round %d: block: %v", round, err)
		}
		if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM pastes WHERE content_hash = $1`, hash); n != 0 {
			t.Fatalf("round %d: %d live pastes of blocked content after the block (it took down %d)", round, n, len(res.Codes))
		}
		overlapped += tries.during(begun, ended)
	}
	if overlapped == 0 {
		t.Error("no create was in flight while a block ran: the rounds raced nothing")
	}
	blockWaitsForHeldCreate(t, s)
	refCountsExact(t, s)
}

// blockWaitsForHeldCreate holds a create of content at its COMMIT, starts a block of that content,
// checks that the block waits, then lets the create commit: the block must take its paste down.
func blockWaitsForHeldCreate(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	const content = "held while blocked"
	newContent(t, s, content, 1)
	gate := storetest.HoldCommits(t, s.Pool(), "held")
	np := store.NewPaste{ContentHash: hashOf(content), Size: int64(len(content)), OwnerTokenHash: store.HashToken("o"), Title: "held"}
	held := make(chan store.Paste, 1)
	go func() {
		p, err := s.CreatePasteShared(ctx, np)
		if err != nil {
			t.Errorf("held create: %v", err)
		}
		held <- p
	}()
	gate.WaitForCommit(t)
	blocked := make(chan store.BlockResult, 1)
	go func() {
		res, err := s.Block(ctx, store.Block{ContentHash: np.ContentHash, Reason: "race", TakeDown: true}, operator)
		if err != nil {
			t.Errorf("block: %v", err)
		}
		blocked <- res
	}()
	storetest.WaitFor(t, "the block waits for the create at its commit", func() bool {
		return storetest.Count(t, s.Pool(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query NOT ILIKE 'commit%'`) > 0
	})
	gate.Open(t)
	p, res := <-held, <-blocked
	if !slices.Contains(res.Codes, p.Code) || len(res.Codes) != 2 {
		t.Errorf("the block took down %v, want the held create's %s and the paste before it", res.Codes, p.Code)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM pastes WHERE content_hash = $1`, np.ContentHash); n != 0 {
		t.Errorf("%d live pastes of blocked content after the block", n)
	}
}

// creates records when each create attempt of a round began and ended.
type creates struct {
	mu    sync.Mutex
	spans [][2]time.Time
}

func (c *creates) add(begun, ended time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spans = append(c.spans, [2]time.Time{begun, ended})
}

// during counts the attempts in flight at some moment between begun and ended.
func (c *creates) during(begun, ended time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.spans {
		if s[0].Before(ended) && s[1].After(begun) {
			n++
		}
	}
	return n
}

// createUntilBlocked creates pastes of content until it is refused as blocked, or told to stop, and
// records each attempt in tries.
func createUntilBlocked(t *testing.T, s *store.Store, content string, creator int, stop <-chan struct{}, tries *creates) {
	ctx := context.Background()
	np := store.NewPaste{ContentHash: hashOf(content), Size: int64(len(content)), OwnerTokenHash: store.HashToken("o")}
	for i := 0; i < 1000; i++ {
		select {
		case <-stop:
			return
		default:
		}
		begun := time.Now()
		_, err := s.CreatePasteShared(ctx, np)
		if errors.Is(err, store.ErrNoContent) {
			_, err = s.CreatePasteWithBlob(ctx, np, fmt.Sprintf("blobs/%s/%d/%d", content, creator, i))
		}
		tries.add(begun, time.Now())
		if errors.Is(err, store.ErrBlocked) {
			return
		}
		if err != nil {
			t.Errorf("create: %v", err)
			return
		}
	}
}
