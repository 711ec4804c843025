package blob

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	bolt "go.etcd.io/bbolt"
)

// Embedded is an S3 server running inside this process on 127.0.0.1, persisting to one bolt file
// with its puts committed in groups (boltStore). It is the default when no S3 endpoint is
// configured, so `make run` needs no S3 set up at all. It checks no credentials: it never listens
// beyond loopback.
type Embedded struct {
	Endpoint string
	db       *bolt.DB
	store    *boltStore
	srv      *http.Server
	unused   *unusedConns
	dir      string
	done     chan error
	once     sync.Once
	closeErr error
}

// ErrEmbeddedBusy says another process holds the embedded S3 server's store.
var ErrEmbeddedBusy = errors.New("embedded S3 store in use by another process")

// endpointFile, beside the store, names the address of the server that holds it, so that other
// processes on the machine (pastebin cleanup, fsck) can use that server instead.
const endpointFile = "endpoint"

// StartEmbedded starts the embedded S3 server with its data in dir.
func StartEmbedded(dir string) (*Embedded, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded s3: %w", err)
	}
	db, err := openStore(filepath.Join(dir, "s3.bolt"), compactMinBytes)
	if err != nil && !errors.Is(err, ErrEmbeddedBusy) {
		err = fmt.Errorf("embedded s3 store %s: %w", dir, err)
	}
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded s3: %w", err)
	}
	store := newBoltStore(db)
	faker := gofakes3.New(store, gofakes3.WithLogger(gofakes3.DiscardLog()))
	unused := &unusedConns{conns: map[net.Conn]bool{}}
	e := &Embedded{
		Endpoint: "http://" + ln.Addr().String(),
		db:       db,
		store:    store,
		srv:      &http.Server{Handler: faker.Server(), ReadHeaderTimeout: 10 * time.Second, ConnState: unused.track},
		unused:   unused,
		done:     make(chan error, 1),
	}
	go func() { e.done <- e.srv.Serve(ln) }()
	if err := os.WriteFile(filepath.Join(dir, endpointFile), []byte(e.Endpoint), 0o600); err != nil {
		e.Close()
		return nil, fmt.Errorf("embedded s3: %w", err)
	}
	e.dir = dir
	return e, nil
}

// RunningEmbedded returns the endpoint of the embedded S3 server another process runs on dir.
func RunningEmbedded(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, endpointFile))
	if err != nil {
		return "", fmt.Errorf("embedded s3: no running server recorded in %s: %w", dir, err)
	}
	return string(b), nil
}

// Close stops the server and closes its store. Calling it again does nothing more.
func (e *Embedded) Close() error {
	e.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.unused.closeAll()
		err := e.srv.Shutdown(ctx)
		if serveErr := <-e.done; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
		if e.dir != "" {
			os.Remove(filepath.Join(e.dir, endpointFile))
		}
		e.store.stop() // after the server: the puts it was serving are answered
		e.closeErr = errors.Join(err, e.db.Close())
	})
	return e.closeErr
}

// unusedConns are the server's connections that have not carried a request yet. A client dials
// ahead of its need and keeps what it did not use in its pool of idle connections (Bucket keeps up
// to maxIdleConns), and http.Server.Shutdown waits 5 s for the first request on such a connection:
// Close closes them first, and any accepted after.
type unusedConns struct {
	mu       sync.Mutex
	conns    map[net.Conn]bool
	stopping bool
}

func (u *unusedConns) track(c net.Conn, state http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case state == http.StateNew && u.stopping:
		c.Close()
	case state == http.StateNew:
		u.conns[c] = true
	default:
		delete(u.conns, c)
	}
}

func (u *unusedConns) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stopping = true
	for c := range u.conns {
		c.Close()
	}
	clear(u.conns)
}
