package representation

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// formOverhead is about what an entry costs beside its bytes: the key, the list element, the map.
const formOverhead = 256

// formCache keeps the forms that cost work to make (the original bytes of a compressed blob, its
// gzip), the least recently used forgotten first once their sizes add up to more than max bytes.
// Hot pastes are then read as fast as before compression by clients that take no zstd. A key names
// one paste's blob (Content.Key), so no answer comes faster because another paste of the same bytes
// was read, which would tell that someone stored them; it is asked only after the read found the
// paste live, so an expired or deleted paste's form is never served, and is forgotten as the LRU
// turns over.
type formCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[formID, []byte]
	bytes int64
	max   int64
}

// newFormCache returns a cache of at most maxBytes, or nil (a cache that holds nothing) for 0.
func newFormCache(maxBytes int64) *formCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &formCache{max: maxBytes}
	// The count is bounded by the bytes: every entry costs at least formOverhead.
	c.lru, _ = simplelru.NewLRU(int(max(1, maxBytes/formOverhead)), func(k formID, v []byte) { c.bytes -= cost(k, v) })
	return c
}

// formID names one paste's blob in one coding: Content.Key and the coding (a struct, not one string:
// no read builds a key).
type formID struct{ key, coding string }

func cost(k formID, v []byte) int64 { return int64(len(k.key) + len(k.coding) + len(v) + formOverhead) }

func (c *formCache) get(k formID) ([]byte, bool) {
	if c == nil || k.key == "" {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(k)
}

// add keeps v unless it would take more than an eighth of the cache, so that one large paste
// cannot push out everything else.
func (c *formCache) add(k formID, v []byte) {
	if c == nil || k.key == "" || cost(k, v) > c.max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(k) {
		return
	}
	c.lru.Add(k, v)
	c.bytes += cost(k, v)
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}
