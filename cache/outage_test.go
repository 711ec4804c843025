package cache

import (
	"testing"
	"time"
)

func TestOutage(t *testing.T) {
	o := &Outage{Quiet: time.Hour}
	if o.Succeeded() {
		t.Error("a success with no outage ended one")
	}
	if !o.Failed() || o.Failed() {
		t.Error("want the first failure alone to start the outage")
	}
	if o.Succeeded() {
		t.Error("a success right after a failure ended the outage: with one master of a cluster down, it would flap")
	}
	o.Quiet = time.Nanosecond // as if the quiet period had passed
	if !o.Succeeded() || o.Succeeded() {
		t.Error("want the first success after the quiet period alone to end the outage")
	}
	if !o.Failed() {
		t.Error("a failure after the outage ended did not start another")
	}
}
