package test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// TestCycleProcessAllocatesNothing runs the real cycle process for 50 000
// cycles against a simulated segment on a veth pair and checks, from the
// process's own MemStats, that cyclic operation made no heap allocation
// and no garbage collection, and that every cycle left a sample: the
// small ecagent-cycle, and ecagent's hidden cycle mode, which has every
// library of the agent (and their init) in its memory. The period,
// 200 µs, leaves room for the round trip over veth to a simulator process
// while the rest of the suite loads both cores (the cycle refuses a
// period shorter than the median round trip: 122 µs was seen).
func TestCycleProcessAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		name    string
		program func(*testing.T) []string
	}{
		{"ecagent-cycle", func(t *testing.T) []string { return []string{cycleBinary(t)} }},
		{"ecagent cycle", func(t *testing.T) []string { return []string{ecagentBinary(t), "cycle"} }},
	} {
		t.Run(c.name, func(t *testing.T) { cycleAllocatesNothing(t, c.program(t)) })
	}
}

// cycleAllocatesNothing is TestCycleProcessAllocatesNothing for the cycle
// process the command line program starts.
func cycleAllocatesNothing(t *testing.T, program []string) {
	const cycles = 50_000
	w := newWire(t, "cyc")
	startSim(t, w, strings.Join(referenceSet, ","))
	path := filepath.Join("/dev/shm", "ecagent-test-"+strconv.Itoa(os.Getpid())+".shm")
	l := shm.DefaultLayout()
	l.SampleSlots = 1 << 16 // all samples fit: nothing is dropped while nobody reads
	l.Period = 200 * time.Microsecond
	var seg *shm.Segment
	t.Cleanup(func() {
		if seg != nil {
			_ = seg.Close()
		}
		_ = os.Remove(path)
		_ = os.Remove(contract.BusInfoPath(path))
	})

	cfg := contract.Default()
	cfg.Bus.Interface, cfg.Bus.ExpectedSlaves = w.MasterEnd, 7
	cfg.Cycle.Period, cfg.Cycle.SHM = contract.Duration(200*time.Microsecond), path
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "cycle.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A run in which recovery had to act (frames lost on a loaded host
	// took a slave's working counter away) allocates in the recovery
	// worker, not in the cycle: the report counts those episodes, and such
	// a run is repeated, up to three times, for one the cycle has alone.
	for attempt := 1; ; attempt++ {
		if seg != nil { // a fresh segment: the ring holds one run's samples
			_ = seg.Close()
			_ = os.Remove(path)
		}
		var err error
		if seg, err = shm.Create(path, l); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(program[0], append(program[1:], "--config", cfgPath, "--cycles", strconv.Itoa(cycles))...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(program, " "), err, stderr.String())
		}
		m := regexp.MustCompile(`cycles=(\d+) mallocs_in_cycle=(\d+) gc_in_cycle=(\d+) recovery_episodes=(\d+)`).FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("no report line in:\n%s", stderr.String())
		}
		if m[4] != "0" && m[2] != "0" && attempt < 3 {
			t.Logf("run %d: %s mallocs with %s recovery episodes; again", attempt, m[2], m[4])
			continue
		}
		if m[1] != strconv.Itoa(cycles) || m[2] != "0" || m[3] != "0" {
			t.Errorf("ran %s cycles with %s mallocs and %s GCs (%s recovery episodes); want %d, 0, 0\n%s",
				m[1], m[2], m[3], m[4], cycles, stderr.String())
		}
		break
	}
	samples := seg.Samples()
	if got := samples.Pushed(); got != cycles || samples.Drops() != 0 {
		t.Errorf("%d samples pushed, %d dropped; want %d, 0", got, samples.Drops(), cycles)
	}
}
