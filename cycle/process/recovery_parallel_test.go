package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// fakeBus is a segment as the recovery worker sees it: which slaves
// answer, in which state, and what a reconnect of each does.
type fakeBus struct {
	mu      sync.Mutex
	present map[int]bool
	slaves  []*master.Slave
	// reconnect is the step of a reconnect at a position (absent: the
	// slave comes back in OP at once); n counts the calls from 1.
	reconnect map[int]func(ctx context.Context, n int) error
	calls     map[int]int
}

func newFakeBus(n int) *fakeBus {
	b := &fakeBus{present: map[int]bool{}, reconnect: map[int]func(context.Context, int) error{}, calls: map[int]int{}}
	for i := range n {
		b.present[i] = true
		b.slaves = append(b.slaves, &master.Slave{Position: i, StationAddress: uint16(0x1001 + i)})
	}
	return b
}

func (b *fakeBus) Slaves() []*master.Slave { return b.slaves }

func (b *fakeBus) CheckSlaves(ctx context.Context, dst []master.SlaveHealth) ([]master.SlaveHealth, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	dst = dst[:0]
	for _, s := range b.slaves {
		h := master.SlaveHealth{Position: s.Position, Address: s.StationAddress, Present: b.present[s.Position]}
		if h.Present {
			h.State = esc.ALStatus{State: esc.StateOp}
		}
		dst = append(dst, h)
	}
	return dst, nil
}

func (b *fakeBus) Reconnect(ctx context.Context, pos int) (master.ReconnectReport, error) {
	b.mu.Lock()
	b.calls[pos]++
	n, step := b.calls[pos], b.reconnect[pos]
	b.mu.Unlock()
	if step != nil {
		if err := step(ctx, n); err != nil {
			return master.ReconnectReport{Position: pos}, err
		}
	}
	b.mu.Lock()
	b.present[pos] = true
	b.mu.Unlock()
	return master.ReconnectReport{Position: pos}, nil
}

func (b *fakeBus) Recover(ctx context.Context, s *master.Slave, target esc.ALState) error {
	return nil
}

// fakeCycle collects the worker's events.
type fakeCycle struct{ events chan shm.Event }

func (c *fakeCycle) WaitTrouble(ctx context.Context) bool { <-ctx.Done(); return false }
func (c *fakeCycle) Report(ev shm.Event) bool {
	select {
	case c.events <- ev:
		return true
	default:
		return false
	}
}

// eventKey is an event's kind and slave, what the counts are by.
type eventKey struct {
	kind shm.EventKind
	pos  int
}

// TestRecoverySlowSlaveDelaysNoOther: two slaves lost; one's reconnect
// hangs in a mailbox transfer that times out only after seconds, the
// other's first reconnect loses a frame (ErrNoResponse: look again in
// absentPoll). The second must be back in OP within its normal bound —
// not after the first's slow step — and the events counted exactly by
// kind and slave.
func TestRecoverySlowSlaveDelaysNoOther(t *testing.T) {
	bus := newFakeBus(4)
	bus.present[1], bus.present[2] = false, false
	release := make(chan struct{})
	bus.reconnect[1] = func(ctx context.Context, n int) error {
		if n > 1 {
			return nil
		}
		select { // the mailbox answers when the test says
		case <-release:
		case <-ctx.Done():
		}
		return errors.New("CoE SDO upload 0x1c12: mailbox timeout")
	}
	bus.reconnect[2] = func(ctx context.Context, n int) error {
		if n == 1 {
			return master.ErrNoResponse
		}
		return nil
	}
	cyc := &fakeCycle{events: make(chan shm.Event, 64)}
	r := newRecovererOf(bus, cyc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.episode(ctx) }()
	released := false
	defer func() {
		if !released {
			close(release)
		}
		cancel()
		<-done
		r.steps.Wait()
	}()

	counts := map[eventKey]int{}
	// The normal bound of a reconnect is a second; a slave that loses a
	// frame is looked at again after absentPoll.
	const bound = time.Second
	start := time.Now()
	deadline := time.After(bound)
	for counts[eventKey{shm.EventSlaveReconnected, 2}] == 0 {
		select {
		case ev := <-cyc.events:
			counts[eventKey{ev.Kind, int(ev.Slave)}]++
		case <-deadline:
			t.Fatalf("slave 2 not back within %v while slave 1's step hangs; events %v", bound, counts)
		}
	}
	t.Logf("slave 2 back %v after the episode began, slave 1's step still hanging", time.Since(start).Round(time.Millisecond))

	close(release)
	released = true
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the episode did not end after slave 1 came back; events %v", counts)
	}
	for len(cyc.events) > 0 {
		ev := <-cyc.events
		counts[eventKey{ev.Kind, int(ev.Slave)}]++
	}
	want := map[eventKey]int{
		{shm.EventSlaveLost, 1}: 1, {shm.EventSlaveLost, 2}: 1,
		{shm.EventSlaveReconnected, 1}: 1, {shm.EventSlaveReconnected, 2}: 1,
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%v events for slave %d: %d, want %d", k.kind, k.pos, counts[k], n)
		}
	}
	for k, n := range counts {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %v events for slave %d: %d", k.kind, k.pos, n)
		}
	}
}

// recoverFake is a fakeBus whose slaves are all present and whose
// Recover answers with the errors in order, then nil.
type recoverFake struct {
	*fakeBus
	mu       sync.Mutex
	errs     []error
	recovers int
	inOp     bool
}

func (b *recoverFake) CheckSlaves(ctx context.Context, dst []master.SlaveHealth) ([]master.SlaveHealth, error) {
	dst, _ = b.fakeBus.CheckSlaves(ctx, dst)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.inOp {
		dst[1].State = esc.ALStatus{State: esc.StateSafeOp, Error: true}
		dst[1].Code = 0x001B
	}
	return dst, nil
}

func (b *recoverFake) Recover(ctx context.Context, s *master.Slave, target esc.ALState) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recovers++
	if len(b.errs) > 0 {
		err := b.errs[0]
		b.errs = b.errs[1:]
		return err
	}
	b.inOp = true
	return nil
}

// TestRecoveryUnansweredIsNoRefusal: a return to OP whose frames went
// unanswered (a saturated host let the acyclic datagram's wait run out
// before the cycle carried it; a frame lost) or that the acyclic queue
// refused is no refusal of the slave's: no recovery-failed event (and no
// back-off), only the al-acknowledged when it is back. The counts by kind
// are exact whatever the host's load.
func TestRecoveryUnansweredIsNoRefusal(t *testing.T) {
	bus := &recoverFake{fakeBus: newFakeBus(3), errs: []error{
		fmt.Errorf("master: recover: read AL status: %w", master.ErrNoResponse),
		fmt.Errorf("master: recover: %w", master.ErrAcyclicQueueFull),
		fmt.Errorf("master: recover: read AL status: %w", master.ErrNoResponse),
	}}
	cyc := &fakeCycle{events: make(chan shm.Event, 64)}
	r := newRecovererOf(bus, cyc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.episode(ctx)
	r.steps.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the episode did not end: %d returns to OP tried", bus.recovers)
	}
	counts := map[shm.EventKind]int{}
	for len(cyc.events) > 0 {
		ev := <-cyc.events
		counts[ev.Kind]++
	}
	// The SAFEOP+ERR read is reported (slave-state), then the return.
	want := map[shm.EventKind]int{shm.EventSlaveState: 1, shm.EventALAcknowledged: 1}
	if len(counts) != len(want) || counts[shm.EventSlaveState] != 1 || counts[shm.EventALAcknowledged] != 1 {
		t.Errorf("events %v, want %v", counts, want)
	}
	if bus.recovers != 4 {
		t.Errorf("%d returns to OP tried, want 4", bus.recovers)
	}
}

// midStepFake is a fakeBus whose check of slave 1 overlaps its
// reconnect: the check reads it in PREOP (half configured), and the
// reconnect ends, in OP, before the check returns.
type midStepFake struct {
	*fakeBus
	stepping chan struct{} // closed when the reconnect began
	finish   chan struct{} // closed by the check: the reconnect may end
	ended    func() bool   // the reconnect's step is over
	once     sync.Once
}

func (b *midStepFake) Reconnect(ctx context.Context, pos int) (master.ReconnectReport, error) {
	close(b.stepping)
	<-b.finish
	return b.fakeBus.Reconnect(ctx, pos)
}

func (b *midStepFake) CheckSlaves(ctx context.Context, dst []master.SlaveHealth) ([]master.SlaveHealth, error) {
	select {
	case <-b.stepping:
	default:
		return b.fakeBus.CheckSlaves(ctx, dst)
	}
	overlapped := false
	b.once.Do(func() { overlapped = true })
	if !overlapped {
		return b.fakeBus.CheckSlaves(ctx, dst)
	}
	dst, _ = b.fakeBus.CheckSlaves(ctx, dst)
	dst[1].Present, dst[1].State = true, esc.ALStatus{State: esc.StatePreOp}
	close(b.finish)
	deadline := time.Now().Add(5 * time.Second)
	for !b.ended() && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	return dst, nil
}

// TestRecoveryCheckDuringStepIsStale: a check of the bus that ran while
// a slave's step ran says nothing of where the step left it (seen: after
// the whole segment powered up again, slaves read in PREOP mid-reconnect
// were "acknowledged" back to OP once their reconnect was done, adding
// slave-state and al-acknowledged events and a return to OP to the
// recovery time). The counts by kind stay exact: lost, reconnected.
func TestRecoveryCheckDuringStepIsStale(t *testing.T) {
	bus := &midStepFake{fakeBus: newFakeBus(3), stepping: make(chan struct{}), finish: make(chan struct{})}
	bus.present[1] = false
	cyc := &fakeCycle{events: make(chan shm.Event, 64)}
	r := newRecovererOf(bus, cyc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	bus.ended = func() bool { st := r.slaves[1]; return st != nil && !st.busy.Load() }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.episode(ctx)
	r.steps.Wait()
	if ctx.Err() != nil {
		t.Fatal("the episode did not end")
	}
	counts := map[shm.EventKind]int{}
	for len(cyc.events) > 0 {
		ev := <-cyc.events
		counts[ev.Kind]++
	}
	if len(counts) != 2 || counts[shm.EventSlaveLost] != 1 || counts[shm.EventSlaveReconnected] != 1 {
		t.Errorf("events %v, want slave-lost 1 and slave-reconnected 1 only", counts)
	}
}
