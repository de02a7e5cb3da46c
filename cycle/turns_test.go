package cycle

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// TestTurnsNeverOverlapTheExchange runs an engine-like loop (open a turn,
// sleep to the deadline, close it, "exchange") against a worker doing
// transactions through Acquire/Release, and checks that no transaction is
// ever in flight during an exchange and that the worker makes progress.
func TestTurnsNeverOverlapTheExchange(t *testing.T) {
	g := NewTurns(100 * time.Microsecond)
	var inFlight, overlaps, done atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	g.Want(true)
	go func() {
		defer close(finished)
		for ctx.Err() == nil {
			if err := g.Acquire(ctx); err != nil {
				return
			}
			inFlight.Store(1)
			time.Sleep(20 * time.Microsecond) // one frame's round trip
			inFlight.Store(0)
			g.Release()
			done.Add(1)
		}
	}()
	// Turns until the worker has done 300 transactions: on a quiet host
	// about one per turn, on a loaded one it misses some (it must be
	// scheduled inside a turn); 5 000 turns is the bound for progress.
	const period = int64(time.Millisecond)
	next := rt.Now() + period
	turns := 0
	for ; done.Load() < 300 && turns < 5000; turns++ {
		g.open(next - period/10)
		rt.SleepUntil(next)
		g.close()
		if inFlight.Load() != 0 {
			overlaps.Add(1)
		}
		next += period
	}
	cancel()
	g.Want(false)
	// The worker may be waiting for a turn that no longer comes.
	select {
	case <-finished:
	case <-time.After(time.Second):
		t.Fatal("the worker did not stop")
	}
	if overlaps.Load() != 0 {
		t.Fatalf("%d exchanges found a transaction in flight", overlaps.Load())
	}
	if done.Load() < 300 {
		t.Fatalf("only %d transactions in %d turns", done.Load(), turns)
	}
	t.Logf("300 transactions took %d turns", turns)
}

func TestTurnsStayClosedUnlessWanted(t *testing.T) {
	g := NewTurns(time.Microsecond)
	g.open(rt.Now() + int64(time.Second))
	if g.opened {
		t.Fatal("a turn opened with nobody wanting it")
	}
	g.close() // must not block
	var nilTurns *Turns
	nilTurns.open(0)
	nilTurns.close()
}

func TestBusAlarmAfterConsecutiveBadCycles(t *testing.T) {
	mem, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	e := &Engine{seg: mem, cfg: Config{AlarmCycles: 3}}
	good := master.CycleResult{WKC: 8, ExpectedWKC: 8}
	lost := master.CycleResult{WKC: 0, ExpectedWKC: 8, Lost: 1, Err: master.ErrFrameLost}
	wkc := master.CycleResult{WKC: 7, ExpectedWKC: 8, Err: master.ErrWKCMismatch}
	// Two bad, one good, three bad (alarm), two good, three good (cleared).
	for _, r := range []master.CycleResult{lost, wkc, good, lost, wkc, lost, good, good, good} {
		e.watchAlarm(&r)
		e.cycle++
	}
	var kinds []shm.EventKind
	var cycles []uint64
	var ev shm.Event
	for mem.Events().Next(&ev) {
		kinds = append(kinds, ev.Kind)
		cycles = append(cycles, ev.Cycle)
	}
	if len(kinds) != 2 || kinds[0] != shm.EventBusAlarm || kinds[1] != shm.EventBusAlarmCleared || cycles[0] != 5 || cycles[1] != 8 {
		t.Fatalf("events %v at cycles %v; want bus-alarm at 5, bus-alarm-cleared at 8", kinds, cycles)
	}
}

func TestLinkDownAndUpAreReportedOnce(t *testing.T) {
	mem, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	e := &Engine{seg: mem}
	linkErr := master.CycleResult{Lost: 1, Err: context.DeadlineExceeded} // any error that is not loss or WKC
	lost := master.CycleResult{Lost: 1, Err: master.ErrFrameLost}
	for _, r := range []master.CycleResult{{}, linkErr, linkErr, lost, {}, {}} {
		e.watchLink(&r)
	}
	var kinds []shm.EventKind
	var ev shm.Event
	for mem.Events().Next(&ev) {
		kinds = append(kinds, ev.Kind)
	}
	if len(kinds) != 2 || kinds[0] != shm.EventLinkDown || kinds[1] != shm.EventLinkUp {
		t.Fatalf("events %v; want link-down, link-up", kinds)
	}
}
