package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"testing"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestContentRefs: the contents the spam signal names, in its order, with their ref counts, a few
// of their live pastes (never a taken-down one), whether they are blocked, and nothing for a
// content no paste holds any more, or never held.
func TestContentRefs(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	spam := newContent(t, s, "spam", 5)
	notes := newContent(t, s, "notes", 2)
	blocked := newContent(t, s, "blocked", 2)
	if _, err := s.TakeDown(ctx, store.Takedown{Code: notes[0], Reason: "test"}, operator); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Block(ctx, store.Block{ContentHash: hashOf("blocked"), Reason: "test", TakeDown: true}, operator); err != nil {
		t.Fatal(err)
	}
	hashes := [][]byte{hashOf("spam"), hashOf("never"), hashOf("notes"), hashOf("blocked")}
	got, err := s.ContentRefs(ctx, hashes, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("got %d contents, want 4: %+v", len(got), got)
	}
	for i, c := range got {
		if !bytes.Equal(c.Hash, hashes[i]) {
			t.Errorf("content %d: %x, want %x (the order asked)", i, c.Hash, hashes[i])
		}
	}
	if c := got[0]; !c.Stored || c.RefCount != 5 || c.Blocked || len(c.Codes) != 3 || !subset(c.Codes, spam) {
		t.Errorf("spam: %+v; want 5 refs and 3 of %v", c, spam)
	}
	if c := got[1]; c.Stored || c.RefCount != 0 || c.Blocked || len(c.Codes) != 0 {
		t.Errorf("never stored: %+v", c)
	}
	if c := got[2]; !c.Stored || c.RefCount != 1 || !slices.Equal(c.Codes, notes[1:]) {
		t.Errorf("notes, one taken down: %+v; want 1 ref, %v", c, notes[1:])
	}
	if c := got[3]; c.Stored || !c.Blocked || len(c.Codes) != 0 {
		t.Errorf("blocked and taken down (%v): %+v", blocked, c)
	}
	if none, err := s.ContentRefs(ctx, nil, 3); err != nil || len(none) != 0 {
		t.Errorf("no hashes: %+v, %v", none, err)
	}
}

func subset(some, all []string) bool {
	for _, s := range some {
		if !slices.Contains(all, s) {
			return false
		}
	}
	return true
}
