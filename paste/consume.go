package paste

import (
	"context"

	"pastebin/store"
)

// Consumer runs the reads that take a view of a paste (docs/design.md, "Delete, burn and view").
// Only a POST consumes: link previews, mail scanners and prefetchers send GETs on their own, and a
// GET must not take what a person was sent. Each consuming read takes one of a paste's views; the
// one that takes the last tombstones the paste. Burn after reading is a limit of one view.
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
	case OpenToGet(f.Paste):
		return Consumed{Paste: f.Paste}, ErrNothingToConsume
	case forPage && f.Paste.Encryption != "":
		return Consumed{Paste: f.Paste}, ErrEncrypted
	}
	return c.takeView(ctx, f.Paste)
}

// takeView reads a view-limited paste and takes one of its views. The bytes are fetched and
// decoded first, while the paste still holds its content, so a blob that cannot be read leaves the
// view for the next reader (and the view that takes the last one releases the content, whose blob
// could otherwise go before anyone read it); then the one transaction that takes the view decides
// whether this reader serves them. A reader that finds no view left gets a *store.GoneError.
func (c *Consumer) takeView(ctx context.Context, p store.Paste) (Consumed, error) {
	stored, err := c.reader.fetchAll(ctx, p)
	if err != nil {
		return Consumed{Paste: p}, err
	}
	data, err := c.reader.decode(stored, p)
	if err != nil {
		return Consumed{Paste: p}, err
	}
	view, err := c.remover.takeView(ctx, p.Code)
	if err != nil {
		return Consumed{Paste: p}, err
	}
	p.ViewsLeft = view.ViewsLeft
	return Consumed{Paste: p, Content: data, Stored: stored}, nil
}
