package master

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/realtime/monotime"
	"github.com/ecagent/ecagent/master/link"
)

// lateRig is a pipelined exchange whose segment is the test: it reads the
// frames each Post sends from the far end of a pipe and decides what comes
// back, and when. A pipe delivers a frame when it is sent, so what the test
// sent before Collect is what Collect sees.
type lateRig struct {
	t    testing.TB
	cy   *Cyclic
	cnt  *counters
	near *link.PipeEnd // the master's end of the pipe
	far  *link.PipeEnd
	buf  []byte
}

// newLateRig builds the reference layout's exchange with LRWs of at most
// maxData bytes (maxLRWData: one frame; 4: three).
func newLateRig(t testing.TB, maxData int) *lateRig {
	t.Helper()
	l, err := mapProcessData(referenceSet(), maxData)
	if err != nil {
		t.Fatal(err)
	}
	a, far := link.NewPipe()
	t.Cleanup(func() { _ = a.Close(); _ = far.Close() })
	c := &counters{}
	bus := newBus(a, 10*time.Millisecond, 0, c)
	cy := newCyclic(bus, &acyclicQueue{}, newProcessImage(l.outBytes, l.inBytes), l, 2*time.Second, monotime.Now, c)
	return &lateRig{t: t, cy: cy, cnt: c, near: a, far: far, buf: make([]byte, link.MaxFrameSize)}
}

// post runs Post and returns the frames it sent, as the segment got them.
func (g *lateRig) post() [][]byte {
	g.t.Helper()
	g.cy.Post(time.Now().Add(time.Millisecond))
	var sent [][]byte
	for range g.cy.postedPending + g.cy.postedExtra {
		n, err := g.far.Recv(g.buf, time.Now().Add(time.Second))
		if err != nil {
			g.t.Fatal(err)
		}
		sent = append(sent, bytes.Clone(g.buf[:n]))
	}
	return sent
}

// send hands frames to the master's end.
func (g *lateRig) send(frames ...[]byte) {
	g.t.Helper()
	for _, f := range frames {
		if err := g.far.Send(f); err != nil {
			g.t.Fatal(err)
		}
	}
}

// segmentAnswer is what a segment of every slave in OP makes of a frame
// the master sent: the source's locally administered bit set (ESC port
// 0), each datagram taken part in.
func segmentAnswer(t testing.TB, sent []byte) []byte {
	t.Helper()
	out := bytes.Clone(sent)
	out[6] |= 0x02
	var f wire.Frame
	if err := f.Decode(out); err != nil {
		t.Fatal(err)
	}
	it := f.Datagrams()
	var d wire.Datagram
	for it.Next(&d) {
		d.SetWKC(1)
		if d.Command == wire.BRD {
			d.Data[0] = 0x08
		}
	}
	return out
}

// mutated returns a copy of frame with its first datagram changed by fn.
func mutated(t testing.TB, frame []byte, fn func(d *wire.Datagram)) []byte {
	t.Helper()
	out := bytes.Clone(frame)
	_, d := firstDatagram(t, out)
	fn(&d)
	return out
}

// firstDatagram decodes frame and returns it with its first datagram,
// whose data and working counter are frame's bytes.
func firstDatagram(t testing.TB, frame []byte) (wire.Frame, wire.Datagram) {
	t.Helper()
	var f wire.Frame
	if err := f.Decode(frame); err != nil {
		t.Fatal(err)
	}
	it := f.Datagrams()
	var d wire.Datagram
	it.Next(&d)
	return f, d
}

// reshaped returns frame's first datagram alone in a frame of its own,
// with n data bytes: the same source, command, index and address.
func reshaped(t testing.TB, frame []byte, n int) []byte {
	t.Helper()
	f, d := firstDatagram(t, frame)
	var b wire.Builder
	_ = b.Reset(make([]byte, wire.MaxFrameLen), broadcastMAC, [6]byte(f.Source()))
	data, err := b.Append(d.Command, d.Index, d.Address, n)
	if err != nil {
		t.Fatal(err)
	}
	copy(data, d.Data)
	return b.Bytes()
}

// TestCyclicLateAnswerMatchedAsStrictlyAsAnAnswer: a frame that names a
// lost frame's index and first command but not its datagrams (another
// address, another length, a datagram missing or changed), a second copy
// of a late answer and a copy of an answer taken in time are junk
// (mismatched), not late answers; only the segment's answer to the lost
// frame, once, is. Junk with the master's address, a recent index and an
// LRW made ecagent_late_answers_total exceed the lost frames.
func TestCyclicLateAnswerMatchedAsStrictlyAsAnAnswer(t *testing.T) {
	g := newLateRig(t, maxLRWData)
	lost := g.post()[0]
	if r := g.cy.Collect(); r.Lost != 1 {
		t.Fatalf("the first cycle: %+v, want its frame lost", r)
	}
	late := segmentAnswer(t, lost)
	lrw := firstDataLen(t, lost)
	now := g.post()[0]
	answer := segmentAnswer(t, now)

	junk := []struct {
		name  string
		frame []byte
	}{
		{"the LRW's address changed", mutated(t, late, func(d *wire.Datagram) { d.SetAddress(d.Address + 1) })},
		{"the LRW alone", reshaped(t, late, lrw)},
		{"the LRW alone, 2 bytes longer", reshaped(t, late, lrw+2)},
		{"the AL status read at another register", func() []byte {
			f := bytes.Clone(late)
			// The second datagram's ADO: after the LRW (header, data, WKC)
			// and the BRD's command, index and ADP.
			off := wire.EthernetHeaderLen + wire.HeaderLen + wire.DatagramOverhead + lrw + 4
			binary.LittleEndian.PutUint16(f[off:], 0x0134)
			return f
		}()},
	}
	var r CycleResult
	for _, j := range junk {
		before := g.cnt.snapshot()
		if pending, _ := g.cy.receive(j.frame, &r, 1, 0); pending != 1 {
			t.Fatalf("%s: taken as this cycle's answer", j.name)
		}
		if s := g.cnt.snapshot(); s.StaleFrames != before.StaleFrames || s.MismatchedAnswers != before.MismatchedAnswers+1 {
			t.Errorf("%s: stale %d → %d, mismatched %d → %d; want it mismatched, not a late answer",
				j.name, before.StaleFrames, s.StaleFrames, before.MismatchedAnswers, s.MismatchedAnswers)
		}
	}
	if g.cy.receive(late, &r, 1, 0); r.Stale != 1 || g.cnt.snapshot().StaleFrames != 1 {
		t.Fatalf("the segment's late answer: %d late in the result, %d stale frames; want 1, 1", r.Stale, g.cnt.snapshot().StaleFrames)
	}
	before := g.cnt.snapshot()
	if g.cy.receive(late, &r, 1, 0); r.Stale != 1 || g.cnt.snapshot().StaleFrames != 1 || g.cnt.snapshot().MismatchedAnswers != before.MismatchedAnswers+1 {
		t.Errorf("the late answer again: %d late in the result, %+v; want a mismatched frame", r.Stale, g.cnt.snapshot())
	}
	g.send(answer)
	if r := g.cy.Collect(); r.Lost != 0 || r.Stale != 0 {
		t.Fatalf("the second cycle: %+v, want its answer taken", r)
	}

	third := g.post()[0]
	g.send(answer, segmentAnswer(t, third)) // a copy of the answer taken, then the answer
	before = g.cnt.snapshot()
	r = g.cy.Collect()
	if r.Stale != 0 || r.Lost != 0 {
		t.Errorf("the third cycle: %+v, want its answer and no late one", r)
	}
	if s := g.cnt.snapshot(); s.StaleFrames != before.StaleFrames || s.MismatchedAnswers != before.MismatchedAnswers+1 {
		t.Errorf("a copy of an answer taken in time: %+v before, %+v after; want it mismatched", before, s)
	}
	if s := g.cnt.snapshot(); s.StaleFrames != 1 || s.LateFrames != 1 || s.LostFrames != 1 {
		t.Errorf("%d late answers (%d to frames counted lost) to %d lost frames, want 1, 1, 1", s.StaleFrames, s.LateFrames, s.LostFrames)
	}
}

// firstDataLen returns the length of the data of frame's first datagram.
func firstDataLen(t testing.TB, frame []byte) int {
	t.Helper()
	_, d := firstDatagram(t, frame)
	return len(d.Data)
}

// TestCyclicLateAnswersCountOncePerLostCycle: a cycle of three frames
// that loses all three counts once in the cycles that lost a frame
// (CycleResult.Lost > 0), and its late answers count once in the cycles
// with a late answer (CycleResult.Stale), however many cycles they take
// to come: otherwise ecagent_late_answers_total could exceed
// ecagent_lost_frames_total, and lost − late is no longer the cycles
// whose frames were dropped.
func TestCyclicLateAnswersCountOncePerLostCycle(t *testing.T) {
	g := newLateRig(t, 4)
	lost := g.post()
	if len(lost) != 3 {
		t.Fatalf("%d frames a cycle, want 3", len(lost))
	}
	if r := g.cy.Collect(); r.Lost != 3 {
		t.Fatalf("the first cycle: %+v, want 3 frames lost", r)
	}
	lateCycles := 0
	for i, late := range lost {
		now := g.post()
		g.send(segmentAnswer(t, late))
		for _, f := range now {
			g.send(segmentAnswer(t, f))
		}
		r := g.cy.Collect()
		if r.Lost != 0 {
			t.Fatalf("cycle %d: %+v, want every frame back", i+2, r)
		}
		if r.Stale > 0 {
			lateCycles++
		}
	}
	s := g.cnt.snapshot()
	if s.StaleFrames != 3 || s.LateFrames != 3 || s.LostFrames != 3 {
		t.Errorf("%d late answers (%d to frames counted lost) to %d lost frames, counted frame by frame; want 3, 3, 3",
			s.StaleFrames, s.LateFrames, s.LostFrames)
	}
	if lateCycles != 1 {
		t.Errorf("%d cycles with a late answer after 1 cycle that lost frames, want 1", lateCycles)
	}
}

// TestCyclicLateAnswerOfAnUncountedExchange: an exchange that bring-up
// runs (not counted: no CycleResult.Lost in the statistics) whose answer
// comes in a counted cycle is a late answer in the master's statistics
// (StaleFrames), not in the cycle's result, which counts late answers to
// the frames the cycles counted lost.
func TestCyclicLateAnswerOfAnUncountedExchange(t *testing.T) {
	g := newLateRig(t, maxLRWData)
	r := g.cy.exchange(time.Now())
	if r.Lost != 1 {
		t.Fatalf("bring-up's exchange: %+v, want its frame lost", r)
	}
	n, err := g.far.Recv(g.buf, time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	late := segmentAnswer(t, g.buf[:n])
	now := g.post()[0]
	g.send(late, segmentAnswer(t, now))
	if r := g.cy.Collect(); r.Stale != 0 || r.Lost != 0 {
		t.Errorf("the cycle after: %+v, want no late answer in its result", r)
	}
	if s := g.cnt.snapshot(); s.StaleFrames != 1 || s.LateFrames != 0 || s.MismatchedAnswers != 0 || s.LostFrames != 0 {
		t.Errorf("stats %+v, want one stale frame, not late to a frame counted lost", s)
	}
}

// TestCyclicLateAnswerAfterItsIndexCameBack: once the index of a lost
// frame has been handed out again (256 frames later), an answer with it
// cannot be told from junk; it is not a late answer.
func TestCyclicLateAnswerAfterItsIndexCameBack(t *testing.T) {
	g := newLateRig(t, maxLRWData)
	late := segmentAnswer(t, g.post()[0])
	_ = g.cy.Collect()
	for range 256 {
		for _, f := range g.post() {
			g.send(segmentAnswer(t, f))
		}
		_ = g.cy.Collect()
	}
	now := g.post()[0]
	g.send(late, segmentAnswer(t, now))
	if r := g.cy.Collect(); r.Stale != 0 || r.Lost != 0 {
		t.Errorf("%+v, want no late answer", r)
	}
	if s := g.cnt.snapshot(); s.StaleFrames != 0 || s.MismatchedAnswers != 1 {
		t.Errorf("stats %+v, want the old answer mismatched", s)
	}
}

// FuzzCyclicLateAnswer feeds a frame, twice, to an exchange whose
// previous cycle lost its frame: whatever the frame, each copy lands in
// exactly one place (taken as the answer, a late answer, invalid,
// foreign or mismatched), the lost frame is late at most once, and the
// cycle's result counts at most one late answer.
func FuzzCyclicLateAnswer(f *testing.F) {
	g := newLateRig(f, maxLRWData)
	lost := g.post()[0]
	_ = g.cy.Collect()
	now := g.post()[0]
	late := segmentAnswer(f, lost)
	f.Add(late)
	f.Add(segmentAnswer(f, now))
	f.Add(lost)
	f.Add(mutated(f, late, func(d *wire.Datagram) { d.SetAddress(d.Address + 0x100) }))
	f.Add(reshaped(f, late, firstDataLen(f, late)))
	f.Add(late[:20])
	f.Fuzz(func(t *testing.T, frame []byte) {
		g := newLateRig(t, maxLRWData)
		_ = g.post()
		_ = g.cy.Collect() // the first frame (index 1) lost
		_ = g.post()       // the second (index 2) in flight
		sum := func(s Stats) uint64 {
			return s.StaleFrames + s.InvalidFrames + s.ForeignFrames + s.MismatchedAnswers
		}
		before := g.cnt.snapshot()
		var r CycleResult
		pending, _ := g.cy.receive(frame, &r, 1, 0)
		pending, _ = g.cy.receive(frame, &r, pending, 0)
		after := g.cnt.snapshot()
		taken := 1 - pending
		if taken < 0 || taken > 1 {
			t.Fatalf("taken %d times", taken)
		}
		if moved := sum(after) - sum(before); moved+uint64(taken) != 2 {
			t.Errorf("2 copies: %d taken, %d counted (%+v)", taken, moved, after)
		}
		if after.StaleFrames > 1 || after.LateFrames != after.StaleFrames || r.Stale > 1 {
			t.Errorf("one lost frame, %d late answers (%d late frames), %d in the result", after.StaleFrames, after.LateFrames, r.Stale)
		}
	})
}

// TestCyclicLateAnswerAllocatesNothing: a lost frame (copied for its late
// answer), its late answer and junk cost the cycle no allocation.
func TestCyclicLateAnswerAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	g := newLateRig(t, 4)
	buf := make([]byte, link.MaxFrameSize)
	var sent [8][]byte
	for i := range sent {
		sent[i] = make([]byte, link.MaxFrameSize)
	}
	junk := reshaped(t, segmentAnswer(t, g.post()[0]), 6)
	_ = g.cy.Collect()
	allocs := testing.AllocsPerRun(200, func() {
		// A cycle whose frames are lost, then one that takes their late
		// answers, its own and a junk frame.
		g.cy.Post(time.Now().Add(time.Millisecond))
		n := 0
		for range g.cy.postedPending {
			m, _ := g.far.Recv(buf, time.Now().Add(time.Second))
			sent[n] = sent[n][:copy(sent[n][:cap(sent[n])], buf[:m])]
			sent[n][6] |= 0x02
			n++
		}
		_ = g.cy.Collect()
		g.cy.Post(time.Now().Add(time.Millisecond))
		for range g.cy.postedPending {
			m, _ := g.far.Recv(buf, time.Now().Add(time.Second))
			buf[6] |= 0x02
			_ = g.far.Send(buf[:m])
		}
		for _, f := range sent[:n] {
			_ = g.far.Send(f)
		}
		_ = g.far.Send(junk)
		_ = g.cy.Collect()
	})
	if allocs != 0 {
		t.Errorf("a lost cycle and its late answers allocate %v times", allocs)
	}
	if s := g.cnt.snapshot(); s.LateFrames == 0 || s.MismatchedAnswers == 0 {
		t.Errorf("stats %+v: want late answers and junk taken in", s)
	}
}
