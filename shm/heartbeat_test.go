package shm

import (
	"fmt"
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

// TestHeartbeatFrames: the frame totals read back as written, zeros
// before the first cycle, and a reader racing the writer never sees more
// frames lost than sent, though every frame is lost (a link down: the
// two totals are equal after every cycle).
func TestHeartbeatFrames(t *testing.T) {
	h := newMemfdSegment(t, smallLayout()).Heartbeat()
	if sent, lost := h.Frames(); sent != 0 || lost != 0 {
		t.Errorf("Frames before any cycle = %d, %d, want 0, 0", sent, lost)
	}
	h.CountFrames(10, 3)
	if sent, lost := h.Frames(); sent != 10 || lost != 3 {
		t.Errorf("Frames = %d, %d, want 10, 3", sent, lost)
	}
	// A cycle process's totals only grow: the race below starts from
	// zero, not from totals above the writer's first ones (a read of the
	// old lost, 3, and the new sent, 2, failed it under stress-ng).
	h.CountFrames(0, 0)

	const cycles = 200000
	raceReads(t, func() {
		var sent, lost uint64
		for range cycles {
			sent += 2
			lost += 2
			h.CountFrames(sent, lost)
		}
	}, func(reads int) string {
		if sent, lost := h.Frames(); lost > sent {
			return fmt.Sprintf("read %d: %d frames lost of %d sent", reads, lost, sent)
		}
		return ""
	})
	if sent, lost := h.Frames(); sent != 2*cycles || lost != 2*cycles {
		t.Errorf("Frames after %d cycles = %d, %d, want %d, %d", cycles, sent, lost, 2*cycles, 2*cycles)
	}
}

// TestHeartbeatLate: a reader that reads the late frames before the
// frame totals never sees more frames late than lost, though every frame
// lost comes late at once.
func TestHeartbeatLate(t *testing.T) {
	h := newMemfdSegment(t, smallLayout()).Heartbeat()
	if h.Late() != 0 {
		t.Errorf("Late before any cycle = %d", h.Late())
	}
	const cycles = 200000
	raceReads(t, func() {
		for n := range uint64(cycles) {
			h.CountFrames(n+1, n+1)
			h.CountLate(n + 1)
		}
	}, func(reads int) string {
		late := h.Late()
		if _, lost := h.Frames(); late > lost {
			return fmt.Sprintf("read %d: %d frames late of %d lost", reads, late, lost)
		}
		return ""
	})
}

// TestHeartbeatLink: the link totals read back as written, zeros before
// the first count, apart from the frame totals, and a reader racing the
// writer never sees more drops than frames received, though the kernel
// drops every frame.
func TestHeartbeatLink(t *testing.T) {
	h := newMemfdSegment(t, smallLayout()).Heartbeat()
	if received, drops := h.Link(); received != 0 || drops != 0 {
		t.Errorf("Link before any count = %d, %d, want 0, 0", received, drops)
	}
	h.CountFrames(10, 3)
	h.CountLink(50_000, 1_500)
	if received, drops := h.Link(); received != 50_000 || drops != 1_500 {
		t.Errorf("Link = %d, %d, want 50000, 1500", received, drops)
	}
	if sent, lost := h.Frames(); sent != 10 || lost != 3 {
		t.Errorf("Frames = %d, %d after CountLink, want 10, 3", sent, lost)
	}
	// The race runs on totals that only grow, as the kernel's do: a fresh
	// segment, so the writer never steps back below the 50 000 above.
	r := newMemfdSegment(t, smallLayout()).Heartbeat()
	const counts = 200000
	raceReads(t, func() {
		for n := range uint64(counts) {
			r.CountLink(3*(n+1), 3*(n+1))
		}
	}, func(reads int) string {
		if received, drops := r.Link(); drops > received {
			return fmt.Sprintf("read %d: %d frames dropped of %d received", reads, drops, received)
		}
		return ""
	})
}

func TestHeartbeatAllocs(t *testing.T) {
	h := newMemfdSegment(t, smallLayout()).Heartbeat()
	c := uint64(0)
	if a := testing.AllocsPerRun(1000, func() {
		c++
		h.Beat(c, int64(c))
		h.Read()
		h.CountFrames(2*c, c)
		h.Frames()
		h.CountLate(c / 2)
		h.Late()
		h.CountLink(3*c, c)
		h.Link()
	}); a != 0 {
		t.Errorf("Beat+Read+CountFrames+Frames+CountLate+Late+CountLink+Link: %v allocations per run, want 0", a)
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
