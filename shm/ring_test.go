package shm

import (
	"sync"
	"testing"
)

// pushCycles pushes samples numbered from..to-1 and returns how many fit.
func pushCycles(r *Ring[Sample], from, to uint64) int {
	n := 0
	for c := from; c < to; c++ {
		if r.Push(&Sample{Cycle: c, Wake: int64(c) * 10}) {
			n++
		}
	}
	return n
}

func TestRingOrderAndWrapAround(t *testing.T) {
	for _, kind := range segmentKinds {
		t.Run(kind.name, func(t *testing.T) {
			r := kind.make(t, smallLayout()).Samples() // 8 slots
			buf := make([]Sample, 5)
			next := uint64(0)
			pushed := uint64(0)
			// Batches of 3, 5 and 7 against reads of up to 5 wrap the
			// ring many times at every offset.
			for round := range 40 {
				batch := uint64(3 + 2*(round%3))
				if got := pushCycles(r, pushed, pushed+batch); got != int(batch) {
					t.Fatalf("round %d: pushed %d of %d into a drained ring", round, got, batch)
				}
				pushed += batch
				for next < pushed {
					n := r.Drain(buf)
					if n == 0 {
						t.Fatalf("round %d: Drain returned 0 with %d waiting", round, pushed-next)
					}
					for _, s := range buf[:n] {
						if s.Cycle != next || s.Wake != int64(next)*10 {
							t.Fatalf("round %d: got cycle %d wake %d, want cycle %d", round, s.Cycle, s.Wake, next)
						}
						next++
					}
					r.Commit()
				}
			}
			if r.Drops() != 0 || r.Pushed() != pushed || r.Committed() != pushed || r.Len() != 0 {
				t.Errorf("drops %d pushed %d committed %d len %d, want 0 %d %d 0",
					r.Drops(), r.Pushed(), r.Committed(), r.Len(), pushed, pushed)
			}
		})
	}
}

func TestRingNextAndDrainMix(t *testing.T) {
	r := newHeapSegment(t, smallLayout()).Samples()
	pushCycles(r, 0, 6)
	var s Sample
	buf := make([]Sample, 3)
	var got []uint64
	for {
		if r.Next(&s) {
			got = append(got, s.Cycle)
		}
		n := r.Drain(buf)
		for _, s := range buf[:n] {
			got = append(got, s.Cycle)
		}
		if n == 0 {
			break
		}
	}
	r.Commit()
	want := []uint64{0, 1, 2, 3, 4, 5}
	if len(got) != len(want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("read %v, want %v", got, want)
		}
	}
	if r.Next(&s) || r.Drain(buf) != 0 {
		t.Errorf("empty ring returned a record")
	}
}

// TestRingFullDropsNewest checks the drop policy: a full ring keeps what
// it holds, refuses new records and counts each refusal exactly.
func TestRingFullDropsNewest(t *testing.T) {
	for _, kind := range segmentKinds {
		t.Run(kind.name, func(t *testing.T) {
			r := kind.make(t, smallLayout()).Samples() // 8 slots
			if got := pushCycles(r, 0, 20); got != 8 {
				t.Fatalf("pushed %d of 20 into 8 slots, want 8", got)
			}
			if r.Drops() != 12 || r.Len() != 8 || r.Pushed() != 8 {
				t.Fatalf("drops %d len %d pushed %d, want 12 8 8", r.Drops(), r.Len(), r.Pushed())
			}
			// Reading without committing does not free a slot.
			var s Sample
			for range 3 {
				r.Next(&s)
			}
			if r.Push(&Sample{Cycle: 100}) || r.Drops() != 13 {
				t.Fatalf("push into a full, read but uncommitted ring succeeded (drops %d)", r.Drops())
			}
			r.Commit()
			if got := pushCycles(r, 100, 110); got != 3 || r.Drops() != 20 {
				t.Fatalf("after committing 3: pushed %d, drops %d, want 3, 20", got, r.Drops())
			}
			buf := make([]Sample, 16)
			n := r.Drain(buf)
			want := []uint64{3, 4, 5, 6, 7, 100, 101, 102}
			if n != len(want) {
				t.Fatalf("drained %d records, want %d", n, len(want))
			}
			for i, w := range want {
				if buf[i].Cycle != w {
					t.Errorf("record %d is cycle %d, want %d", i, buf[i].Cycle, w)
				}
			}
		})
	}
}

// TestRingResume checks the restart semantics: a consumer attaching later
// resumes at the last commit, and the records read but not committed are
// delivered again.
func TestRingResume(t *testing.T) {
	cycle, path := newFileSegment(t, smallLayout())
	pushCycles(cycle.Samples(), 0, 6)

	first, err := Attach(path)
	if err != nil {
		t.Fatal(err)
	}
	var s Sample
	for range 2 {
		first.Samples().Next(&s)
	}
	first.Samples().Commit()
	first.Samples().Next(&s) // read, never committed: the agent dies here
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	pushCycles(cycle.Samples(), 6, 20) // the cycle goes on; the ring fills
	second, err := Attach(path)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	r := second.Samples()
	buf := make([]Sample, 16)
	n := r.Drain(buf)
	if n != 8 || buf[0].Cycle != 2 || buf[7].Cycle != 9 {
		t.Fatalf("resumed with %d records, cycles %d..%d, want 8, 2..9", n, buf[0].Cycle, buf[max(n-1, 0)].Cycle)
	}
	if r.Drops() != 10 {
		t.Errorf("drops %d while no consumer committed, want 10", r.Drops())
	}
}

func TestRingDiscard(t *testing.T) {
	r := newHeapSegment(t, smallLayout()).Samples()
	pushCycles(r, 0, 5)
	var s Sample
	r.Next(&s)
	if got := r.Discard(); got != 4 {
		t.Errorf("Discard = %d, want the 4 unread records", got)
	}
	if r.Len() != 0 || r.Committed() != 5 {
		t.Errorf("after Discard: len %d committed %d, want 0 5", r.Len(), r.Committed())
	}
	pushCycles(r, 5, 6)
	if !r.Next(&s) || s.Cycle != 5 {
		t.Errorf("after Discard read %+v, want cycle 5", s)
	}
}

// TestRingCorruptPositions checks that a producer position moved by
// something other than a correct producer never makes the consumer read
// outside the ring or more than a ring's worth.
func TestRingCorruptPositions(t *testing.T) {
	r := newHeapSegment(t, smallLayout()).Samples()
	pushCycles(r, 0, 3)
	r.ctl.Prod.Store(1000)
	buf := make([]Sample, 64)
	if n := r.Drain(buf); n != r.Cap() {
		t.Errorf("drained %d records with the producer far ahead, want one ring (%d)", n, r.Cap())
	}
	r.ctl.Prod.Store(10)
	if n := r.Drain(buf); n != 0 {
		t.Errorf("drained %d records with the producer behind, want 0", n)
	}
	r.ctl.Prod.Store(12)
	if n := r.Drain(buf); n != 2 {
		t.Errorf("drained %d records after the producer moved on by 2, want 2", n)
	}
}

func TestCommandAndEventRings(t *testing.T) {
	s := newHeapSegment(t, smallLayout())
	cmds, events := s.Commands(), s.Events()
	for i := range uint64(4) {
		if !cmds.Push(&Command{Seq: i, Kind: CommandSetOutputs, Slave: 2, BitOffset: 3, BitLen: 1, Value: i & 1}) {
			t.Fatalf("command %d did not fit", i)
		}
	}
	if cmds.Push(&Command{Seq: 4}) || cmds.Drops() != 1 {
		t.Errorf("fifth command fitted 4 slots (drops %d)", cmds.Drops())
	}
	var c Command
	for i := range uint64(4) {
		if !cmds.Next(&c) || c.Seq != i || c.Kind != CommandSetOutputs || c.Value != i&1 {
			t.Fatalf("command %d read as %+v", i, c)
		}
		e := Event{Kind: EventCommandDone, Value: c.Seq, Cycle: 100 + i}
		e.SetText("applied")
		events.Push(&e)
	}
	cmds.Commit()
	var e Event
	for i := range uint64(2) {
		if !events.Next(&e) || e.Value != i || e.TextString() != "applied" {
			t.Fatalf("event %d read as %+v", i, e)
		}
	}
	if events.Next(&e) || events.Drops() != 2 {
		t.Errorf("events: a third record in 2 slots, or drops %d != 2", events.Drops())
	}
}

// TestRingConcurrent runs producer and consumer goroutines on a heap
// segment, where the race detector sees every access, and checks that
// every cycle arrives in order or is counted as dropped.
func TestRingConcurrent(t *testing.T) {
	const total = 200_000
	r := newHeapSegment(t, Layout{SampleSlots: 64, CommandSlots: 1, EventSlots: 1}).Samples()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pushCycles(r, 0, total)
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	got := drainAll(t, r, done)
	checkArrivals(t, got, r.Drops(), total)
}

// drainAll reads r until done is closed and then until it is empty,
// committing each batch, and returns the cycle numbers read.
func drainAll(t *testing.T, r *Ring[Sample], done <-chan struct{}) []uint64 {
	t.Helper()
	buf := make([]Sample, 32)
	var got []uint64
	finished := false
	for {
		n := r.Drain(buf)
		for _, s := range buf[:n] {
			got = append(got, s.Cycle)
		}
		r.Commit()
		if n > 0 {
			continue
		}
		if finished {
			return got
		}
		select {
		case <-done:
			finished = true
		default:
		}
	}
}

// checkArrivals checks that the cycles read are strictly increasing, that
// the gaps between them add up to the drops exactly, and that every
// pushed cycle was read or dropped.
func checkArrivals(t *testing.T, got []uint64, drops uint64, total uint64) {
	t.Helper()
	if len(got) == 0 {
		t.Fatalf("no sample arrived of %d", total)
	}
	var missing uint64
	expect := uint64(0)
	for i, c := range got {
		if c < expect {
			t.Fatalf("sample %d is cycle %d, want at least %d (out of order or repeated)", i, c, expect)
		}
		missing += c - expect
		expect = c + 1
	}
	missing += total - expect
	if missing != drops {
		t.Errorf("%d cycles missing, %d drops counted", missing, drops)
	}
	if uint64(len(got))+drops != total {
		t.Errorf("%d read + %d dropped != %d pushed", len(got), drops, total)
	}
	t.Logf("%d of %d read, %d dropped", len(got), total, drops)
}

func TestRingAllocs(t *testing.T) {
	s := newMemfdSegment(t, DefaultLayout())
	r := s.Samples()
	in := Sample{Cycle: 1}
	var out Sample
	buf := make([]Sample, 16)
	tests := []struct {
		name string
		f    func()
	}{
		{"Push+Next+Commit", func() { r.Push(&in); r.Next(&out); r.Commit() }},
		{"Push+Drain+Commit", func() { r.Push(&in); r.Push(&in); r.Drain(buf); r.Commit() }},
		{"Next on empty", func() { r.Next(&out) }},
		{"Command Push+Next", func() { s.Commands().Push(&Command{Seq: 1}); s.Commands().Next(&Command{}); s.Commands().Commit() }},
		{"Event SetText+Push+Next", func() {
			e := Event{Kind: EventNote}
			e.SetText("slave 3 left OP")
			s.Events().Push(&e)
			s.Events().Next(&e)
			s.Events().Commit()
		}},
	}
	for _, tt := range tests {
		if a := testing.AllocsPerRun(1000, tt.f); a != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tt.name, a)
		}
	}
	// The drop path of a full ring.
	for r.Push(&in) {
	}
	if a := testing.AllocsPerRun(1000, func() { r.Push(&in) }); a != 0 {
		t.Errorf("Push on a full ring: %v allocations per run, want 0", a)
	}
}

func BenchmarkPushNext(b *testing.B) {
	r := newMemfdSegment(b, DefaultLayout()).Samples()
	in := Sample{Cycle: 1, WKC: 3, ExpectedWKC: 3}
	var out Sample
	b.ReportAllocs()
	for b.Loop() {
		r.Push(&in)
		r.Next(&out)
		r.Commit()
	}
}

func BenchmarkPushDrainBatch64(b *testing.B) {
	r := newMemfdSegment(b, DefaultLayout()).Samples()
	in := Sample{Cycle: 1}
	buf := make([]Sample, 64)
	b.ReportAllocs()
	for b.Loop() {
		for range 64 {
			r.Push(&in)
		}
		r.Drain(buf)
		r.Commit()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/record")
}

// BenchmarkPushConcurrent measures Push with a consumer draining on
// another goroutine, as the cycle sees it.
func BenchmarkPushConcurrent(b *testing.B) {
	r := newMemfdSegment(b, DefaultLayout()).Samples()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]Sample, 256)
		for {
			select {
			case <-stop:
				return
			default:
			}
			r.Drain(buf)
			r.Commit()
		}
	}()
	in := Sample{Cycle: 1}
	b.ReportAllocs()
	for b.Loop() {
		r.Push(&in)
	}
	close(stop)
	wg.Wait()
}
