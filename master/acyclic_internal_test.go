package master

import (
	"errors"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// TestAcyclicQueueRefusesWhenFull: the requester is told, the queue is
// left as it was, and a withdrawn datagram frees its place for the cycle
// to skip.
func TestAcyclicQueueRefusesWhenFull(t *testing.T) {
	var q acyclicQueue
	for i := range AcyclicQueueLen {
		if _, err := q.enqueue(wire.BRD, 0, make([]byte, 2)); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
	if _, err := q.enqueue(wire.BRD, 0, make([]byte, 2)); !errors.Is(err, ErrAcyclicQueueFull) {
		t.Fatalf("17th datagram: %v, want ErrAcyclicQueueFull", err)
	}
	first := &q.slots[0]
	if !first.state.CompareAndSwap(slotQueued, slotCancelled) {
		t.Fatal("could not withdraw the first datagram")
	}
	if s := q.peek(); s != &q.slots[1] {
		t.Fatal("the cycle did not skip the withdrawn datagram")
	}
	if first.state.Load() != slotFree {
		t.Fatal("the withdrawn datagram's place was not freed")
	}
}

// TestCyclicCarriesAcyclicWithoutAllocating: the cycle's side of the
// acyclic queue — carrying datagrams in its frames and in the extra
// frame, resolving their answers — allocates nothing.
func TestCyclicCarriesAcyclicWithoutAllocating(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	cy, _, _ := testCyclic(t, maxLRWData, func(uint8) uint16 { return 8 })
	small := make([]byte, 2)
	big := make([]byte, wire.MaxDataLen-20) // no room beside the LRW: the extra frame
	for range 5 {
		cy.Exchange() // a measured round trip, for the extra frame's budget
	}
	extra := 0
	allocs := testing.AllocsPerRun(500, func() {
		a, _ := cy.acyclic.enqueue(wire.BRD, 0x01300000, small)
		b, _ := cy.acyclic.enqueue(wire.FPRD, 0x10001001, big)
		r := cy.Exchange()
		extra += r.AcyclicFrames
		for _, s := range []*acyclicSlot{a, b} {
			if st := s.state.Load(); st == slotDone || st == slotLost {
				s.state.Store(slotFree)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per cycle with acyclic datagrams", allocs)
	}
	if extra < 400 {
		t.Errorf("the extra acyclic frame went out in %d of 501 cycles", extra)
	}
}
