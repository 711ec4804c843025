package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// startTimeout bounds one start: a process not ready by then is killed and counts as failed.
const startTimeout = 30 * time.Second

// proc is one child process the soak starts, kills and starts again, on the same port and data
// folder every time. The output of all its lives goes to one log file.
type proc struct {
	name  string
	path  string
	args  []string
	env   []string
	log   string
	ready func(context.Context) error // nil once the process serves

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the current life ends
	lives  int
}

// start starts the process and waits until it is ready. A process that exits before it is ready
// (serve cannot open its bucket while S3 is down) is started again after a pause, until ctx ends
// or, if tries is positive, after that many starts. It returns how many starts failed.
func (p *proc) start(ctx context.Context, tries int) (failed int, err error) {
	for {
		err := p.startOnce(ctx)
		if err == nil || ctx.Err() != nil {
			return failed, err
		}
		if failed++; failed == tries {
			return failed, err
		}
		select {
		case <-ctx.Done():
			return failed, fmt.Errorf("%s: %w (last start: %v)", p.name, ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (p *proc) startOnce(ctx context.Context) error {
	p.mu.Lock()
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if p.lives == 0 {
		flags |= os.O_TRUNC // a new soak starts a new log
	}
	p.lives++
	life := p.lives
	p.mu.Unlock()
	f, err := os.OpenFile(p.log, flags, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "--- soak: %s, life %d, started %s\n", p.name, life, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.path, p.args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, f, f
	// Its own process group, so a Ctrl+C reaches the soak alone, which then kills it; and killed with
	// the soak, should the soak itself be killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	return p.waitReady(ctx, exited)
}

// waitReady polls the readiness check until it passes, the process exits, or startTimeout.
func (p *proc) waitReady(ctx context.Context, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		err := p.ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited at start-up: %s", p.name, p.logTail())
		case <-ctx.Done():
			p.stop(syscall.SIGKILL)
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop(syscall.SIGKILL)
			return fmt.Errorf("%s not ready within %s: %v: %s", p.name, startTimeout, err, p.logTail())
		}
	}
}

// stop sends sig and waits until the process has exited, SIGKILLing it if it takes more than 10s. It
// reports whether the process was running.
func (p *proc) stop(sig syscall.Signal) bool {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return false
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return true
}

// logTail is the end of the process's log, for an error.
func (p *proc) logTail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s (log: %s)", lastLines(string(b), 3), p.log)
}

// running reports whether the process's current life goes on.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !isClosed(p.exited)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// httpReady is a readiness check: GET url answers 200.
func httpReady(url string) func(context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// redisCommand sends one inline command to the Redis at addr and returns its one-line answer.
func redisCommand(ctx context.Context, addr, command string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(command + "\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

// redisReady is Redis's readiness check: PING answers PONG.
func redisReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		got, err := redisCommand(ctx, addr, "PING")
		if err == nil && got != "+PONG" {
			err = errors.New("PING answered " + got)
		}
		return err
	}
}
