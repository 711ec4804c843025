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
	Content []byte
}

// Consume takes a view of the paste code. A paste that gives its content to any read answers
// ErrNothingToConsume, with the paste found.
func (c *Consumer) Consume(ctx context.Context, code string) (Consumed, error) {
	return c.consume(ctx, code, false)
}

// ConsumeForPage is Consume for the paste page's button, which shows what it took: an encrypted
// paste answers ErrEncrypted and gives no view, since the server cannot show it and its page's
// script takes the view itself.
func (c *Consumer) ConsumeForPage(ctx context.Context, code string) (Consumed, error) {
	return c.consume(ctx, code, true)
}

func (c *Consumer) consume(ctx context.Context, code string, forPage bool) (Consumed, error) {
	f, err := c.reader.Find(ctx, code)
	if err != nil {
		return Consumed{}, err
	}
	switch {
	case !f.Paste.ViewLimited():
		return Consumed{Paste: f.Paste}, ErrNothingToConsume
	case forPage && f.Paste.Encryption != "":
		return Consumed{Paste: f.Paste}, ErrEncrypted
	}
	// The bytes are fetched first, while the paste still holds its content: the view that takes
	// the last one releases it, and the blob could go before anyone read it.
	data, err := c.reader.fetchAll(ctx, f.Paste)
	if err != nil {
		return Consumed{}, err
	}
	view, err := c.remover.takeView(ctx, code)
	if err != nil {
		return Consumed{}, err
	}
	f.Paste.ViewsLeft = view.ViewsLeft
	return Consumed{Paste: f.Paste, Content: data}, nil
}
