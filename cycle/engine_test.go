package cycle

import (
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
	"github.com/ecagent/ecagent/sim"
)

var referenceSet = []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}

// bus brings the reference set up over an in-process pipe and returns the
// master in OP, the simulated segment and a fresh shared-memory segment.
func bus(t testing.TB) (*master.Master, *sim.Segment, *shm.Segment) {
	t.Helper()
	m, seg := simbus.Start(t, referenceSet, master.Config{})
	mem, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	return m, seg, mem
}

func TestRunWritesOneSamplePerCycle(t *testing.T) {
	for _, pipelined := range []bool{false, true} {
		t.Run(map[bool]string{false: "wait", true: "pipelined"}[pipelined], func(t *testing.T) {
			runWritesOneSamplePerCycle(t, pipelined)
		})
	}
}

func runWritesOneSamplePerCycle(t *testing.T, pipelined bool) {
	m, seg, mem := bus(t)
	// Every 25th frame is dropped, so that lost frames are counted too.
	seg.Faults().DropEvery(25)
	// A generous period: the test checks bookkeeping, not timing, on a
	// shared machine.
	e := New(m, mem, Config{Period: 2 * time.Millisecond, Cycles: 200, KeepGC: true, RT: noRT(), Pipelined: pipelined})
	before := m.Stats()
	if n := e.Run(); n != 200 {
		t.Fatalf("ran %d cycles, want 200", n)
	}
	if e.pipelined != pipelined {
		t.Fatalf("pipelined %v, asked %v", e.pipelined, pipelined)
	}
	// Pipelined: one more exchange than cycles, the one Run drains.
	if got, want := m.Stats().Cycles-before.Cycles, uint64(200)+map[bool]uint64{false: 0, true: 1}[pipelined]; got != want {
		t.Errorf("%d exchanges, want %d", got, want)
	}
	var s shm.Sample
	var next uint64
	var lost int
	samples := mem.Samples()
	for samples.Next(&s) {
		if s.Cycle != next {
			t.Fatalf("sample for cycle %d, want %d", s.Cycle, next)
		}
		next++
		if s.ExpectedWKC != 8 {
			t.Errorf("cycle %d: expected WKC %d, want 8", s.Cycle, s.ExpectedWKC)
		}
		if s.Flags&shm.SampleLostFrame != 0 {
			lost++
		}
		ok := s.Flags&(shm.SampleLostFrame|shm.SampleWKCMismatch) == 0
		if ok && (s.WKC != 8 || s.Recv <= s.Send) {
			t.Errorf("cycle %d: wkc %d, send %d recv %d", s.Cycle, s.WKC, s.Send, s.Recv)
		}
		// Waiting, the cycle sends after it woke; pipelined, it reports
		// the frames the cycle before sent, answered before it woke.
		inOrder := s.Deadline <= s.Wake && s.Wake <= s.Send && s.Send <= s.End
		if pipelined {
			inOrder = s.Deadline <= s.Wake && s.Send < s.Wake && s.Wake <= s.End && (!ok || s.Recv <= s.Wake)
		}
		if !inOrder {
			t.Errorf("cycle %d: times out of order: deadline %d wake %d send %d recv %d end %d",
				s.Cycle, s.Deadline, s.Wake, s.Send, s.Recv, s.End)
		}
	}
	samples.Commit()
	if next != 200 || samples.Drops() != 0 {
		t.Errorf("%d samples, %d drops", next, samples.Drops())
	}
	// The simulator answers within far less than a period, but a loaded
	// host holds its goroutine off for whole periods (14 of 200 lost in
	// one run): the check is that the frames are taken, not the timing.
	if lost < 200/25 || lost > 100 {
		t.Errorf("%d of 200 cycles lost their frame, want the %d dropped and at most 100", lost, 200/25)
	}
	// One frame per cycle: the heartbeat's frame totals are the cycles
	// and the cycles that lost their frame.
	if f := m.Cyclic().Frames(); f != 1 {
		t.Fatalf("%d frames per cycle, want 1", f)
	}
	if sent, lostFrames := mem.Heartbeat().Frames(); sent != 200 || lostFrames != uint64(lost) {
		t.Errorf("heartbeat counts %d frames sent, %d lost; want 200 and the %d cycles that lost theirs", sent, lostFrames, lost)
	}
	if c, _, ok := mem.Heartbeat().Read(); !ok || c != 199 {
		t.Errorf("heartbeat at cycle %d (ok %v), want 199", c, ok)
	}
	img := make([]byte, mem.Image().Cap())
	if c, ok := mem.Image().Snapshot(img); !ok || c != 199 {
		t.Errorf("image snapshot of cycle %d (ok %v)", c, ok)
	}
	var ev shm.Event
	if !mem.Events().Next(&ev) || ev.Kind != shm.EventCycleStarted {
		t.Errorf("first event %v, want cycle-started", ev.Kind)
	}
}

func TestCommandsApplyAtCycleBoundary(t *testing.T) {
	m, seg, mem := bus(t)
	cmds := []shm.Command{
		{Seq: 1, Kind: shm.CommandSetOutputs, Slave: 1, BitOffset: 0, BitLen: 4, Value: 0b1010},
		{Seq: 2, Kind: shm.CommandSetOutputs, Slave: 2, BitOffset: 1, BitLen: 1, Value: 1},
		{Seq: 3, Kind: shm.CommandSetOutputs, Slave: 3, BitOffset: 0, BitLen: 1, Value: 1},        // an input terminal
		{Seq: 4, Kind: shm.CommandSetOutputs, Slave: 99, BitOffset: 0, BitLen: 1, Value: 1},       // no such slave
		{Seq: 5, Kind: shm.CommandRequestState, Slave: 0, Value: 2},                               // not in the cycle
		{Seq: 6, Kind: shm.CommandSetOutputs, Slave: 5, BitOffset: 16, BitLen: 16, Value: 0x1234}, // EL4132 channel 2
	}
	for i := range cmds {
		if !mem.Commands().Push(&cmds[i]) {
			t.Fatal("command ring full")
		}
	}
	e := New(m, mem, Config{Period: 2 * time.Millisecond, Cycles: 5, KeepGC: true, RT: noRT()})
	e.Run()
	results := map[uint64]shm.EventKind{}
	var ev shm.Event
	for mem.Events().Next(&ev) {
		if ev.Kind == shm.EventCommandDone || ev.Kind == shm.EventCommandRejected {
			results[ev.Value] = ev.Kind
		}
	}
	want := map[uint64]shm.EventKind{1: shm.EventCommandDone, 2: shm.EventCommandDone, 3: shm.EventCommandRejected,
		4: shm.EventCommandRejected, 5: shm.EventCommandRejected, 6: shm.EventCommandDone}
	for seq, k := range want {
		if results[seq] != k {
			t.Errorf("command %d: %v, want %v", seq, results[seq], k)
		}
	}
	// The simulator takes the outputs when it processes the frames the
	// cycles sent: a host stall can hold its goroutine past the end of
	// Run, never make it skip them.
	devs := seg.Devices()
	var el1, el2, el4 []byte
	for deadline := time.Now().Add(5 * time.Second); ; {
		el1, el2, el4 = devs[1].Outputs(), devs[2].Outputs(), devs[5].Outputs()
		if el1[0]&0x0F == 0b1010 && el2[0]&0x0F == 0b0010 && len(el4) >= 4 && el4[2] == 0x34 && el4[3] == 0x12 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if el1[0]&0x0F != 0b1010 {
		t.Errorf("EL2004 #1 outputs %08b, want xxxx1010", el1[0])
	}
	if el2[0]&0x0F != 0b0010 {
		t.Errorf("EL2004 #2 outputs %08b, want xxxx0010", el2[0])
	}
	if len(el4) < 4 || el4[2] != 0x34 || el4[3] != 0x12 {
		t.Errorf("EL4132 outputs % x, want channel 2 = 0x1234", el4)
	}
}

// TestOverrunSkipsWithoutBurst: a cycle that overruns by 10.5 periods (its
// job stalls) is flagged as overrun, the next cycle counts the deadlines
// skipped — exactly those that passed before the stalled cycle ended — and
// the schedule goes on a whole number of periods later, after that end:
// no catch-up burst. The host can stall the test's thread too (it runs
// without real-time priority), so other cycles may overrun; what must hold
// for every one of them is the same accounting: each overrun flagged, each
// skipped deadline counted on the next sample, and consecutive deadlines
// exactly one period plus the skipped ones apart.
func TestOverrunSkipsWithoutBurst(t *testing.T) {
	m, _, mem := bus(t)
	const p = int64(time.Millisecond)
	const cycles = 20
	var s shm.Sample
	// The first cycle stalls for 10.5 periods inside its job.
	e2 := New(m, mem, Config{Period: time.Duration(p), Cycles: cycles, KeepGC: true, RT: noRT()})
	e2.cycle = 100
	stalled := false
	e2.stall = func() {
		if !stalled {
			stalled = true
			time.Sleep(10500 * time.Microsecond)
		}
	}
	e2.Run()
	var got []shm.Sample
	for mem.Samples().Next(&s) {
		got = append(got, s)
	}
	if len(got) != cycles {
		t.Fatalf("%d samples, want %d", len(got), cycles)
	}
	if got[0].Flags&shm.SampleOverrun == 0 {
		t.Errorf("stalled cycle not flagged as overrun: %v", got[0].Flags)
	}
	if got[1].Skipped < 10 {
		t.Errorf("the cycle after the stall skipped %d deadlines, want ≥ 10 (the stall took 10.5 periods)", got[1].Skipped)
	}
	hostSkips := 0
	for i := 1; i < len(got); i++ {
		prev, s := &got[i-1], &got[i]
		overran := prev.Flags&shm.SampleOverrun != 0
		skipped := int64(s.Skipped)
		// Counted: a sample skips deadlines exactly when the one before
		// overran, and says so.
		if overran != (skipped > 0) || (skipped > 0) != (s.Flags&shm.SampleSkipped != 0) {
			t.Errorf("cycle %d: overrun %v, next cycle skipped %d (flags %v)", prev.Cycle, overran, skipped, s.Flags)
		}
		// No deadline lost or invented: consecutive deadlines are one
		// period and the skipped ones apart.
		if d := s.Deadline - prev.Deadline; d != (1+skipped)*p {
			t.Errorf("cycle %d: deadline %d ns after the one before, want %d (1 + %d skipped periods)", s.Cycle, d, (1+skipped)*p, skipped)
		}
		// Exactly the deadlines that passed: a cycle that overran is
		// followed by the first deadline after its end (no burst of
		// cycles catching up, none skipped beyond); one that did not
		// ended by the next deadline.
		if overran && (s.Deadline <= prev.End || s.Deadline > prev.End+p) {
			t.Errorf("cycle %d ended at %d, the next is scheduled at %d: want the first deadline after the end", prev.Cycle, prev.End, s.Deadline)
		}
		if !overran && prev.End > s.Deadline {
			t.Errorf("cycle %d ended at %d after the next deadline %d without being flagged as overrun", prev.Cycle, prev.End, s.Deadline)
		}
		if i > 1 && skipped > 0 {
			hostSkips++
			t.Logf("cycle %d skipped %d deadlines after a host stall (cycle %d woke %v late, ended %v after its deadline)",
				s.Cycle, skipped, prev.Cycle, time.Duration(prev.Wake-prev.Deadline), time.Duration(prev.End-prev.Deadline))
		}
	}
	if hostSkips > 0 {
		t.Logf("%d cycles beside the stalled one overran: the host held the test's thread; each was counted", hostSkips)
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	for _, pipelined := range []bool{false, true} {
		t.Run(map[bool]string{false: "wait", true: "pipelined"}[pipelined], func(t *testing.T) {
			steadyStateAllocatesNothing(t, pipelined)
		})
	}
}

func steadyStateAllocatesNothing(t *testing.T, pipelined bool) {
	m, _, mem := bus(t)
	e := New(m, mem, Config{Period: time.Millisecond, KeepGC: true, RT: noRT()})
	if e.pipelined = pipelined; pipelined {
		m.Post(time.Now().Add(time.Millisecond))
	}
	cmd := shm.Command{Seq: 1, Kind: shm.CommandSetOutputs, Slave: 1, BitLen: 4, Value: 5}
	allocs := testing.AllocsPerRun(2000, func() {
		cmd.Seq++
		mem.Commands().Push(&cmd)
		end := e.step(rt.Now(), 0)
		e.publish(end)
		mem.Samples().Discard()
		mem.Events().Discard()
	})
	if allocs != 0 {
		t.Errorf("a cycle allocates %v times", allocs)
	}
}

func BenchmarkCycleStep(b *testing.B) {
	m, _, mem := bus(b)
	e := New(m, mem, Config{Period: time.Millisecond, KeepGC: true, RT: noRT()})
	b.ReportAllocs()
	for b.Loop() {
		end := e.step(rt.Now(), 0)
		e.publish(end)
		if mem.Samples().Len() > 1000 {
			mem.Samples().Discard()
		}
	}
}
