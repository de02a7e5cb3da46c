package rt

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestApplyNothingRequested(t *testing.T) {
	s := Apply(Options{Core: -1})
	defer s.Close()
	if len(s.Results) != 4 || len(s.Refused()) != 0 {
		t.Fatalf("results %+v", s.Results)
	}
	for _, r := range s.Results {
		if r.Requested || r.Applied() {
			t.Errorf("%s requested/applied without being asked", r.Setting)
		}
	}
}

func TestApplyBadPriorityIsRefusedNotFatal(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := Apply(Options{Priority: 120, Core: -1})
	defer s.Close()
	if r := s.Refused(); len(r) != 1 || r[0].Setting != SettingSchedFIFO {
		t.Errorf("refused %+v", r)
	}
}

// TestApplyAsRoot sets every setting on a throwaway locked thread (the
// goroutine exits without unlocking, so the thread dies with it).
func TestApplyAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SCHED_FIFO and mlockall need root (or CAP_SYS_NICE, CAP_IPC_LOCK)")
	}
	type outcome struct {
		refused []Result
		policy  int
		cpus    int
		cpu0    bool
	}
	done := make(chan outcome)
	go func() {
		runtime.LockOSThread()
		s := Apply(Options{Priority: 10, Core: 0, LockMemory: false, DMALatency: true})
		defer s.Close()
		var o outcome
		o.refused = s.Refused()
		attr, err := unix.SchedGetAttr(0, 0)
		if err == nil {
			o.policy = int(attr.Policy)
		}
		var set unix.CPUSet
		if unix.SchedGetaffinity(0, &set) == nil {
			o.cpus, o.cpu0 = set.Count(), set.IsSet(0)
		}
		done <- o
	}()
	o := <-done
	if len(o.refused) != 0 {
		t.Errorf("refused as root: %+v", o.refused)
	}
	if o.policy != unix.SCHED_FIFO || o.cpus != 1 || !o.cpu0 {
		t.Errorf("thread policy %d, %d CPUs (CPU 0: %v)", o.policy, o.cpus, o.cpu0)
	}
}

func TestSleepUntilSpinReachesDeadline(t *testing.T) {
	for _, spin := range []int64{0, 20_000, 200_000} {
		deadline := Now() + 500_000
		SleepUntilSpin(deadline, spin)
		if now := Now(); now < deadline {
			t.Errorf("spin %d: woke %d ns early", spin, deadline-now)
		}
	}
}
