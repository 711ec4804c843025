package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// stats counts what the load and the faults did.
type stats struct {
	creates, reads, burns, deletes, metas atomic.Int64

	created, createFailed, createUnknown atomic.Int64 // outcomes of creates
	unavailable                          atomic.Int64 // 503 answers: S3 down, as the service says
	noAnswer                             atomic.Int64 // every process tried gave no answer

	kills, killsInCleanup, redisStops, s3Stops atomic.Int64
	failedStarts                               atomic.Int64 // starts that exited before ready (serve while S3 is down)

	restarts            atomic.Int64 // serve processes stopped with SIGTERM (balanced)
	balancerFailed      atomic.Int64 // requests through the balancer that failed (balanced)
	balancerUnavailable atomic.Int64 // 503s from the balancer: no process ready (balanced)
	createsRetried      atomic.Int64 // creates answered after an attempt that may have been acted on
}

func (s *stats) ops() int64 {
	return s.creates.Load() + s.reads.Load() + s.burns.Load() + s.deletes.Load() + s.metas.Load()
}

// summary is the soak's result: what it did and what it found.
type summary struct {
	elapsed    time.Duration
	stats      *stats
	violations *violations
	final      finalCounts
	fsck       string // fsck's verdict, one line
	dir        string
	notes      []string // facts worth a line that are not violations
	balanced   bool     // the load went through the balancer
}

// finalCounts are the outcomes of reading back every paste at the end.
type finalCounts struct {
	live, gone, uncertain, unreadable int
}

func (s *summary) print(w io.Writer) {
	st := s.stats
	fmt.Fprintf(w, "soak: %s, %d ops (create %d, read %d, burn %d, delete %d, meta %d), kills %d, redis stops %d, s3 stops %d, violations %d\n",
		s.elapsed.Round(time.Second), st.ops(), st.creates.Load(), st.reads.Load(), st.burns.Load(), st.deletes.Load(),
		st.metas.Load(), st.kills.Load(), st.redisStops.Load(), st.s3Stops.Load(), s.violations.count())
	fmt.Fprintf(w, "  creates: %d created, %d failed (503 or no process up), %d unknown (answer lost)\n",
		st.created.Load(), st.createFailed.Load(), st.createUnknown.Load())
	fmt.Fprintf(w, "  answers: %d were 503 (S3 down), %d requests found no process answering\n",
		st.unavailable.Load(), st.noAnswer.Load())
	fmt.Fprintf(w, "  faults: %d serve kills (%d just after asking it for a cleanup run), %d graceful serve restarts (SIGTERM), %d redis stops, %d s3 stops, %d starts failed and were retried\n",
		st.kills.Load(), st.killsInCleanup.Load(), st.restarts.Load(), st.redisStops.Load(), st.s3Stops.Load(), st.failedStarts.Load())
	fmt.Fprintf(w, "  %d creates were answered after an attempt that may have been acted on (lost, or sent again); each has its Idempotency-Key, and no create was made twice unless a violation says so\n",
		st.createsRetried.Load())
	if s.balanced {
		fmt.Fprintf(w, "  through the balancer: %d requests failed (each in flight on a process killed with SIGKILL, or a violation says otherwise), %d answered 503 with no process ready\n",
			st.balancerFailed.Load(), st.balancerUnavailable.Load())
	}
	fmt.Fprintf(w, "  read back at the end: %d live and intact, %d gone as they should be, %d either (an answer was lost), %d unreadable\n",
		s.final.live, s.final.gone, s.final.uncertain, s.final.unreadable)
	if s.fsck != "" {
		fmt.Fprintf(w, "  fsck: %s\n", s.fsck)
	}
	for _, n := range s.notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
	s.violations.mu.Lock()
	defer s.violations.mu.Unlock()
	if s.violations.n == 0 {
		return
	}
	fmt.Fprintf(w, "violations (%d, the first %d):\n  %s\n", s.violations.n, len(s.violations.first),
		strings.Join(s.violations.first, "\n  "))
	fmt.Fprintf(w, "logs: %s\n", s.dir)
}

// logEvents reads the serve processes' logs for what the summary cannot see from outside: the
// recoveries the faults forced (claims the watchdog returned, orphans the sweeper found) and the
// ERROR lines by message. Those are not violations (a delete's cache invalidation fails while Redis
// is down, by design), but worth a look when something is wrong.
func logEvents(serves []*proc) string {
	errs := map[string]int{}
	var reset, orphans int
	for _, p := range serves {
		f, err := os.Open(p.log)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct {
				Level, Msg      string
				Pastes, Orphans int
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch {
			case line.Level == "ERROR":
				errs[line.Msg]++
			case line.Msg == "watchdog returned stuck pastes to the queue":
				reset += line.Pastes
			case line.Msg == "orphan sweep finished":
				orphans += line.Orphans
			}
		}
		f.Close()
	}
	return fmt.Sprintf("serve logs: the watchdog returned %d claimed pastes, the sweeper found %d orphan blobs; ERROR lines by message: %s",
		reset, orphans, tally(errs))
}

func tally(counts map[string]int) string {
	var msgs []string
	for m, n := range counts {
		msgs = append(msgs, fmt.Sprintf("%q %d", m, n))
	}
	sort.Strings(msgs)
	if len(msgs) == 0 {
		return "none"
	}
	return strings.Join(msgs, ", ")
}
