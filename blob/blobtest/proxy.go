package blobtest

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of a real server, which a test can cut (connections
// refused and dropped: the server is down) or stall (bytes held: the server hangs), then restore.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	mode   proxyMode
	conns  map[net.Conn]bool
	resume chan struct{} // closed when a stall ends
	delay  time.Duration // how long each chunk is held, in either direction
	wg     sync.WaitGroup
}

type proxyMode int

const (
	proxyPass proxyMode = iota
	proxyCut
	proxyStall
)

// NewProxy starts a proxy to target (host:port), closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}, resume: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	return p
}

// Addr is where clients connect.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut drops every connection and refuses new ones, as a stopped server would. Bytes a stall held
// are dropped with their connections.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setMode(proxyCut)
	for c := range p.conns {
		c.Close()
	}
}

// Stall holds every byte in both directions until Restore, as a hung server would.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setMode(proxyStall)
}

// Delay holds every chunk of bytes d before it goes on, in both directions, as a server (or a
// network) that far away would: each request and each answer is at least d late.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Restore lets traffic through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setMode(proxyPass)
}

// setMode switches modes; leaving a stall wakes the copies it held. The caller holds p.mu.
func (p *Proxy) setMode(m proxyMode) {
	if p.mode == m {
		return
	}
	if p.mode == proxyStall {
		close(p.resume)
	}
	if m == proxyStall {
		p.resume = make(chan struct{})
	}
	p.mode = m
}

// Close stops the proxy and drops its connections.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.mode == proxyCut
		if !cut {
			p.conns[c] = true
		}
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.forget(c)
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	defer p.forget(up)
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(up, c); up.Close() })
	p.pipe(c, up)
	c.Close()
	wg.Wait()
}

// pipe copies src to dst, holding each chunk while the proxy is stalled.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode, resume, delay := p.mode, p.resume, p.delay
			p.mu.Unlock()
			time.Sleep(delay)
			if mode == proxyStall {
				<-resume
				p.mu.Lock()
				mode = p.mode
				p.mu.Unlock()
			}
			if mode == proxyCut {
				return // held bytes die with a cut connection
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: the other direction ends too
		}
	}
}

func (p *Proxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}
