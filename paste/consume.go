package paste

import (
	"context"

	"pastebin/store"
)

// Consumer runs the reads that take a view of a paste (docs/design.md, "Delete, burn and view").
// Only a POST consumes: link previews, mail scanners and prefetchers send GETs on their own, and a
// GET must not take what a person was sent. Burn after reading is one view, so the view a burn
// paste gives is its last; a paste with a view limit would take one of its views here, the last
// one tombstoning it as a burn does.
type Consumer struct {
	reader  *Reader
	remover *Remover
}

// NewConsumer returns the consuming read, which finds and fetches with rd and removes with rm.
func NewConsumer(rd *Reader, rm *Remover) *Consumer { return &Consumer{reader: rd, remover: rm} }

// Consumed is a view a reader took: the paste and its bytes, which nobody may fetch again through
// this view.
type Consumed struct {
	Paste   store.Paste
	Content []byte // the original bytes
	Stored  []byte // as the bucket held them (Paste.Encoding), to send a client that takes them so
}

// Consume takes a view of the paste code. A paste that gives its content to any read answers
// ErrNothingToConsume, with the paste found.
func (c *Consumer) Consume(ctx context.Context, code string) (Consumed, error) {
	f, err := c.reader.Find(ctx, code)
	if err != nil {
		return Consumed{}, err
	}
	if OpenToGet(f.Paste) {
		return Consumed{Paste: f.Paste}, ErrNothingToConsume
	}
	return c.burn(ctx, f.Paste)
}

// burn reads a burn-after-reading paste and takes it. The bytes are fetched and decoded first,
// while the paste still holds its content, so a blob that cannot be read leaves the paste for the
// next reader; then the one transaction that moves the paste to DELETED decides which reader
// serves them. Every other reader gets a *store.GoneError.
func (c *Consumer) burn(ctx context.Context, p store.Paste) (Consumed, error) {
	stored, err := c.reader.fetchAll(ctx, p)
	if err != nil {
		return Consumed{Paste: p}, err
	}
	data, err := c.reader.decode(stored, p)
	if err != nil {
		return Consumed{Paste: p}, err
	}
	if err := c.remover.burn(ctx, p.Code); err != nil {
		return Consumed{Paste: p}, err
	}
	return Consumed{Paste: p, Content: data, Stored: stored}, nil
}
