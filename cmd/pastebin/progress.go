package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressSpec says how a long command shows how far it is.
type progressSpec struct {
	total int64
	bar   string // the bar's description, on a terminal
	unit  string // what the bar counts, per second
	event string // the log message, elsewhere
	key   string // the count's name in the log message
}

// newProgress shows a command's progress: a bar on a terminal, a log line every few seconds
// otherwise. set takes the count so far and, for the log line, more attributes.
func newProgress(stdout io.Writer, spec progressSpec, logger *slog.Logger) (set func(n int64, attrs ...any), done func()) {
	if !isTerminal(stdout) {
		last := time.Now()
		return func(n int64, attrs ...any) {
			if time.Since(last) >= 5*time.Second {
				last = time.Now()
				logger.Info(spec.event, append([]any{spec.key, n, "of", spec.total}, attrs...)...)
			}
		}, func() {}
	}
	total := max(spec.total, 1)
	bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(stdout),
		progressbar.OptionSetDescription(spec.bar), progressbar.OptionShowCount(),
		progressbar.OptionShowIts(), progressbar.OptionSetItsString(spec.unit), progressbar.OptionThrottle(200*time.Millisecond))
	return func(n int64, _ ...any) { _ = bar.Set64(min(n, total)) },
		func() { _ = bar.Finish(); fmt.Fprintln(stdout) }
}
