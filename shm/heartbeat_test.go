package shm

import (
	"os"
	"testing"
)

func TestHeartbeat(t *testing.T) {
	s := newHeapSegment(t, smallLayout())
	h := s.Heartbeat()
	if c, m, ok := h.Read(); ok || c != 0 || m != 0 {
		t.Errorf("Read before any beat = %d, %d, %v, want 0, 0, false", c, m, ok)
	}
	if h.CyclePID() != 0 {
		t.Errorf("CyclePID before SetCyclePID = %d", h.CyclePID())
	}
	h.SetCyclePID(os.Getpid())
	for i := range uint64(3) {
		h.Beat(i, int64(1000+i))
	}
	if c, m, ok := h.Read(); !ok || c != 2 || m != 1002 {
		t.Errorf("Read = %d, %d, %v, want 2, 1002, true", c, m, ok)
	}
	if h.CyclePID() != os.Getpid() {
		t.Errorf("CyclePID = %d, want %d", h.CyclePID(), os.Getpid())
	}
	// A cycle process that died mid-beat: readers give up, the next
	// process's first beat repairs the sequence.
	h.line.Seq.Add(1)
	if _, _, ok := h.Read(); ok {
		t.Errorf("Read succeeded during a beat")
	}
	h.Beat(0, 5)
	if c, m, ok := h.Read(); !ok || c != 0 || m != 5 {
		t.Errorf("Read after repair = %d, %d, %v, want 0, 5, true", c, m, ok)
	}
}

func TestHeartbeatAllocs(t *testing.T) {
	h := newMemfdSegment(t, smallLayout()).Heartbeat()
	c := uint64(0)
	if a := testing.AllocsPerRun(1000, func() { c++; h.Beat(c, int64(c)); h.Read() }); a != 0 {
		t.Errorf("Beat+Read: %v allocations per run, want 0", a)
	}
}

func BenchmarkBeat(b *testing.B) {
	h := newMemfdSegment(b, smallLayout()).Heartbeat()
	c := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		c++
		h.Beat(c, int64(c))
	}
}
