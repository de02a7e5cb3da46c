package spsc

import (
	"fmt"
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
