package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
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
	note  string // an attribute whose value the bar shows after its description, when set passes one
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
	shown := ""
	return func(n int64, attrs ...any) {
			if note := attrValue(attrs, spec.note); note != shown {
				shown = note
				bar.Describe(strings.TrimSuffix(spec.bar+" ("+note+")", " ()"))
			}
			_ = bar.Set64(min(n, total))
		},
		func() { _ = bar.Finish(); fmt.Fprintln(stdout) }
}

// attrValue returns the value of key in attrs, alternating keys and values, as text; "" if absent.
func attrValue(attrs []any, key string) string {
	for i := 0; key != "" && i+1 < len(attrs); i += 2 {
		if attrs[i] == key {
			return fmt.Sprint(attrs[i+1])
		}
	}
	return ""
}
