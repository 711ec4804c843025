package benchdata

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestReadProcStat(t *testing.T) {
	st, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != os.Getppid() {
		t.Errorf("ppid %d, want %d", st.ppid, os.Getppid())
	}
	if _, err := readProcStat(-1); err == nil {
		t.Error("a process that does not exist was read")
	}
	if pid := FindProcess(filepath.Clean(os.Args[0])); pid != os.Getpid() {
		t.Errorf("the process run as %s is %d, want this one, %d", os.Args[0], pid, os.Getpid())
	}
	if machineBusy() <= 0 {
		t.Error("the machine has been busy for no time at all")
	}
}

func TestTakeCPUCountsTheChildrenOfATree(t *testing.T) {
	parent := os.Getppid() // the go command, or whatever ran the test binary: this process is its child
	// Processor times only grow: read the parts first, the tree after.
	own, err := readProcStat(parent)
	if err != nil {
		t.Fatal(err)
	}
	self := TakeCPU([]CPUPart{{Name: "self", PID: os.Getpid()}})
	tree := TakeCPU([]CPUPart{{Name: "tree", PID: parent, Tree: true}})
	if tree.used["tree"] < own.own+self.used["self"] {
		t.Errorf("the tree used %s, less than its root (%s) and this child (%s)", tree.used["tree"], own.own, self.used["self"])
	}
	gone := TakeCPU([]CPUPart{{Name: "gone", PID: -1}})
	if gone.used["gone"] != 0 {
		t.Errorf("a process that does not exist used %s", gone.used["gone"])
	}
}

func TestCPUSinceSharesTheMachine(t *testing.T) {
	parts := []CPUPart{{Name: "PostgreSQL"}, {Name: "replicas", PID: 1}, {Name: "replicas", PID: 2}}
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	start := CPUSnapshot{at: at, parts: parts, busy: 100 * time.Second,
		used: map[string]time.Duration{"PostgreSQL": 40 * time.Second, "replicas": 5 * time.Second}}
	end := CPUSnapshot{at: at.Add(10 * time.Second), parts: parts, busy: 100*time.Second + 15*time.Second,
		used: map[string]time.Duration{"PostgreSQL": 50 * time.Second, "replicas": 8 * time.Second}}
	u := end.Since(start)
	want := map[string]float64{"PostgreSQL": 1.0, "replicas": 0.3, CPURest: 0.2, CPUIdle: float64(runtime.NumCPU()) - 1.5}
	if len(u.Parts) != len(want) {
		t.Fatalf("parts %v, want each once: %v", u.Parts, want)
	}
	for name, cores := range want {
		if got := u.Cores[name]; math.Abs(got-max(0, cores)) > 1e-9 {
			t.Errorf("%s: %.3f cores, want %.3f", name, got, cores)
		}
	}
}
