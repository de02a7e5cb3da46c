package spsc

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestNewRingRefusesSizesThatAreNotPowersOfTwo(t *testing.T) {
	for _, n := range []int{-1, 0, 3, 6, 100} {
		if _, err := NewRing[int](n); err == nil {
			t.Errorf("NewRing(%d): no error", n)
		}
	}
	for _, n := range []int{1, 2, 64} {
		r, err := NewRing[int](n)
		if err != nil {
			t.Fatalf("NewRing(%d): %v", n, err)
		}
		for i := range n {
			if !r.Push(&i) {
				t.Errorf("NewRing(%d) refused value %d", n, i)
			}
		}
		if extra := 0; r.Push(&extra) {
			t.Errorf("NewRing(%d) took %d values", n, n+1)
		}
	}
}

func TestRingKeepsOrderAndRefusesWhenFull(t *testing.T) {
	r, _ := NewRing[int](4)
	for i := range 4 {
		if !r.Push(&i) {
			t.Fatalf("push %d refused", i)
		}
	}
	extra := 99
	if r.Push(&extra) {
		t.Fatal("a full ring took a fifth value")
	}
	for want := range 4 {
		var got int
		if !r.Pop(&got) || got != want {
			t.Fatalf("pop = %d, want %d", got, want)
		}
	}
	var v int
	if r.Pop(&v) {
		t.Fatal("an empty ring gave a value")
	}
}

// TestRingAcrossGoroutines passes 50 000 values through a small ring
// between two goroutines (run with -race): none lost, none reordered.
func TestRingAcrossGoroutines(t *testing.T) {
	r, _ := NewRing[uint64](8)
	const n = 50_000
	done := make(chan error, 1)
	go func() {
		var want uint64
		for want < n {
			var v uint64
			if !r.Pop(&v) {
				continue
			}
			if v != want {
				done <- fmt.Errorf("got %d, want %d", v, want)
				return
			}
			want++
		}
		done <- nil
	}()
	for i := uint64(0); i < n; {
		if r.Push(&i) {
			i++
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestSignalWakesAWaiter(t *testing.T) {
	var s Signal
	seq := s.Seq()
	woke := make(chan bool, 1)
	go func() { woke <- s.Wait(seq, 10*time.Second) }()
	// The waiter may not sleep yet: Notify until it reports, which
	// proves the count change reaches it either way.
	deadline := time.After(10 * time.Second)
	for {
		s.Notify()
		select {
		case ok := <-woke:
			if !ok {
				t.Fatal("Wait returned without the count changing")
			}
			return
		case <-deadline:
			t.Fatal("the waiter was not woken")
		case <-time.After(time.Millisecond):
		}
	}
}

func TestSignalWaitTimesOutAndSeesAnEarlierNotify(t *testing.T) {
	var s Signal
	seq := s.Seq()
	if s.Wait(seq, time.Millisecond) {
		t.Fatal("Wait reported a change nobody made")
	}
	s.Notify()
	if !s.Wait(seq, 0) {
		t.Fatal("a notification before Wait was missed")
	}
}

// TestCycleSideAllocatesNothing: what the cycle thread calls.
func TestCycleSideAllocatesNothing(t *testing.T) {
	r, _ := NewRing[[64]byte](16)
	var s Signal
	var v [64]byte
	if n := testing.AllocsPerRun(1000, func() {
		r.Push(&v)
		r.Pop(&v)
		s.Notify()
	}); n != 0 {
		t.Fatalf("%v allocations per push, pop and notify", n)
	}
}

// TestSignalWaiterParks: a waiter gives its thread and its P up while it
// waits (a goroutine in the state "IO wait", parked in the runtime's
// poller), instead of holding them in a blocking system call ("syscall"),
// and Notify wakes it.
func TestSignalWaiterParks(t *testing.T) {
	var s Signal
	seq := s.Seq()
	woke := make(chan bool, 1)
	go func() { woke <- s.Wait(seq, time.Minute) }()
	state := waiterState(t)
	if state != "IO wait" {
		t.Errorf("the waiter is in %q, want parked in the poller (IO wait)", state)
	}
	s.Notify()
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("Wait returned without the count changing")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked waiter was not woken")
	}
}

// waiterState returns the state, as a goroutine dump gives it, of the one
// goroutine in Signal.Wait: "IO wait" once it is, else the last other
// state it was seen in while not running (on its way to park it passes
// through short system calls) when 10 s have passed.
func waiterState(t *testing.T) string {
	t.Helper()
	buf := make([]byte, 1<<20)
	last := ""
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		dump := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(dump, "\n\n") {
			if !strings.Contains(g, "spsc.(*Signal).Wait") {
				continue
			}
			// "goroutine 7 [IO wait]:" or "[syscall, 2 minutes]:"
			head := g[strings.Index(g, "[")+1 : strings.Index(g, "]")]
			state, _, _ := strings.Cut(head, ",")
			if state == "IO wait" {
				return state
			}
			if state != "running" && state != "runnable" {
				last = state
			}
		}
		runtime.Gosched()
	}
	if last == "" {
		t.Fatal("no goroutine came to wait in Signal.Wait")
	}
	return last
}

// TestSignalWakesMoreWaitersThanPlaces: every waiter wakes, those parked
// and those that found every parking place taken and sleep on the futex.
func TestSignalWakesMoreWaitersThanPlaces(t *testing.T) {
	var s Signal
	const waiters = 3*parkPlaces + 4
	woke := make(chan bool, waiters)
	seq := s.Seq()
	for range waiters {
		go func() { woke <- s.Wait(seq, time.Minute) }()
	}
	// Let them all come to wait, so that the places fill up and the
	// futex gets its sleepers; those that come later see the count
	// changed, which is a wake-up too.
	for deadline := time.Now().Add(10 * time.Second); s.parked.Load()+s.sleepers.Load() < waiters && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if p := s.parked.Load(); p > parkPlaces {
		t.Errorf("%d waiters parked in %d places", p, parkPlaces)
	}
	s.Notify()
	for i := range waiters {
		select {
		case ok := <-woke:
			if !ok {
				t.Fatalf("waiter %d returned without the count changing", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d waiters woken", i, waiters)
		}
	}
}

// TestSignalWaitAllocatesNothing: a waiter that times out and one that is
// woken allocate nothing once their parking place is made, so that the
// cycle process's steady state (its error-counter reads wait here every
// second) stays allocation-free.
func TestSignalWaitAllocatesNothing(t *testing.T) {
	// Prepare makes the place: the first wait allocates nothing either.
	// The count is the process's, and a loaded host makes the runtime
	// start a thread now and then (it allocates): the first waits of 100
	// signals are counted, as AllocsPerRun counts, so that one stray
	// allocation is not taken for the wait's while one a wait is caught.
	firsts := make([]Signal, 100)
	for i := range firsts {
		firsts[i].Prepare(1)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range firsts {
		firsts[i].Wait(firsts[i].Seq(), 20*time.Microsecond)
	}
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n >= uint64(len(firsts)) {
		t.Errorf("%d allocations in the first waits of %d signals after Prepare", n, len(firsts))
	}
	var s Signal
	s.Prepare(1)
	if n := testing.AllocsPerRun(100, func() {
		s.Wait(s.Seq(), 20*time.Microsecond)
	}); n != 0 {
		t.Errorf("%v allocations per timed-out wait", n)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				s.Notify()
				// Sleeping, not yielding: AllocsPerRun runs with one
				// P, and a P that never idles leaves the poller to
				// sysmon's check every 10 ms.
				time.Sleep(20 * time.Microsecond)
			}
		}
	}()
	if n := testing.AllocsPerRun(100, func() {
		s.Wait(s.Seq(), time.Second)
	}); n != 0 {
		t.Errorf("%v allocations per woken wait", n)
	}
}
