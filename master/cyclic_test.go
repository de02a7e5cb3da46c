package master

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"

	"github.com/ecagent/ecagent/internal/realtime/monotime"
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
	return testCyclicOn(t, maxData, wkc, func(p *link.PipeEnd) link.Link { return p })
}

// testCyclicOn is testCyclic with the master's end of the pipe seen
// through wrap.
func testCyclicOn(t testing.TB, maxData int, wkc func(uint8) uint16, wrap func(*link.PipeEnd) link.Link) (*Cyclic, *counters, []*Slave) {
	slaves := referenceSet()
	l, err := mapProcessData(slaves, maxData)
	if err != nil {
		t.Fatal(err)
	}
	a, b := link.NewPipe()
	t.Cleanup(func() { _ = a.Close() })
	startLoop(t, b, wkc)
	c := &counters{}
	bus := newBus(wrap(a), 10*time.Millisecond, 0, c)
	cy := newCyclic(bus, &acyclicQueue{}, newProcessImage(l.outBytes, l.inBytes), l, 2*time.Second, monotime.Now, c)
	return cy, c, slaves
}

// resultCase is a cycle the loop segment answers in a given way, and what
// the exchange must make of it.
type resultCase struct {
	name     string
	maxData  int
	wkc      func(uint8) uint16
	wantWKC  uint16
	lost     int
	err      error
	counters Stats
}

// resultCases are the cycles TestCyclicResult and TestCyclicPostCollect
// run: waiting and pipelined, an exchange must come to the same result.
func resultCases() []resultCase {
	return []resultCase{
		{"complete", maxLRWData, func(uint8) uint16 { return 8 }, 8, 0, nil, Stats{Cycles: 1, FramesSent: 1}},
		{"one slave missing", maxLRWData, func(uint8) uint16 { return 7 }, 7, 0, ErrWKCMismatch, Stats{Cycles: 1, FramesSent: 1, WKCErrors: 1}},
		{"frame lost", maxLRWData, func(uint8) uint16 { return 0xFFFF }, 0, 1, ErrFrameLost, Stats{Cycles: 1, FramesSent: 1, LostFrames: 1}},
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
		}, 6, 1, ErrFrameLost, Stats{Cycles: 1, FramesSent: 3, LostFrames: 1}},
	}
}

func TestCyclicResult(t *testing.T) {
	cases := resultCases()
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

func TestDecodeSystemTimeDiff(t *testing.T) {
	tests := []struct {
		reg  uint32
		want int32
	}{
		{0x00000000, 0},
		{0x00000005, 5},           // local copy greater: the slave is ahead
		{0x80000005, -5},          // bit 31: local copy smaller, behind
		{0x7FFFFFFF, 0x7FFFFFFF},  // largest lead
		{0xFFFFFFFF, -0x7FFFFFFF}, // largest lag
		{0x80000000, 0},           // "smaller" by nothing
	}
	for _, tt := range tests {
		if got := decodeSystemTimeDiff(tt.reg); got != tt.want {
			t.Errorf("decodeSystemTimeDiff(%#08x) = %d, want %d", tt.reg, got, tt.want)
		}
	}
}

// TestCyclicDCResult checks the DC fields of CycleResult over a few cycles
// against what the segment answered.
func TestCyclicDCResult(t *testing.T) {
	tests := []struct {
		name      string
		dcWKC     uint16 // what the segment answers to the FRMW
		wkcErrors uint64
	}{
		{name: "every clock takes part", dcWKC: 3},
		{name: "a clock is missing", dcWKC: 2, wkcErrors: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slaves, setup := auxSlaves()
			for _, s := range slaves {
				s.HasMailbox = false // DC datagrams only
			}
			b := newAuxBench(t, slaves, &setup, maxLRWData)
			b.seg.dcWKC = tt.dcWKC
			b.seg.diff[0x1004] = 0x80000007 // position 3: 7 ns behind
			b.seg.diff[0x1006] = 12         // position 5: 12 ns ahead
			b.seg.diff[0x1001] = 0          // the reference
			// Round robin over the clocks but the reference, whose
			// register is not kept up to date.
			wantPos := []int{3, 5, 3, 5}
			wantDiff := map[int]int32{3: -7, 5: 12}
			var prev uint64
			for i, pos := range wantPos {
				r := b.cy.Exchange()
				if r.Err != nil {
					t.Fatalf("cycle %d: %v (a DC working counter must not fail the cycle)", i+1, r.Err)
				}
				if r.Frames != 1 || r.WKC != r.ExpectedWKC {
					t.Errorf("cycle %d: %d frames, WKC %d/%d", i+1, r.Frames, r.WKC, r.ExpectedWKC)
				}
				if !r.DCValid || r.DCWKC != tt.dcWKC || r.DCExpectedWKC != 3 {
					t.Errorf("cycle %d: DC valid %v WKC %d/%d, want valid %d/3", i+1, r.DCValid, r.DCWKC, r.DCExpectedWKC, tt.dcWKC)
				}
				if i > 0 && r.DCTime-prev != b.seg.tick {
					t.Errorf("cycle %d: DC time advanced by %d, want %d", i+1, r.DCTime-prev, b.seg.tick)
				}
				prev = r.DCTime
				if !r.DCDiffValid || r.DCDiffPosition != pos || r.DCDiff != wantDiff[pos] {
					t.Errorf("cycle %d: DC diff valid %v position %d value %d, want position %d value %d",
						i+1, r.DCDiffValid, r.DCDiffPosition, r.DCDiff, pos, wantDiff[pos])
				}
			}
			if st := b.m.Stats(); st.DCWKCErrors != tt.wkcErrors || st.WKCErrors != 0 {
				t.Errorf("stats %+v, want %d DC WKC errors and no WKC error", st, tt.wkcErrors)
			}
		})
	}
}

// TestCyclicWithoutAux checks that an exchange without DC and mailboxes
// sends what it always did: the LRW and the AL status read.
func TestCyclicWithoutAux(t *testing.T) {
	slaves, _ := auxSlaves()
	for _, s := range slaves {
		s.HasMailbox = false
	}
	b := newAuxBench(t, slaves, nil, maxLRWData)
	r := b.cy.Exchange()
	if r.Err != nil || r.DCValid || r.DCDiffValid || r.DCExpectedWKC != 0 {
		t.Fatalf("result %+v", r)
	}
	var f wire.Frame
	if err := f.Decode(b.cy.frames[0].builder.Bytes()); err != nil {
		t.Fatal(err)
	}
	it := f.Datagrams()
	var d wire.Datagram
	n := 0
	for it.Next(&d) {
		n++
	}
	if got := len(b.cy.frames[0].builder.Bytes()); n != 2 || got != b.cy.frames[0].baseLen() {
		t.Errorf("%d datagrams in a %d-byte frame, want 2 in %d", n, got, b.cy.frames[0].baseLen())
	}
}

// TestCyclicAuxFrameOfItsOwn checks that auxiliary datagrams that do not
// fit beside a large LRW travel in an extra frame, and that a second copy
// of an answer already taken is never taken again: it answers no frame
// the exchange awaits, nor one it lost, so it is mismatched, not late.
func TestCyclicAuxFrameOfItsOwn(t *testing.T) {
	slaves, setup := auxSlaves()
	big := model("Big", fmmuOut, ProcessDataSM{Type: sii.SMProcessDataOut, Start: 0x1000, Bits: 8 * 1400})
	big.Position, big.StationAddress = len(slaves), firstStationAddress+uint16(len(slaves))
	slaves = append(slaves, big)
	b := newAuxBench(t, slaves, &setup, maxLRWData)
	if b.cy.Frames() != 2 || b.cy.auxFrame != 1 || b.cy.frames[0].aux {
		t.Fatalf("%d frames, auxiliary datagrams in frame %d, want an extra second frame", b.cy.Frames(), b.cy.auxFrame)
	}
	b.put(slaves[5].StationAddress, emergencyMessage(coe.Emergency{ErrorCode: 0x3210}), false)
	b.seg.dupFrame = true
	var prev uint64
	for i := range 6 {
		r := b.cy.Exchange()
		if r.Err != nil || r.Frames != 2 || !r.DCValid || !r.DCDiffValid {
			t.Fatalf("cycle %d: %+v", i+1, r)
		}
		if i > 0 && r.DCTime <= prev {
			t.Errorf("cycle %d: DC time %d after %d: an old answer was taken", i+1, r.DCTime, prev)
		}
		prev = r.DCTime
	}
	st := b.m.Stats()
	if st.MismatchedAnswers < 5 || st.StaleFrames != 0 {
		t.Errorf("%d mismatched and %d stale frames after 6 cycles answered twice each, want at least 5 and 0",
			st.MismatchedAnswers, st.StaleFrames)
	}
	if got := b.m.Emergencies(nil); len(got) != 1 || got[0].Emergency.ErrorCode != 0x3210 {
		t.Errorf("emergencies %+v, want the 0x3210 one", got)
	}
}

func TestSyncStart(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name                string
		now                 uint64
		cycle, shift, delay time.Duration
		want                uint64
	}{
		{"on the grid: the next point", 0, ms, 0, 100 * ms, uint64(101 * ms)},
		{"between points", uint64(400 * time.Microsecond), ms, 0, 100 * ms, uint64(101 * ms)},
		{"shifted later", 0, ms, 250 * time.Microsecond, 100 * ms, uint64(100*ms + 250*time.Microsecond)},
		{"shifted earlier", 0, ms, -250 * time.Microsecond, 100 * ms, uint64(100*ms + 750*time.Microsecond)},
		{"shift beyond the delay", 0, ms, 900 * time.Microsecond, 100 * time.Microsecond, uint64(900 * time.Microsecond)},
		{"a real system time", 838_000_000_123_456_789, ms, 0, 100 * ms, 838_000_000_224_000_000},
		{"odd cycle", 1_000, 333 * time.Microsecond, 10 * time.Microsecond, ms, 3*333_000 + 10_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := syncStart(tt.now, tt.cycle, tt.shift, tt.delay)
			if got != tt.want {
				t.Errorf("syncStart(%d, %v, %v, %v) = %d, want %d", tt.now, tt.cycle, tt.shift, tt.delay, got, tt.want)
			}
			// Whatever the inputs: after now+delay, within a cycle of it, on the grid.
			after := int64(got) - int64(tt.now+uint64(tt.delay))
			if after <= 0 || after > int64(tt.cycle) || (int64(got)-int64(tt.shift))%int64(tt.cycle) != 0 {
				t.Errorf("start %d is %d ns after now+delay, off grid by %d", got, after, (int64(got)-int64(tt.shift))%int64(tt.cycle))
			}
		})
	}
}

// TestCyclicDCOnlyReference: a segment whose only clock is the reference
// still carries the 0x092C read (the frame layout does not change with
// the clocks present); it reads the reference's.
func TestCyclicDCOnlyReference(t *testing.T) {
	slaves, setup := auxSlaves()
	for _, s := range slaves {
		s.HasMailbox = false
	}
	setup.Clocks = setup.Clocks[:1]
	b := newAuxBench(t, slaves, &setup, maxLRWData)
	b.seg.dcWKC = 1
	for i := range 3 {
		r := b.cy.Exchange()
		if r.Err != nil || !r.DCValid || r.DCExpectedWKC != 1 || !r.DCDiffValid || r.DCDiffPosition != 0 {
			t.Errorf("cycle %d: err %v, DC valid %v expected WKC %d, diff valid %v at %d; want the reference's at 0",
				i+1, r.Err, r.DCValid, r.DCExpectedWKC, r.DCDiffValid, r.DCDiffPosition)
		}
	}
}
