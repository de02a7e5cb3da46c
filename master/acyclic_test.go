package master_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/sim"
)

// cycler runs the cyclic exchange in its own goroutine as the cycle engine
// would, owning the link: every Bus transaction of the master is queued
// for it (QueueAcyclic). inExchange is true while it exchanges; a test
// that must see no frame for a moment holds pause.
type cycler struct {
	stop       chan struct{}
	done       chan struct{}
	cycles     atomic.Int64
	lastWKC    atomic.Int64
	inExchange atomic.Bool
	pause      sync.Mutex
}

// startCycle hands m's link to a cycle that exchanges every period (at
// once again for 0) and takes it back when the test ends.
func startCycle(t *testing.T, m *master.Master, period time.Duration) *cycler {
	t.Helper()
	c := &cycler{stop: make(chan struct{}), done: make(chan struct{})}
	m.QueueAcyclic(true, max(period, time.Millisecond))
	go func() {
		defer close(c.done)
		for {
			select {
			case <-c.stop:
				return
			default:
			}
			c.pause.Lock()
			c.inExchange.Store(true)
			// A lost frame waits 20 ms, well within the queue's wait.
			r := m.ExchangeUntil(time.Now().Add(20 * time.Millisecond))
			c.inExchange.Store(false)
			c.pause.Unlock()
			c.lastWKC.Store(int64(r.WKC))
			c.cycles.Add(1)
			time.Sleep(period)
		}
	}()
	t.Cleanup(func() {
		c.halt()
		m.QueueAcyclic(false, 0)
	})
	return c
}

// halt stops the cycle and waits for it; later calls do nothing.
func (c *cycler) halt() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

// waitWKC waits until a cycle's working counter is want.
func (c *cycler) waitWKC(t *testing.T, want uint16, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for c.lastWKC.Load() != int64(want) {
		if time.Now().After(deadline) {
			t.Fatalf("cyclic working counter %d, want %d within %v", c.lastWKC.Load(), want, within)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitWKCBelow waits until a cycle's working counter drops below whole.
func (c *cycler) waitWKCBelow(t *testing.T, whole uint16, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for c.lastWKC.Load() >= int64(whole) {
		if time.Now().After(deadline) {
			t.Fatalf("cyclic working counter %d, want below %d within %v", c.lastWKC.Load(), whole, within)
		}
		time.Sleep(time.Millisecond)
	}
}

// segmentLink is a link to a simulated segment that processes each frame
// synchronously in Send; the segment behind it can be swapped, as if
// another device were plugged in. onSend, if set, sees every frame sent.
type segmentLink struct {
	mu      sync.Mutex
	seg     *sim.Segment
	onSend  func(frame []byte)
	answers chan []byte
}

func newSegmentLink(seg *sim.Segment) *segmentLink {
	return &segmentLink{seg: seg, answers: make(chan []byte, 64)}
}

func (l *segmentLink) swap(seg *sim.Segment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seg = seg
}

func (l *segmentLink) Send(frame []byte) error {
	l.mu.Lock()
	seg, hook := l.seg, l.onSend
	l.mu.Unlock()
	if hook != nil {
		hook(frame)
	}
	buf := append([]byte(nil), frame...)
	if seg.Process(buf) {
		l.answers <- buf
	}
	return nil
}

func (l *segmentLink) Recv(buf []byte, deadline time.Time) (int, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case a := <-l.answers:
		return copy(buf, a), nil
	case <-t.C:
		return 0, link.ErrTimeout
	}
}

func (l *segmentLink) Close() error { return nil }

func (l *segmentLink) HardwareAddr() net.HardwareAddr {
	return net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
}

// testLogger logs through t, visible with -v or on failure.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newDevices builds simulated devices or fails the test.
func newDevices(t *testing.T, specs ...string) []*sim.Device {
	t.Helper()
	devs, err := sim.ParseDevices(specs)
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

// linkedMaster brings a master up to OP over a segmentLink to seg.
func linkedMaster(t *testing.T, seg *sim.Segment, cfg master.Config) (*master.Master, *segmentLink) {
	t.Helper()
	l := newSegmentLink(seg)
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second
	}
	if cfg.CycleTimeout == 0 {
		cfg.CycleTimeout = time.Second
	}
	if cfg.SIITimeout == 0 {
		cfg.SIITimeout = time.Second // the race detector on two busy cores is slow
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	if cfg.RecoveryTimeout == 0 {
		cfg.RecoveryTimeout = 50 * time.Millisecond // the link is synchronous: an answer is there at once or never
	}
	m, err := master.New(l, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.BringUp(ctx); err != nil {
		t.Fatalf("BringUp: %v", err)
	}
	return m, l
}

// TestAcyclicRidesTheCycle runs each acyclic operation while a cycle owns
// the link: every frame on the wire is sent by the cycle, inside its
// exchange, and every operation still does its job.
func TestAcyclicRidesTheCycle(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004", "EL4132", "EL1014"))
	m, l := linkedMaster(t, seg, master.Config{})
	// The cycle starts sending before startCycle returns it: a frame sent
	// before cyRef is set is the cycle's first (bring-up is over, nothing
	// else sends).
	var cyRef atomic.Pointer[cycler]
	var sent, outside atomic.Int64
	l.mu.Lock()
	l.onSend = func([]byte) {
		sent.Add(1)
		if c := cyRef.Load(); c != nil && !c.inExchange.Load() {
			outside.Add(1)
		}
	}
	l.mu.Unlock()
	cy := startCycle(t, m, time.Millisecond)
	cyRef.Store(cy)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	analog := m.Slaves()[2]

	ops := []struct {
		name string
		run  func() error
	}{
		{"CheckSlaves", func() error { _, err := m.CheckSlaves(ctx, nil); return err }},
		{"CountSlaves", func() error { _, err := m.CountSlaves(ctx); return err }},
		{"ReadStates", func() error { return m.ReadStates(ctx) }},
		{"SDOUpload", func() error { _, err := m.SDOUpload(ctx, analog, 0x1018, 1); return err }},
		{"Recover", func() error {
			if err := seg.Faults().ALError(2, 0x001B); err != nil {
				return err
			}
			return m.Recover(ctx, analog, esc.StateOp)
		}},
		{"Reconnect (SII, mailbox, PDO read)", func() error {
			if err := seg.Faults().Disappear(3); err != nil {
				return err
			}
			if err := seg.Faults().Return(3); err != nil {
				return err
			}
			_, err := m.Reconnect(ctx, 3)
			return err
		}},
		{"Reconnect of the CoE slave", func() error {
			if err := seg.Faults().Disappear(2); err != nil {
				return err
			}
			if err := seg.Faults().Return(2); err != nil {
				return err
			}
			_, err := m.Reconnect(ctx, 2)
			return err
		}},
	}
	for _, op := range ops {
		if err := op.run(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
	}
	cy.waitWKC(t, m.Cyclic().ExpectedWKC(), 5*time.Second)
	if n := outside.Load(); n != 0 {
		t.Errorf("%d of %d frames sent outside the cycle's exchange", n, sent.Load())
	}
	if st := m.Stats(); st.Cycles == 0 || sent.Load() < int64(st.Cycles) {
		t.Errorf("%d frames for %d cycles", sent.Load(), st.Cycles)
	}
}

// TestQueuedTransactionHonoursContext: with the link handed to a cycle
// that does not run, a transaction gives up with its context's error and
// nothing is sent.
func TestQueuedTransactionHonoursContext(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004"))
	m, l := linkedMaster(t, seg, master.Config{RecoveryTimeout: time.Second})
	var sent atomic.Int64
	l.mu.Lock()
	l.onSend = func([]byte) { sent.Add(1) }
	l.mu.Unlock()
	m.QueueAcyclic(true, time.Millisecond)
	defer m.QueueAcyclic(false, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := m.CheckSlaves(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CheckSlaves without a running cycle: %v, want context.DeadlineExceeded", err)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d frames sent by a transaction, want none", n)
	}
}

// TestQueuedTransactionWithdrawnWhenCycleStalls: a cycle that does not
// come round at all fails the transaction with ErrNoResponse once the
// queue's backstop (Config.StateTimeout) has passed — not a hang, and not
// sooner: a cycle the host delays is waited for (see
// TestQueuedTransactionWaitsForAStarvedCycle).
func TestQueuedTransactionWithdrawnWhenCycleStalls(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004"))
	const backstop = 300 * time.Millisecond
	m, _ := linkedMaster(t, seg, master.Config{RecoveryTimeout: 5 * time.Millisecond, Retries: 1, StateTimeout: backstop})
	m.QueueAcyclic(true, time.Millisecond)
	defer m.QueueAcyclic(false, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := m.CountSlaves(ctx)
	if !errors.Is(err, master.ErrNoResponse) || !strings.Contains(err.Error(), "stopped or starved") {
		t.Fatalf("CountSlaves with a stalled cycle: %v, want ErrNoResponse saying the cycle stalled", err)
	}
	if took := time.Since(start); took < backstop || took > 5*time.Second {
		t.Errorf("gave up after %v, want after the backstop of %v and well within 5 s", took, backstop)
	}
	// The withdrawn datagrams are not sent by the next cycle.
	before := m.Stats()
	r := m.ExchangeUntil(time.Now().Add(time.Second))
	if r.AcyclicFrames != 0 || m.Stats().AcyclicFrames != before.AcyclicFrames {
		t.Errorf("the cycle after the stall sent an acyclic frame: %+v", r)
	}
}

// TestConcurrentAcyclicUsers: with the cycle owning the link, several
// goroutines transact at once (the race detector watches), and their
// datagrams share the cycle's frames.
func TestConcurrentAcyclicUsers(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004", "EL4132", "EL1014"))
	m, _ := linkedMaster(t, seg, master.Config{})
	cy := startCycle(t, m, time.Millisecond)
	cy.waitWKC(t, m.Cyclic().ExpectedWKC(), 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				n, err := m.CountSlaves(ctx)
				if err != nil || n != 4 {
					errs <- fmt.Errorf("CountSlaves = %d, %v", n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := m.Stats(); st.Cycles >= 160 {
		t.Logf("%d cycles for 160 transactions: no two shared a cycle", st.Cycles)
	}
}

// cyclingSegment serves the devices, brings a master up against them and
// runs a cycle that owns the link every period, as the agent's engine would;
// it returns once the cycle's working counter is whole (want).
func cyclingSegment(t *testing.T, period time.Duration, devices ...string) (seg *sim.Segment, m *master.Master, cy *cycler, want uint16) {
	t.Helper()
	seg = sim.NewSegment(newDevices(t, devices...))
	m, _ = linkedMaster(t, seg, master.Config{})
	cy = startCycle(t, m, period)
	want = m.Cyclic().ExpectedWKC()
	cy.waitWKC(t, want, 5*time.Second)
	return seg, m, cy, want
}

// largeSegment is 128 slaves with a 2 KiB process image and mailboxes
// to poll: a coupler and 127 four-channel analog input terminals.
func largeSegment() []string {
	devs := []string{"EK1100"}
	for range 127 {
		devs = append(devs, "EL3004")
	}
	return devs
}

// TestLargeSegmentTakesTwoFrames: 128 slaves with a 2 KiB image, mailbox
// polling and acyclic traffic in every cycle still take two frames per
// cycle — the auxiliary datagrams and the queued ones go where the second
// LRW frame leaves room — with the full working counter.
func TestLargeSegmentTakesTwoFrames(t *testing.T) {
	// EEPROM reads, mailbox answers and state changes counted in frames,
	// not in the chips' real time: 128 slaves' bring-up takes 5 s instead
	// of 30, and this test is about the cyclic frames.
	seg := sim.NewSegment(newDevices(t, largeSegment()...), sim.WithSIIBusyFrames(2), sim.WithMailboxDelay(2), sim.WithStateChangeDelay(1))
	m, l := linkedMaster(t, seg, master.Config{})
	if n := len(m.Image().Bytes()); n < 2000 {
		t.Fatalf("process image of %d bytes, want about 2 KiB", n)
	}
	if got := m.Cyclic().Frames(); got != 2 {
		t.Fatalf("%d frames per cycle (%v), want 2", got, m.Cyclic())
	}
	var sent atomic.Int64
	l.mu.Lock()
	l.onSend = func([]byte) { sent.Add(1) }
	l.mu.Unlock()
	cy := startCycle(t, m, time.Millisecond)
	want := m.Cyclic().ExpectedWKC()
	cy.waitWKC(t, want, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cy.pause.Lock()
	c0, s0, a0 := cy.cycles.Load(), sent.Load(), m.Stats().AcyclicFrames
	cy.pause.Unlock()
	for range 50 {
		if n, err := m.CountSlaves(ctx); err != nil || n != 128 {
			t.Fatalf("CountSlaves = %d, %v", n, err)
		}
	}
	cy.pause.Lock()
	cycles, frames := cy.cycles.Load()-c0, sent.Load()-s0
	extra := m.Stats().AcyclicFrames - a0
	cy.pause.Unlock()
	if extra != 0 || frames > 2*cycles+2 {
		t.Errorf("%d frames in %d cycles (%d extra acyclic frames), want 2 per cycle", frames, cycles, extra)
	}
}

// BenchmarkLargeSegmentExchange times one cycle of the 128-slave segment
// with the simulator answering inside Send: the master's and the
// simulator's work for a 2 KiB image in two frames.
func BenchmarkLargeSegmentExchange(b *testing.B) {
	t := &testing.T{}
	seg := sim.NewSegment(newDevicesB(b, largeSegment()...))
	m, _ := linkedMaster(t, seg, master.Config{Logger: slog.New(slog.DiscardHandler)})
	want := m.Cyclic().ExpectedWKC()
	b.ReportAllocs()
	for b.Loop() {
		if r := m.ExchangeUntil(time.Now().Add(time.Second)); r.WKC != want {
			b.Fatalf("wkc %d, want %d", r.WKC, want)
		}
	}
}

func newDevicesB(b *testing.B, specs ...string) []*sim.Device {
	devs, err := sim.ParseDevices(specs)
	if err != nil {
		b.Fatal(err)
	}
	return devs
}

// TestReadAllSharesFrames reads every slave's station address with one
// ReadAll while a cycle owns the link: each read is answered by its own
// slave, a read of a station that is not there comes back with working
// counter 0, and the reads share the cycle's frames (read one by one,
// each would take an exchange of its own). Without the cycle, ReadAll
// reads one by one on the link.
func TestReadAllSharesFrames(t *testing.T) {
	specs := []string{"EK1100"}
	for range 19 {
		specs = append(specs, "EL1014")
	}
	seg := sim.NewSegment(newDevices(t, specs...))
	m, l := linkedMaster(t, seg, master.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slaves := m.Slaves()
	bufs := make([][2]byte, len(slaves)+1)
	reads := make([]master.Read, len(slaves)+1)
	prepare := func() {
		for i := range reads {
			station := uint16(0x7777) // nobody
			if i < len(slaves) {
				station = slaves[i].StationAddress
			}
			bufs[i] = [2]byte{}
			reads[i] = master.Read{Station: station, Register: uint16(esc.RegStationAddress), Data: bufs[i][:]}
		}
	}
	check := func(how string) {
		t.Helper()
		for i, r := range reads {
			want, wkc := r.Station, uint16(1)
			if i == len(slaves) {
				want, wkc = 0, 0
			}
			if !r.OK || r.WKC != wkc || binary.LittleEndian.Uint16(r.Data) != want {
				t.Errorf("%s: read %d of station %#04x: ok %v, wkc %d, data % x; want wkc %d, %#04x", how, i, r.Station, r.OK, r.WKC, r.Data, wkc, want)
			}
		}
	}
	prepare()
	if err := m.Bus().ReadAll(ctx, reads); err != nil {
		t.Fatalf("ReadAll on the link: %v", err)
	}
	check("on the link")

	var carrying atomic.Int64 // frames with at least one of the reads
	l.mu.Lock()
	l.onSend = func(frame []byte) {
		for d := range master.Datagrams(frame) {
			if d.Command == wire.FPRD && uint16(d.Address>>16) == uint16(esc.RegStationAddress) {
				carrying.Add(1)
				return
			}
		}
	}
	l.mu.Unlock()
	startCycle(t, m, time.Millisecond)
	prepare()
	if err := m.Bus().ReadAll(ctx, reads); err != nil {
		t.Fatalf("ReadAll through the cycle: %v", err)
	}
	check("through the cycle")
	// 21 reads go in two turns of at most 16; each turn rides one
	// exchange, or two when the cycle took the first reads while the rest
	// were being queued.
	if n := carrying.Load(); n == 0 || n > 4 {
		t.Errorf("%d reads in %d frames, want 2 to 4", len(reads), n)
	}
}
