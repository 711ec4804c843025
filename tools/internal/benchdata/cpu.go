package benchdata

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// userHZ is the unit of /proc's processor times: USER_HZ, 100 on every architecture Linux runs
// Go on (sysconf(_SC_CLK_TCK) is not reachable without cgo).
const userHZ = 100

// CPUPart is a process whose processor time a measurement accounts for.
type CPUPart struct {
	Name string
	PID  int
	Tree bool // with its live children and the ones it reaped: PostgreSQL's backends and autovacuum
}

// CPUSnapshot is the processor time each part has used so far, and the whole machine's.
type CPUSnapshot struct {
	at    time.Time
	parts []CPUPart
	used  map[string]time.Duration
	busy  time.Duration // the machine's non-idle time, over all cores
}

// CPUUse is the processor time used between two snapshots, in cores: processor seconds per second.
type CPUUse struct {
	Seconds float64
	Parts   []string
	Cores   map[string]float64 // by part, then CPURest and CPUIdle
}

// Microseconds is the processor time part used per unit of work done meanwhile (n units).
func (u CPUUse) Microseconds(part string, n int64) float64 {
	return u.Cores[part] * u.Seconds / float64(n) * 1e6
}

// What the machine did besides the parts measured.
const (
	CPURest = "the rest of the machine"
	CPUIdle = "idle"
)

// PostgresPart is the PostgreSQL server conn is connected to, with every process it runs: its
// backends, autovacuum, the checkpointer and the WAL writer. The server must run on this machine.
func PostgresPart(ctx context.Context, conn *pgx.Conn, name string) (CPUPart, error) {
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return CPUPart{}, err
	}
	st, err := readProcStat(backend)
	if err != nil {
		return CPUPart{}, err
	}
	return CPUPart{Name: name, PID: st.ppid, Tree: true}, nil
}

// TakeCPU reads the processor time of parts and of the machine. A process that has gone counts
// as nothing.
func TakeCPU(parts []CPUPart) CPUSnapshot {
	s := CPUSnapshot{at: time.Now(), parts: parts, used: map[string]time.Duration{}, busy: machineBusy()}
	var all map[int][]int // children by parent, read once, only if a tree needs it
	for _, p := range parts {
		st, err := readProcStat(p.PID)
		if err != nil {
			continue
		}
		s.used[p.Name] += st.own
		if !p.Tree {
			continue
		}
		s.used[p.Name] += st.reaped
		if all == nil {
			all = childrenByParent()
		}
		for _, child := range all[p.PID] {
			if cs, err := readProcStat(child); err == nil {
				s.used[p.Name] += cs.own + cs.reaped
			}
		}
	}
	return s
}

// Since is what was used from start to s.
func (s CPUSnapshot) Since(start CPUSnapshot) CPUUse {
	u := CPUUse{Seconds: s.at.Sub(start.at).Seconds(), Cores: map[string]float64{}}
	var parts time.Duration
	for _, p := range s.parts {
		if _, seen := u.Cores[p.Name]; seen {
			continue
		}
		d := s.used[p.Name] - start.used[p.Name]
		parts += d
		u.Parts = append(u.Parts, p.Name)
		u.Cores[p.Name] = d.Seconds() / u.Seconds
	}
	busy := s.busy - start.busy
	u.Cores[CPURest] = max(0, (busy-parts).Seconds()/u.Seconds)
	u.Cores[CPUIdle] = max(0, float64(runtime.NumCPU())-busy.Seconds()/u.Seconds)
	u.Parts = append(u.Parts, CPURest, CPUIdle)
	return u
}

// procStat is what /proc/PID/stat says of a process's processor time and parent.
type procStat struct {
	ppid        int
	own, reaped time.Duration // its own user and system time; its reaped children's
}

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name, in parentheses, may hold spaces: the fields start after its last ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	tick := time.Second / userHZ
	ppid, _ := strconv.Atoi(f[1])
	return procStat{ppid: ppid, own: time.Duration(n(11)+n(12)) * tick, reaped: time.Duration(n(13)+n(14)) * tick}, nil
}

// processes lists the pids of every process running.
func processes() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// childrenByParent lists every process's children.
func childrenByParent() map[int][]int {
	m := map[int][]int{}
	for _, pid := range processes() {
		if st, err := readProcStat(pid); err == nil {
			m[st.ppid] = append(m[st.ppid], pid)
		}
	}
	return m
}

// FindProcess returns the process one of whose arguments is arg, or 0.
func FindProcess(arg string) int {
	for _, pid := range processes() {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		for a := range strings.SplitSeq(string(cmdline), "\x00") {
			if filepath.Clean(a) == arg {
				return pid
			}
		}
	}
	return 0
}

// machineBusy is the machine's processor time so far, idle and I/O wait left out, over all cores.
func machineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 && i < 8 { // not idle, not iowait; guest times are in user already
			busy += n
		}
	}
	return time.Duration(busy) * (time.Second / userHZ)
}
