package process

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/cycle/rt"
)

// TestRecoveryStepsEndNoThread: a recovery step runs on a thread it locks
// and sets up as the worker's; when the step ends, its thread is given
// back to the runtime as it was, not ended. Each thread that ended with
// its step was one fewer idle thread: once the steps of an episode or two
// had used up those the cycle process made beforehand (rt.WarmThreads),
// the cycle thread, which hands its P to an idle thread whenever it
// yields or is preempted, had the runtime make a new one: 7 allocations
// on the cycle thread after a recovery (TestFaultStorm). As root the steps
// run at SCHED_FIFO, as in a cycle process with a real-time priority, and
// no thread may be left at it.
func TestRecoveryStepsEndNoThread(t *testing.T) {
	for _, prio := range []int{0, 10} {
		t.Run("priority "+strconv.Itoa(prio), func(t *testing.T) {
			if prio > 0 && os.Geteuid() != 0 {
				t.Skip("SCHED_FIFO needs root (or CAP_SYS_NICE)")
			}
			recoveryStepsEndNoThread(t, prio)
		})
	}
}

func recoveryStepsEndNoThread(t *testing.T, prio int) {
	r := newRecovererOf(newFakeBus(1), &fakeCycle{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	r.rt = rt.Options{Priority: prio, Core: -1}
	rt.WarmThreads(runtime.GOMAXPROCS(0) + 4)
	before := liveThreads(t)
	const steps = 32
	ctx := context.Background()
	fifo := 0
	for range steps {
		st := &slaveRecovery{}
		var policy int
		r.start(ctx, st, func() {
			if attr, err := unix.SchedGetAttr(0, 0); err == nil {
				policy = int(attr.Policy)
			}
		})
		r.steps.Wait()
		if policy == unix.SCHED_FIFO {
			fifo++
		}
	}
	if prio > 0 && fifo != steps {
		t.Fatalf("%d of %d steps ran at SCHED_FIFO, want all", fifo, steps)
	}
	after := liveThreads(t)
	ended := 0
	for tid := range before {
		if !after[tid] {
			ended++
		}
	}
	if ended > 0 {
		t.Errorf("%d recovery steps ended %d of the process's %d threads", steps, ended, len(before))
	}
	// The cycle's yield: a locked goroutine hands its P to an idle thread.
	yields := make(chan uint64)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range 100 {
			runtime.Gosched()
		}
		runtime.ReadMemStats(&m1)
		yields <- m1.Mallocs - m0.Mallocs
	}()
	if n := <-yields; n != 0 {
		t.Errorf("100 yields of a locked goroutine after the steps allocated %d times", n)
	}
	for tid := range after {
		if attr, err := unix.SchedGetAttr(tid, 0); err == nil && attr.Policy == unix.SCHED_FIFO {
			t.Errorf("thread %d is left at SCHED_FIFO priority %d after the steps", tid, attr.Priority)
		}
	}
}

// liveThreads returns the thread ids of the process.
func liveThreads(t *testing.T) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	ids := make(map[int]bool, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			ids[tid] = true
		}
	}
	return ids
}
