package master_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/sim"
)

// mutexGate is the simplest Gate: one holder at a time, the cycle included
// (it takes the gate around each exchange). It counts Acquire and Release
// and tells whether it is held.
type mutexGate struct {
	sem      chan struct{}
	held     atomic.Bool
	acquires atomic.Int64
	releases atomic.Int64
}

func newMutexGate() *mutexGate { return &mutexGate{sem: make(chan struct{}, 1)} }

func (g *mutexGate) Acquire(ctx context.Context) error {
	select {
	case g.sem <- struct{}{}:
		g.held.Store(true)
		g.acquires.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *mutexGate) Release() {
	g.releases.Add(1)
	g.held.Store(false)
	<-g.sem
}

// cycler runs the cyclic exchange in its own goroutine as the cycle engine
// would: take the gate, exchange, give it back, wait out the period.
type cycler struct {
	stop    chan struct{}
	done    chan struct{}
	cycles  atomic.Int64
	lastWKC atomic.Int64
}

func startCycle(t *testing.T, m *master.Master, g *mutexGate, period time.Duration) *cycler {
	t.Helper()
	c := &cycler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			select {
			case <-c.stop:
				return
			default:
			}
			if err := g.Acquire(context.Background()); err != nil {
				return
			}
			r := m.ExchangeUntil(time.Now().Add(time.Second))
			g.Release()
			c.lastWKC.Store(int64(r.WKC))
			c.cycles.Add(1)
			time.Sleep(period)
		}
	}()
	t.Cleanup(c.halt)
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

// TestGateCoversEveryAcyclicFrame runs each acyclic operation with a gate
// set and checks that every frame it sends is sent while the gate is held,
// and that each Acquire is matched by a Release.
func TestGateCoversEveryAcyclicFrame(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004", "EL4132", "EL1014"))
	m, l := linkedMaster(t, seg, master.Config{})
	g := newMutexGate()
	var sent, ungated atomic.Int64
	l.mu.Lock()
	l.onSend = func([]byte) {
		sent.Add(1)
		if !g.held.Load() {
			ungated.Add(1)
		}
	}
	l.mu.Unlock()
	m.SetGate(g)
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
		before, acq := sent.Load(), g.acquires.Load()
		if err := op.run(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		frames, acquires := sent.Load()-before, g.acquires.Load()-acq
		if frames == 0 {
			t.Errorf("%s sent no frame", op.name)
		}
		if acquires != frames {
			t.Errorf("%s: %d frames, %d Acquire calls; want one per frame", op.name, frames, acquires)
		}
	}
	if n := ungated.Load(); n != 0 {
		t.Errorf("%d of %d frames sent without holding the gate", n, sent.Load())
	}
	if a, r := g.acquires.Load(), g.releases.Load(); a != r {
		t.Errorf("%d Acquire, %d Release", a, r)
	}
}

// TestGateAcquireHonoursContext checks that a transaction waiting for a
// gate that never opens gives up with the context's error and sends nothing.
func TestGateAcquireHonoursContext(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004"))
	m, l := linkedMaster(t, seg, master.Config{})
	g := newMutexGate()
	var sent atomic.Int64
	l.mu.Lock()
	l.onSend = func([]byte) { sent.Add(1) }
	l.mu.Unlock()
	m.SetGate(g)
	if err := g.Acquire(context.Background()); err != nil { // the cycle holds it
		t.Fatal(err)
	}
	defer g.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := m.CheckSlaves(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CheckSlaves with a closed gate: %v, want context.DeadlineExceeded", err)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d frames sent without the gate", n)
	}
}

// cyclingSegment serves the devices, brings a master up against them and
// runs a cycle through a gate every period, as the agent's engine would;
// it returns once the cycle's working counter is whole (want).
func cyclingSegment(t *testing.T, period time.Duration, devices ...string) (seg *sim.Segment, m *master.Master, cy *cycler, want uint16) {
	t.Helper()
	seg = sim.NewSegment(newDevices(t, devices...))
	m, _ = linkedMaster(t, seg, master.Config{})
	g := newMutexGate()
	m.SetGate(g)
	cy = startCycle(t, m, g, period)
	want = m.Cyclic().ExpectedWKC()
	cy.waitWKC(t, want, 5*time.Second)
	return seg, m, cy, want
}
