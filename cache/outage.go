package cache

import (
	"sync/atomic"
	"time"
)

// DefaultOutageQuiet is how long Redis must answer without a failure before an outage is over.
const DefaultOutageQuiet = 10 * time.Second

// Outage tells when Redis starts failing and when it works again, once per outage rather than once
// per command, for the log. With a Redis Cluster whose master is down, the commands on that
// master's slots fail while the others succeed: taken command by command, every request would be
// a change. So an outage starts at the first failure and ends at the first success after Quiet has
// passed with no failure.
type Outage struct {
	Quiet       time.Duration // zero: DefaultOutageQuiet
	failing     atomic.Bool
	lastFailure atomic.Int64 // Unix nanoseconds
}

// Failed records a failure and reports whether it starts an outage.
func (o *Outage) Failed() bool {
	o.lastFailure.Store(time.Now().UnixNano())
	return !o.failing.Swap(true)
}

// Succeeded records a success and reports whether it ends an outage.
func (o *Outage) Succeeded() bool {
	if !o.failing.Load() {
		return false
	}
	quiet := o.Quiet
	if quiet == 0 {
		quiet = DefaultOutageQuiet
	}
	if time.Since(time.Unix(0, o.lastFailure.Load())) < quiet {
		return false
	}
	return o.failing.CompareAndSwap(true, false)
}
