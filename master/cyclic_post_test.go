package master

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// countingPoller is the master's end of a pipe with a view of its receive
// queue: how many answers wait, and a switch that hides them as if still
// on the wire.
type countingPoller struct {
	*link.PipeEnd
	taken atomic.Int64
	hold  atomic.Bool
}

// waiting returns the frames that have arrived and not been polled.
func (p *countingPoller) waiting() int { return int(int64(p.Stats().Packets) - p.taken.Load()) }

// Poll is the pipe's, but sees nothing while hold is set.
func (p *countingPoller) Poll(buf []byte) (int, int64, error) {
	if p.hold.Load() {
		return 0, 0, nil
	}
	n, at, err := p.PipeEnd.Poll(buf)
	if n > 0 {
		p.taken.Add(1)
	}
	return n, at, err
}

// testPostCyclic is testCyclic on a countingPoller.
func testPostCyclic(t testing.TB, maxData int, wkc func(uint8) uint16) (*Cyclic, *counters, []*Slave) {
	return testCyclicOn(t, maxData, wkc, func(p *link.PipeEnd) link.Link { return &countingPoller{PipeEnd: p} })
}

// TestCyclicPostCollect runs the pipelined exchange through the cases of
// TestCyclicResult: the same result and counters as ExchangeUntil, a
// receive time between the send and the collection.
func TestCyclicPostCollect(t *testing.T) {
	cases := resultCases()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cy, cnt, _ := testPostCyclic(t, c.maxData, c.wkc)
			if !cy.CanPost() {
				t.Fatal("a pipe cannot post")
			}
			cy.Post(time.Now().Add(time.Millisecond))
			want := cy.postedPending - c.lost
			for end := time.Now().Add(time.Second); cy.poller.(*countingPoller).waiting() < want && time.Now().Before(end); {
				time.Sleep(50 * time.Microsecond) // polling a queue, not synchronising a test
			}
			collected := cy.clock()
			r := cy.Collect()
			if r.WKC != c.wantWKC || r.ExpectedWKC != 8 || r.Lost != c.lost || r.Err != c.err {
				t.Errorf("result %+v, want WKC %d/8 lost %d err %v", r, c.wantWKC, c.lost, c.err)
			}
			if c.lost == 0 && (r.RecvTime <= r.SendTime || r.RecvTime > collected+int64(time.Millisecond)) {
				t.Errorf("received at %d, sent at %d, collected at %d", r.RecvTime, r.SendTime, collected)
			}
			if got := cnt.snapshot(); got != c.counters {
				t.Errorf("stats %+v, want %+v", got, c.counters)
			}
		})
	}
}

// TestCyclicCollectWithoutPost: nothing sent, nothing counted.
func TestCyclicCollectWithoutPost(t *testing.T) {
	cy, cnt, _ := testPostCyclic(t, maxLRWData, func(uint8) uint16 { return 8 })
	if r := cy.Collect(); r.Frames != 0 || r.Lost != 0 || r.Err != nil {
		t.Errorf("Collect without Post = %+v", r)
	}
	if got := cnt.snapshot(); got != (Stats{}) {
		t.Errorf("stats %+v, want none", got)
	}
}

// TestCyclicCollectBeforeTheAnswer: an answer that comes after Collect is
// a lost frame in its cycle and a stale answer in the next, never taken
// as the next cycle's.
func TestCyclicCollectBeforeTheAnswer(t *testing.T) {
	cy, cnt, _ := testPostCyclic(t, maxLRWData, func(uint8) uint16 { return 8 })
	p := cy.poller.(*countingPoller)
	p.hold.Store(true) // the answer is not visible yet
	cy.Post(time.Now())
	r := cy.Collect()
	if r.Lost != 1 || r.Err != ErrFrameLost {
		t.Fatalf("collected before the answer: %+v", r)
	}
	p.hold.Store(false)
	cy.Post(time.Now().Add(time.Millisecond))
	for end := time.Now().Add(time.Second); p.waiting() < 2 && time.Now().Before(end); {
		time.Sleep(50 * time.Microsecond) // polling a queue, not synchronising a test
	}
	r = cy.Collect()
	if r.Lost != 0 || r.Stale != 1 || r.WKC != 8 || r.Err != nil {
		t.Errorf("the next cycle: %+v, want its own answer and one stale", r)
	}
	if got := cnt.snapshot(); got.LostFrames != 1 || got.FramesSent != 2 || got.StaleFrames != 1 || got.Cycles != 2 {
		t.Errorf("stats %+v", got)
	}
}

func TestCyclicPostCollectDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, maxData := range []int{maxLRWData, 4} {
		cy, _, slaves := testPostCyclic(t, maxData, func(uint8) uint16 { return 8 })
		p := cy.poller.(*countingPoller)
		lost := 0
		allocs := testing.AllocsPerRun(500, func() {
			_ = cy.image.SetOutputBit(slaves[1], 0, true)
			cy.Post(time.Now().Add(time.Millisecond))
			for end := time.Now().Add(100 * time.Millisecond); p.waiting() < cy.postedPending && time.Now().Before(end); {
				runtime.Gosched()
			}
			lost += cy.Collect().Lost
		})
		if allocs != 0 {
			t.Errorf("%d frames: Post and Collect allocate %v times per cycle", cy.Frames(), allocs)
		}
		if lost > 20 {
			t.Errorf("%d frames: %d frames lost in 500 cycles", cy.Frames(), lost)
		}
	}
}

// TestCyclicForgedAnswerCountsForNothing: a frame for the index in
// flight that is not the segment's answer (an LRW alone with a full
// working counter, as a forger sends) is counted as mismatched and the
// real answer after it is taken.
func TestCyclicForgedAnswerCountsForNothing(t *testing.T) {
	g := newLateRig(t, maxLRWData)
	req := g.post()[0]
	rf, lrw := firstDatagram(t, req)

	// The forgery: the same index and LRW, nothing else, WKC 8.
	var fb wire.Builder
	src := [6]byte(rf.Source())
	src[0] |= 0x02
	_ = fb.Reset(make([]byte, wire.MaxFrameLen), broadcastMAC, src)
	d, _ := fb.Append(wire.LRW, lrw.Index, lrw.Address, len(lrw.Data))
	clear(d)
	forged := mutated(t, fb.Bytes(), func(d *wire.Datagram) { d.SetWKC(8) })
	g.send(forged)
	// The segment's answer: every datagram taken part in.
	it := rf.Datagrams()
	var dg wire.Datagram
	for it.Next(&dg) {
		if dg.Command == wire.LRW {
			dg.SetWKC(8)
		} else {
			dg.SetWKC(7)
			if dg.Command == wire.BRD {
				dg.Data[0] = 0x08 // OP
			}
		}
	}
	req[6] |= 0x02
	g.send(req)
	for end := time.Now().Add(time.Second); g.near.Stats().Packets < 2 && time.Now().Before(end); {
		time.Sleep(50 * time.Microsecond) // polling a counter, not synchronising a test
	}
	r := g.cy.Collect()
	if r.WKC != 8 || !r.StatusRead || r.Responding != 7 || r.ALStates != 0x08 || r.Err != nil {
		t.Errorf("result %+v, want the segment's answer", r)
	}
	if s := g.cnt.snapshot(); s.MismatchedAnswers != 1 || s.StaleFrames != 0 || s.WKCErrors != 0 {
		t.Errorf("stats %+v, want one mismatched answer and nothing else", s)
	}
}

// TestCyclicJunkIsNotALateAnswer: EtherCAT frames that answer nothing
// sent this cycle or the one before are counted by kind, never as late
// answers (a flood of junk made ecagent_late_answers_total count most
// cycles).
func TestCyclicJunkIsNotALateAnswer(t *testing.T) {
	cy, cnt, _ := testPostCyclic(t, maxLRWData, func(uint8) uint16 { return 8 })
	junk := func(src [6]byte, index uint8) []byte {
		var b wire.Builder
		_ = b.Reset(make([]byte, wire.MaxFrameLen), broadcastMAC, src)
		_, _ = b.Append(wire.APRD, index, 0, 2)
		return b.Bytes()
	}
	own := cy.bus.src
	stranger := [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	var r CycleResult
	cy.Post(time.Now())
	for i, frame := range [][]byte{junk(own, cy.frames[0].index+100), junk(stranger, cy.frames[0].index), {0x01, 0x02}} {
		if pending, _ := cy.receive(frame, &r, 1, 0); pending != 1 || r.Stale != 0 {
			t.Errorf("junk %d taken: %d frames still awaited, %d stale", i, pending, r.Stale)
		}
	}
	if s := cnt.snapshot(); s.StaleFrames != 0 || s.MismatchedAnswers != 1 || s.ForeignFrames != 1 || s.InvalidFrames != 1 {
		t.Errorf("stats %+v: want one mismatched, one foreign, one invalid frame and no late answer", s)
	}
	_ = cy.Collect()
}
