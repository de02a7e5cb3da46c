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

	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/shm"
)

// TestCycleProcessOnEveryLink runs the real cycle process over a veth pair
// to a simulated segment on each kind of link (bus.link), pipelined and
// waiting: it must come up to OP on the kind asked for (the log names it:
// a silent fallback would test the wrong link), run every cycle, allocate
// nothing in cyclic operation, and, pipelined, ride out the master's
// interface going down and up: the cycles while it is down lose their
// frames (counted, as on the raw link), and the segment is back to good
// frames with the full working counter before the run ends.
func TestCycleProcessOnEveryLink(t *testing.T) {
	for _, kind := range []link.Kind{link.KindRaw, link.KindMmap, link.KindXDP} {
		for _, exchange := range []string{process.ExchangePipelined, process.ExchangeWait} {
			t.Run(string(kind)+"/"+exchange, func(t *testing.T) {
				runCycleOnLink(t, kind, exchange, exchange == process.ExchangePipelined)
			})
		}
	}
}

func runCycleOnLink(t *testing.T, kind link.Kind, exchange string, downUp bool) {
	const cycles = 3000
	const period = time.Millisecond
	w := newWire(t, "lk")
	startSim(t, w, strings.Join(referenceSet, ","))
	path := filepath.Join("/dev/shm", "ecagent-link-"+strconv.Itoa(os.Getpid())+".shm")
	l := shm.DefaultLayout()
	l.SampleSlots = 1 << 13 // every cycle's sample fits
	l.Period = period
	seg, err := shm.Create(path, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = seg.Close()
		_ = os.Remove(path)
		_ = os.Remove(process.BusInfoPath(path))
	})
	cfg := process.Default()
	cfg.Bus.Interface, cfg.Bus.ExpectedSlaves, cfg.Bus.Link = w.MasterEnd, 7, string(kind)
	cfg.Cycle.Period, cfg.Cycle.SHM, cfg.Cycle.Exchange = process.Duration(period), path, exchange
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "cycle.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cycleBinary(t), "--config", cfgPath, "--cycles", strconv.Itoa(cycles))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var upAt uint64 // the cycle at which the interface was up again
	if downUp {
		// Down for about 50 cycles once a third of the run has passed.
		samples := seg.Samples()
		deadline := time.Now().Add(60 * time.Second)
		for samples.Pushed() < cycles/3 {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("no %d cycles within 60 s:\n%s", cycles/3, stderr.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		run(t, "ip", "link", "set", w.MasterEnd, "down")
		time.Sleep(50 * period)
		run(t, "ip", "link", "set", w.MasterEnd, "up")
		upAt = samples.Pushed()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ecagent-cycle: %v\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("ecagent-cycle still running after 2 min:\n%s", stderr.String())
	}
	log := stderr.String()
	if !regexp.MustCompile(`msg="link to the segment".* link=` + string(kind) + `\b`).MatchString(log) {
		t.Fatalf("the cycle did not run on the %s link:\n%s", kind, log)
	}
	m := regexp.MustCompile(`cycles=(\d+) mallocs_in_cycle=(\d+) gc_in_cycle=(\d+) recovery_episodes=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no report line in:\n%s", log)
	}
	if m[1] != strconv.Itoa(cycles) || m[3] != "0" || (m[4] == "0" && m[2] != "0") {
		t.Errorf("ran %s cycles with %s mallocs and %s GCs (%s recovery episodes); want %d, 0 (unless recovery ran), 0\n%s",
			m[1], m[2], m[3], m[4], cycles, log)
	}
	// Back after the outage: a run of good cycles (a loaded host loses
	// a frame now and then on any link, so not every one).
	const goodRun = 100
	var s shm.Sample
	lost, n, good, longest := 0, 0, 0, 0 // lost: cycles with a lost frame or a short working counter
	for seg.Samples().Next(&s) {
		n++
		bad := s.Flags&shm.SampleLostFrame != 0 || s.WKC != s.ExpectedWKC
		if bad {
			lost++
		}
		if uint64(n) > upAt {
			if good = good + 1; bad {
				good = 0
			}
			longest = max(longest, good)
		}
	}
	t.Logf("%s/%s: %d samples, %d with a lost frame, %s mallocs, %s recovery episodes", kind, exchange, n, lost, m[2], m[4])
	if n != cycles {
		t.Errorf("%d samples, want %d", n, cycles)
	}
	if downUp && lost < 10 {
		t.Errorf("%d cycles lost their frame while the interface was down for 50 cycles; want them counted", lost)
	}
	if longest < goodRun {
		t.Errorf("no %d good cycles in a row after the interface was up again (longest %d): the link did not come back", goodRun, longest)
	}
}
