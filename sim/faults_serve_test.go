package sim

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// TestFaultDelayOverServe checks that Serve holds back exactly the
// answers a delay fault selects.
func TestFaultDelayOverServe(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL1004"})
	a, b := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- seg.Serve(ctx, b) }()
	rx := make([]byte, link.MaxFrameSize)
	late := func() bool {
		if err := a.Send(frameOf(t, phys(wire.BRD, 0, 0, []byte{0}))); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Recv(rx, time.Now().Add(15*time.Millisecond)); err == nil {
			return false
		}
		if _, err := a.Recv(rx, time.Now().Add(time.Second)); err != nil {
			t.Fatalf("delayed answer never came: %v", err)
		}
		return true
	}
	seg.Faults().Delay(40*time.Millisecond, 2)
	var got []bool
	for range 4 {
		got = append(got, late())
	}
	seg.Faults().DelayOff()
	got = append(got, late())
	want := []bool{false, true, false, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("late answers %v, want %v", got, want)
		}
	}
	// While an answer is held back, the segment still serves others.
	seg.Faults().Delay(200*time.Millisecond, 1)
	if err := a.Send(frameOf(t, phys(wire.BRD, 0, 0, []byte{0}))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	seg.Faults().Counts()
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Counts blocked for %v during a delay", d)
	}
	if c := seg.Faults().Counts(); c.Delayed != 3 {
		t.Errorf("Delayed = %d, want 3", c.Delayed)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// flakyLink fails with a link error while down is set.
type flakyLink struct {
	link.Link
	fails int
}

func (l *flakyLink) Recv(buf []byte, deadline time.Time) (int, error) {
	if l.fails > 0 {
		l.fails--
		return 0, &link.OpError{Op: "recv", Link: "flaky", Err: syscall.ENETDOWN}
	}
	return l.Link.Recv(buf, deadline)
}

func TestServeRidesThroughLinkDown(t *testing.T) {
	seg := newSeg(t, []string{"EK1100"})
	a, b := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- seg.Serve(ctx, &flakyLink{Link: b, fails: 5}) }()
	if err := a.Send(frameOf(t, phys(wire.BRD, 0, 0, []byte{0}))); err != nil {
		t.Fatal(err)
	}
	rx := make([]byte, link.MaxFrameSize)
	if _, err := a.Recv(rx, time.Now().Add(2*time.Second)); err != nil {
		t.Fatalf("no answer after the link came back: %v", err)
	}
	if st := seg.Stats(); st.LinkErrs != 5 {
		t.Errorf("LinkErrs = %d, want 5", st.LinkErrs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestProcessWithFaultsArmedAllocatesNothing(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL1004", "EL2004"})
	address(t, seg)
	f := seg.Faults()
	f.DropPercent(10)
	f.DropEvery(7)
	f.Delay(time.Millisecond, 3)
	f.CorruptWKC(1 << 30)
	f.CorruptLength(1 << 30)
	if err := f.Disappear(2); err != nil {
		t.Fatal(err)
	}
	tmpl := frameOf(t, phys(wire.BRD, 0, 0, []byte{0}), logical(wire.LRW, 0x10000, make([]byte, 4)))
	frame := make([]byte, len(tmpl))
	allocs := testing.AllocsPerRun(1000, func() {
		copy(frame, tmpl)
		seg.process(frame, true, -1)
	})
	if allocs != 0 {
		t.Errorf("Process with faults armed: %v allocations, want 0", allocs)
	}
}

func BenchmarkProcessWithFaults(b *testing.B) {
	seg := newSeg(b, []string{"EK1100", "EL1004", "EL2004"})
	address(b, seg)
	f := seg.Faults()
	f.DropPercent(1)
	f.DelayRandom(time.Microsecond, time.Millisecond, 2)
	f.CorruptWKC(1 << 30)
	tmpl := frameOf(b, phys(wire.BRD, 0, 0, []byte{0}), logical(wire.LRW, 0x10000, make([]byte, 4)))
	frame := make([]byte, len(tmpl))
	b.ReportAllocs()
	for b.Loop() {
		copy(frame, tmpl)
		seg.process(frame, true, -1)
	}
}

// TestFaultsWhileServing arms and disarms every fault from another
// goroutine while Serve answers frames (run with -race).
func TestFaultsWhileServing(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL1004", "EL3204"})
	a, b := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- seg.Serve(ctx, b) }()
	stop := make(chan struct{})
	armed := make(chan struct{})
	var rounds atomic.Int64
	go func() {
		defer close(armed)
		f := seg.Faults()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i > 0 {
				rounds.Add(1)
			}
			f.DropPercent(5)
			f.DropEvery(3)
			f.Delay(time.Microsecond, 2)
			f.CorruptWKC(1)
			f.CorruptLength(1)
			_ = f.Disappear(1)
			_ = f.Return(1)
			_ = f.OffsetJump(0, 10)
			_ = f.DriftJump(0, float64(i%50))
			f.DropOff()
			f.DelayOff()
			f.Counts()
		}
	}()
	rx := make([]byte, link.MaxFrameSize)
	frame := frameOf(t, phys(wire.BRD, 0, 0, []byte{0}))
	for range 200 {
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
		_, _ = a.Recv(rx, time.Now().Add(20*time.Millisecond))
	}
	// A loaded host may not have run the other goroutine yet: let it
	// finish a round before stopping it.
	for deadline := time.Now().Add(5 * time.Second); rounds.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	<-armed
	for deadline := time.Now().Add(5 * time.Second); seg.Stats().Frames < 200 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	c := seg.Faults().Counts()
	if c.Disappeared != c.Returned || c.Disappeared == 0 {
		t.Errorf("counts %+v", c)
	}
	if st := seg.Stats(); st.Frames != 200 || st.Answered+st.Dropped != 200 {
		t.Errorf("stats %+v", st)
	}
}
