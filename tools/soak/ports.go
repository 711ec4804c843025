package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The soak's ports lie above Linux's ephemeral range (32768-60999) and below the project's own
// services (63790 and up, scripts/services.sh). A killed process is started again on the same
// port; a port the kernel once assigned could meanwhile have gone to one of the machine's outgoing
// connections ("bind: address already in use"), one out of this range never can.
const portLow, portHigh = 61000, 63700

// portPicker hands out free loopback ports in [portLow, portHigh), each once per soak.
type portPicker struct {
	mu    sync.Mutex
	next  int
	given map[int]bool
}

// newPortPicker starts at a random port, so that two soaks on one machine rarely try the same ones.
func newPortPicker() *portPicker {
	return &portPicker{next: portLow + rand.N(portHigh-portLow), given: map[int]bool{}}
}

// pick returns a port nothing listens on now and that this soak has not handed out before.
func (p *portPicker) pick() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range portHigh - portLow {
		port := p.next
		if p.next++; p.next == portHigh {
			p.next = portLow
		}
		if p.given[port] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		p.given[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port between %d and %d", portLow, portHigh)
}
