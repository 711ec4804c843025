package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// notifyStop turns SIGINT and SIGTERM into serve's shutdown. The first cancels the returned context:
// the process drains. The second closes hurry: what is left of the drain delay is skipped, requests in
// flight still finish. After that the signals have Go's default effect, so a third ends the process.
func notifyStop(ctx context.Context) (_ context.Context, hurry <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	h, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer signal.Stop(sigs)
		for _, step := range []func(){cancel, func() { close(h) }} {
			select {
			case <-sigs:
				step()
			case <-done:
				return
			}
		}
	}()
	return ctx, h, func() { close(done); cancel() }
}

// listening is one HTTP server on its listener.
type listening struct {
	srv  *http.Server
	errc chan error // Serve's result
}

func listen(ctx context.Context, addr, what string, c limitsConfig, h http.Handler, logger *slog.Logger) (*listening, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	logger.Info(what, "addr", ln.Addr().String())
	l := &listening{srv: newHTTPServer(ctx, c, h, logger), errc: make(chan error, 1)}
	go func() { l.errc <- l.srv.Serve(ln) }()
	return l, nil
}

// serveHTTP serves the API, and the metrics on their own address if one is set, until ctx ends. Then
// it drains: /readyz already answers 503 (ctx is the API's Draining) and every answer asks its
// client to close the connection, so a load balancer takes the process out and its keep-alive
// connections go elsewhere; after the drain delay (or a second signal) the listeners close, and
// requests in flight finish within the shutdown timeout.
func serveHTTP(ctx context.Context, cfg serveConfig, handler, metrics http.Handler, hurry <-chan struct{}, logger *slog.Logger) error {
	public, err := listen(ctx, cfg.addr, "serving", cfg.limits, closeWhenDraining(ctx.Done(), handler), logger)
	if err != nil {
		return err
	}
	servers := []*listening{public}
	if cfg.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics)
		m, err := listen(ctx, cfg.metricsAddr, "serving metrics", cfg.limits, mux, logger)
		if err != nil {
			_ = public.srv.Close()
			return err
		}
		servers = append(servers, m)
	}
	select {
	case err := <-public.errc:
		for _, l := range servers[1:] {
			_ = l.srv.Close()
		}
		return err
	case <-ctx.Done():
	}
	logger.Info("draining: /readyz answers 503", "drain_delay", cfg.drainDelay.String())
	select {
	case <-time.After(cfg.drainDelay):
	case <-hurry:
	}
	return shutdown(servers, time.Duration(cfg.shutdownTimeout), logger)
}

// shutdown closes the servers' listeners and waits for their requests in flight, the public one first.
func shutdown(servers []*listening, timeout time.Duration, logger *slog.Logger) error {
	logger.Info("shutting down", "timeout", timeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	for _, l := range servers {
		if err := l.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		} else if err := <-l.errc; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closeWhenDraining asks each client to close its connection after the answer once draining has
// begun: clients and balancers that keep connections open then open new ones, elsewhere.
func closeWhenDraining(draining <-chan struct{}, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-draining:
			w.Header().Set("Connection", "close")
		default:
		}
		h.ServeHTTP(w, r)
	})
}
