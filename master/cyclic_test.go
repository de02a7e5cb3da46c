package master

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/wire"
)

// loopSegment answers LRW frames on the far end of a pipe without
// allocating: it adds wkc to each datagram's working counter and writes
// input into the data's last byte. It stands in for the simulator where a
// test must isolate the master's own allocations and timing.
type loopSegment struct {
	far   link.Link
	wkc   func(index uint8) uint16 // working counter to answer, per datagram index
	input byte
	wg    sync.WaitGroup
}

func startLoop(t testing.TB, far link.Link, wkc func(uint8) uint16) *loopSegment {
	s := &loopSegment{far: far, wkc: wkc, input: 0x5A}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		buf := make([]byte, link.MaxFrameSize)
		for {
			n, err := far.Recv(buf, time.Time{})
			if err != nil {
				return
			}
			var f wire.Frame
			if f.Decode(buf[:n]) != nil {
				continue
			}
			it := f.Datagrams()
			var d wire.Datagram
			answer := true
			for it.Next(&d) {
				w := s.wkc(d.Index)
				if w == 0xFFFF {
					answer = false
				}
				d.Data[len(d.Data)-1] = s.input
				d.SetWKC(d.WKC + w)
			}
			if answer {
				_ = far.Send(buf[:n])
			}
		}
	}()
	t.Cleanup(func() { _ = far.Close(); s.wg.Wait() })
	return s
}

// testCyclic builds the reference layout's exchange on a pipe served by a
// loopSegment.
func testCyclic(t testing.TB, maxData int, wkc func(uint8) uint16) (*Cyclic, *counters, []*Slave) {
	slaves := referenceSet()
	l, err := mapProcessData(slaves, maxData)
	if err != nil {
		t.Fatal(err)
	}
	a, b := link.NewPipe()
	t.Cleanup(func() { _ = a.Close() })
	startLoop(t, b, wkc)
	c := &counters{}
	bus := newBus(a, 10*time.Millisecond, 0, c)
	cy := newCyclic(bus, newProcessImage(l.outBytes, l.inBytes), l, 2*time.Second, newMonotonicClock(), c)
	return cy, c, slaves
}

func TestCyclicResult(t *testing.T) {
	cases := []struct {
		name     string
		maxData  int
		wkc      func(uint8) uint16
		wantWKC  uint16
		lost     int
		err      error
		counters Stats
	}{
		{"complete", maxLRWData, func(uint8) uint16 { return 8 }, 8, 0, nil, Stats{Cycles: 1}},
		{"one slave missing", maxLRWData, func(uint8) uint16 { return 7 }, 7, 0, ErrWKCMismatch, Stats{Cycles: 1, WKCErrors: 1}},
		{"frame lost", maxLRWData, func(uint8) uint16 { return 0xFFFF }, 0, 1, ErrFrameLost, Stats{Cycles: 1, LostFrames: 1}},
		// Split in three frames (WKC 4, 2, 2); the middle one, with the
		// odd index of the second frame, is lost.
		{"one of three frames lost", 4, func(i uint8) uint16 {
			switch i % 3 {
			case 1:
				return 4
			case 2:
				return 0xFFFF
			}
			return 2
		}, 6, 1, ErrFrameLost, Stats{Cycles: 1, LostFrames: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cy, cnt, _ := testCyclic(t, c.maxData, c.wkc)
			r := cy.ExchangeUntil(time.Now().Add(500 * time.Millisecond))
			if r.WKC != c.wantWKC || r.ExpectedWKC != 8 || r.Lost != c.lost || !errors.Is(r.Err, c.err) || r.Err != c.err {
				t.Errorf("result %+v, want WKC %d/8 lost %d err %v", r, c.wantWKC, c.lost, c.err)
			}
			if r.FrameLost() != (c.lost > 0) || r.OK() != (c.err == nil) || (r.RTT() > 0) != (c.lost == 0) {
				t.Errorf("FrameLost %v OK %v RTT %v", r.FrameLost(), r.OK(), r.RTT())
			}
			if got := cnt.snapshot(); got != c.counters {
				t.Errorf("stats %+v, want %+v", got, c.counters)
			}
		})
	}
}

func TestCyclicCopiesInputsOnly(t *testing.T) {
	cy, _, slaves := testCyclic(t, maxLRWData, func(uint8) uint16 { return 8 })
	img := cy.image
	_ = img.SetOutputValue(slaves[5], 0, 32, 0xDEADBEEF)
	r := cy.Exchange()
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	// The segment wrote 0x5A into the last byte: the input byte.
	if img.Inputs()[0] != 0x5A {
		t.Errorf("inputs % x, want 5a", img.Inputs())
	}
	if v, _ := img.OutputValue(slaves[5], 0, 32); v != 0xDEADBEEF {
		t.Errorf("outputs changed by the answer: %#x", v)
	}
}

func TestCyclicExchangeDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, maxData := range []int{maxLRWData, 4} {
		cy, _, slaves := testCyclic(t, maxData, func(i uint8) uint16 { return 0 })
		lost := 0
		allocs := testing.AllocsPerRun(2000, func() {
			_ = cy.image.SetOutputBit(slaves[1], 0, true)
			lost += cy.Exchange().Lost
		})
		if allocs != 0 {
			t.Errorf("%d frames: Exchange allocates %v times per cycle", cy.Frames(), allocs)
		}
		if lost > 20 {
			t.Errorf("%d frames: %d frames lost in 2000 cycles", cy.Frames(), lost)
		}
	}
}

// BenchmarkExchangeLoop measures the master's side of a cycle over the
// in-process pipe with a minimal answering goroutine (no simulator).
func BenchmarkExchangeLoop(b *testing.B) {
	cy, _, slaves := testCyclic(b, maxLRWData, func(uint8) uint16 { return 8 })
	b.ReportAllocs()
	n, failed := 0, 0
	for b.Loop() {
		n++
		_ = cy.image.SetOutputBit(slaves[1], 0, true)
		if r := cy.Exchange(); r.Err != nil {
			failed++
		}
	}
	b.ReportMetric(float64(failed)/float64(n), "failed/op")
}
