package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"pastebin/cache"
)

// userHZ is the unit of /proc's processor times: USER_HZ, 100 on every architecture Linux runs
// Go on (sysconf(_SC_CLK_TCK) is not reachable without cgo).
const userHZ = 100

// cpuPart is a process whose processor time a phase accounts for.
type cpuPart struct {
	name string
	pid  int
	tree bool // with its live children and the ones it reaped: PostgreSQL's backends and autovacuum
}

// cpuSnapshot is the processor time each part has used so far, and the whole machine's.
type cpuSnapshot struct {
	at    time.Time
	parts []cpuPart
	used  map[string]time.Duration
	busy  time.Duration // the machine's non-idle time, over all cores
}

// cpuUse is the processor time used between two snapshots, in cores: processor seconds per second.
type cpuUse struct {
	seconds float64
	parts   []string
	cores   map[string]float64 // by part, then "the rest of the machine" and "idle"
}

// The parts, in the order the report lists them.
const (
	cpuPostgres = "PostgreSQL"
	cpuReplicas = "replicas"
	cpuS3       = "S3 (versitygw)"
	cpuRedis    = "Redis"
	cpuBench    = "this benchmark (load, scrapes)"
	cpuRest     = "the rest of the machine"
	cpuIdle     = "idle"
)

var cpuOrder = []string{cpuPostgres, cpuReplicas, cpuS3, cpuRedis, cpuBench, cpuRest, cpuIdle}

// cpuParts lists the processes of a phase: PostgreSQL, the replicas rs, S3, Redis and this
// benchmark (the foreground load and the scrapes). A part that cannot be found is left out, and
// its time counts in the rest of the machine.
func (b *bench) cpuParts(ctx context.Context, rs []*replica) []cpuPart {
	var parts []cpuPart
	var backend int
	if err := b.dbs.Admin().QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err == nil {
		if st, err := readProcStat(backend); err == nil {
			parts = append(parts, cpuPart{name: cpuPostgres, pid: st.ppid, tree: true})
		}
	}
	for _, r := range rs {
		parts = append(parts, cpuPart{name: cpuReplicas, pid: r.cmd.Process.Pid})
	}
	if dir := b.cfg.services.S3DataDir; dir != "" {
		if pid := findProcess(filepath.Clean(dir)); pid != 0 {
			parts = append(parts, cpuPart{name: cpuS3, pid: pid})
		}
	}
	if pid := b.redisPID(ctx); pid != 0 {
		parts = append(parts, cpuPart{name: cpuRedis, pid: pid})
	}
	return append(parts, cpuPart{name: cpuBench, pid: os.Getpid()})
}

func (b *bench) redisPID(ctx context.Context) int {
	rdb, err := cache.NewClient(b.cfg.services.RedisURL, cache.ClientOptions{})
	if err != nil {
		return 0
	}
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ := strconv.Atoi(v)
			return pid
		}
	}
	return 0
}

// takeCPU reads the processor time of parts and of the machine. A process that has gone counts
// as nothing.
func takeCPU(parts []cpuPart) cpuSnapshot {
	s := cpuSnapshot{at: time.Now(), parts: parts, used: map[string]time.Duration{}, busy: machineBusy()}
	var all map[int][]int // children by parent, read once, only if a tree needs it
	for _, p := range parts {
		st, err := readProcStat(p.pid)
		if err != nil {
			continue
		}
		s.used[p.name] += st.own
		if !p.tree {
			continue
		}
		s.used[p.name] += st.reaped
		if all == nil {
			all = childrenByParent()
		}
		for _, child := range all[p.pid] {
			if cs, err := readProcStat(child); err == nil {
				s.used[p.name] += cs.own + cs.reaped
			}
		}
	}
	return s
}

// since is what was used from start to s.
func (s cpuSnapshot) since(start cpuSnapshot) cpuUse {
	u := cpuUse{seconds: s.at.Sub(start.at).Seconds(), cores: map[string]float64{}}
	var parts time.Duration
	for _, p := range s.parts {
		if _, seen := u.cores[p.name]; seen {
			continue
		}
		d := s.used[p.name] - start.used[p.name]
		parts += d
		u.parts = append(u.parts, p.name)
		u.cores[p.name] = d.Seconds() / u.seconds
	}
	busy := s.busy - start.busy
	u.cores[cpuRest] = max(0, (busy-parts).Seconds()/u.seconds)
	u.cores[cpuIdle] = max(0, float64(runtime.NumCPU())-busy.Seconds()/u.seconds)
	u.parts = append(u.parts, cpuRest, cpuIdle)
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

// findProcess returns the process one of whose arguments is arg, or 0.
func findProcess(arg string) int {
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
