package master

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/realtime/spsc"
)

// Acyclic datagrams while the cycle runs. Once the bus runs, the cycle
// thread is the only one that sends and receives on the link. Every Bus
// transaction of other code (recovery, hot reconnect, mailbox transfers,
// register and SII access, state requests) then becomes a datagram in
// the acyclic queue; the cyclic exchange carries queued datagrams in its
// own frames where they fit, else in one more frame when the cycle's
// measured slack has room for it, and hands each answer back through the
// queue. The cycle takes no lock and waits for nobody: it loads atomics,
// and wakes a waiting requester by making its timerfd expire, on which
// the requester is parked in the Go scheduler (spsc.Signal).

// AcyclicQueueLen is how many acyclic datagrams can wait for the cycle at
// once. A Bus transaction is one datagram; more are in flight only when
// several goroutines use the master at the same time: recovery's parallel
// steps, mailbox transfers, the maintenance socket. A datagram a requester
// withdrew holds its place until the cycle walks past it, so on a
// saturated host 16 places filled up behind eight parallel reconnects
// (scripts/stress-faults); 64 leave room for that and for the bursts of
// the maintenance commands. Each place holds a frame's worth of data
// (about 1.5 KiB).
const AcyclicQueueLen = 64

// steadyRequesters is how many requesters the acyclic queue expects to
// wait at once outside a recovery episode: the places made for them
// before the cycle starts keep its steady state allocation-free.
const steadyRequesters = 4

// ErrAcyclicQueueFull is returned to a transaction that finds every place
// of the acyclic queue taken: the cycle is not keeping up (or not
// running). The transaction was not sent.
var ErrAcyclicQueueFull = errors.New("acyclic queue to the cycle is full")

// The states of a queue slot. The requester moves it from free to queued
// and from done or lost back to free (or from queued to cancelled when it
// gives up); the cycle moves it from queued to carried, and from carried
// to done or lost within the same exchange.
const (
	slotFree uint32 = iota
	slotQueued
	slotCarried
	slotDone
	slotLost
	slotCancelled
)

// acyclicSlot is one datagram of the queue with room for its answer.
type acyclicSlot struct {
	state   atomic.Uint32
	cmd     wire.Command
	address uint32
	n       int
	wkc     uint16
	data    [wire.MaxDataLen]byte
}

// acyclicQueue carries acyclic datagrams from requesters to the cyclic
// exchange and their answers back. A requester takes any free slot and
// appends its number to order, a ring of positions that count up; the
// cycle takes the slots in position order. A slot is free again once its
// requester has taken the answer, in whatever order requesters do that.
type acyclicQueue struct {
	slots [AcyclicQueueLen]acyclicSlot
	order [AcyclicQueueLen]uint8
	// tail is the next position a requester fills (written under mu),
	// head the next the cycle looks at (written by the cycle alone).
	tail atomic.Uint64
	head atomic.Uint64
	// mu orders requesters among themselves; the cycle never takes it.
	mu sync.Mutex
	// answered wakes requesters when the cycle resolved datagrams.
	answered spsc.Signal
	// wait is how long a requester waits for its answer before it gives
	// up on a datagram the cycle has not taken yet (a patient one: and
	// the cycle ran carryCycles cycles meanwhile).
	wait time.Duration
	// backstop bounds a patient requester's wait for a cycle that runs
	// too few cycles to carry its datagram (stopped, starved).
	backstop time.Duration
	// cycles counts the cycles the exchange ran (the master's counter);
	// nil in a queue without a master, whose requesters are all
	// impatient.
	cycles *atomic.Uint64
}

// tryOutcome is how one queued try of a transaction ended.
type tryOutcome uint8

const (
	// tryAnswered: the cycle carried the datagram and its answer came.
	tryAnswered tryOutcome = iota
	// tryLost: the cycle carried it and the frame was lost.
	tryLost
	// tryNotCarried: the cycle ran carryCycles cycles or more (and the
	// queue's wait passed) without finding room for it: withdrawn.
	tryNotCarried
	// tryStalled: the cycle ran fewer than carryCycles cycles within the
	// queue's backstop: a cycle stopped or starved, withdrawn.
	tryStalled
)

// carryCycles is how many cycles a patient requester lets run without
// its datagram being carried before it withdraws it as not carried:
// fewer than that is the host delaying the cycle, not the cycle having no
// room for the datagram.
const carryCycles = 3

// transact queues one datagram and waits for the cycle to resolve it. out
// says how the try ended; a datagram not answered is withdrawn (or was
// resolved lost) and the caller may send it again.
//
// An impatient requester (a poller's single read) withdraws a datagram
// the cycle has not taken after the queue's wait. A patient one (a Bus
// transaction) withdraws it only once the wait has passed and the cycle
// ran carryCycles cycles without taking it, or the backstop passed: a
// host that delays the cycle delays the datagram with it, and that is no
// lost try (the cycle carries every datagram it takes within that
// exchange, so the time the host steals is all before it is taken).
func (q *acyclicQueue) transact(ctx context.Context, cmd wire.Command, address uint32, data []byte, patient bool) (wkc uint16, out tryOutcome, err error) {
	if len(data) > wire.MaxDataLen {
		return 0, tryLost, fmt.Errorf("build frame with %d bytes: %w", len(data), wire.ErrDataTooLong)
	}
	c0 := q.cyclesRun()
	s, err := q.enqueue(cmd, address, data)
	if err != nil {
		return 0, tryLost, err
	}
	var answer []byte // where a read's answer goes
	if cmd.Reads() {
		answer = data
	}
	deadline, ctxBound := q.deadline(ctx)
	backstop := deadline
	if patient && !ctxBound {
		backstop = time.Now().Add(max(q.backstop, q.wait))
		if dl, has := ctx.Deadline(); has && dl.Before(backstop) {
			backstop, ctxBound = dl, true
		}
	}
	for {
		seq := q.answered.Seq()
		if wkc, ok, resolved := collect(s, answer); resolved {
			if !ok {
				return 0, tryLost, nil
			}
			return wkc, tryAnswered, nil
		}
		giveUp, why := false, tryNotCarried
		switch {
		case ctx.Err() != nil:
			giveUp, why = true, tryStalled
		case patient && time.Now().After(backstop):
			giveUp, why = true, tryStalled
		case time.Now().After(deadline):
			giveUp = !patient || q.cycles == nil || q.cyclesRun()-c0 >= carryCycles
		}
		if giveUp && withdraw(s) {
			if err := ctx.Err(); err != nil {
				return 0, why, err
			}
			if ctxBound && time.Now().After(backstop) { // its timer may not have fired yet
				return 0, why, context.DeadlineExceeded
			}
			return 0, why, nil
		}
		// Queued with time left, or carried: the cycle resolves a
		// carried datagram within the exchange that took it. Past the
		// wait, a patient requester looks at the cycles run again
		// every wait.
		until := deadline
		if now := time.Now(); now.After(deadline) {
			until = now.Add(q.wait)
			if backstop.Before(until) {
				until = backstop
			}
		}
		q.answered.Wait(seq, max(time.Until(until), 50*time.Microsecond))
	}
}

// cyclesRun is the number of cycles the cyclic exchange has run (0 in a
// queue that does not know them).
func (q *acyclicQueue) cyclesRun() uint64 {
	if q.cycles == nil {
		return 0
	}
	return q.cycles.Load()
}

// transactAll queues the reads of reads together and waits for the cycle
// to resolve them all: the cycle packs them into as few frames as fit,
// and the requester wakes when the answers are in, not once per read.
// A read that finds no room in the queue, or that the cycle did not take
// in time, is not ok. It allocates nothing.
func (q *acyclicQueue) transactAll(ctx context.Context, reads []Read) error {
	for i := range reads {
		r := &reads[i]
		r.WKC, r.OK, r.slot = 0, false, nil
		if len(r.Data) > wire.MaxDataLen {
			return fmt.Errorf("read of %d bytes: %w", len(r.Data), wire.ErrDataTooLong)
		}
	}
	for i := range reads {
		r := &reads[i]
		s, err := q.enqueue(wire.FPRD, wire.PhysicalAddress(r.Station, r.Register), r.Data)
		if err != nil {
			break // no room: the rest stay not ok
		}
		r.slot = s
	}
	deadline, _ := q.deadline(ctx)
	for {
		seq := q.answered.Seq()
		late := expired(ctx, deadline)
		pending := 0
		for i := range reads {
			r := &reads[i]
			if r.slot == nil {
				continue
			}
			if wkc, ok, resolved := collect(r.slot, r.Data); resolved {
				r.WKC, r.OK, r.slot = wkc, ok, nil
				continue
			}
			if late && withdraw(r.slot) {
				r.slot = nil
				continue
			}
			pending++
		}
		if pending == 0 {
			return ctx.Err()
		}
		q.answered.Wait(seq, max(time.Until(deadline), 50*time.Microsecond))
	}
}

// deadline is when a requester gives up on a datagram the cycle has not
// taken: the queue's wait from now, or ctx's deadline when that comes
// first (ctxBound).
func (q *acyclicQueue) deadline(ctx context.Context) (deadline time.Time, ctxBound bool) {
	deadline = time.Now().Add(q.wait)
	if dl, has := ctx.Deadline(); has && dl.Before(deadline) {
		return dl, true
	}
	return deadline, false
}

// expired reports whether a requester waiting until deadline gives up.
func expired(ctx context.Context, deadline time.Time) bool {
	return time.Now().After(deadline) || ctx.Err() != nil
}

// collect takes the answer of a datagram the cycle resolved and frees its
// slot: resolved is false while it is queued or carried, ok false when its
// frame was lost. A read's answer is copied into answer (nil for a write).
func collect(s *acyclicSlot, answer []byte) (wkc uint16, ok, resolved bool) {
	switch s.state.Load() {
	case slotDone:
		wkc = s.wkc
		copy(answer, s.data[:s.n])
		s.state.Store(slotFree)
		return wkc, true, true
	case slotLost:
		s.state.Store(slotFree)
		return 0, false, true
	}
	return 0, false, false
}

// withdraw takes back a datagram the cycle has not taken yet (the cycle
// frees its slot when it walks past); false when it is carried already,
// and its answer is near.
func withdraw(s *acyclicSlot) bool { return s.state.CompareAndSwap(slotQueued, slotCancelled) }

// enqueue puts one datagram in the next place, or refuses it.
func (q *acyclicQueue) enqueue(cmd wire.Command, address uint32, data []byte) (*acyclicSlot, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	pos := q.tail.Load()
	free := -1
	for i := range q.slots {
		if q.slots[i].state.Load() == slotFree {
			free = i
			break
		}
	}
	if free < 0 || pos-q.head.Load() >= AcyclicQueueLen {
		return nil, fmt.Errorf("%w (%d datagrams wait)", ErrAcyclicQueueFull, AcyclicQueueLen)
	}
	s := &q.slots[free]
	s.cmd, s.address, s.n, s.wkc = cmd, address, len(data), 0
	if cmd.Writes() {
		copy(s.data[:], data)
	} else {
		clear(s.data[:len(data)])
	}
	s.state.Store(slotQueued)
	q.order[pos%AcyclicQueueLen] = uint8(free)
	q.tail.Store(pos + 1) // publishes the slot to the cycle
	return s, nil
}

// peek returns the oldest datagram the cycle has not taken yet, skipping
// (and freeing) withdrawn ones, or nil. Cycle only.
func (q *acyclicQueue) peek() *acyclicSlot {
	for h := q.head.Load(); h < q.tail.Load(); h++ {
		s := &q.slots[q.order[h%AcyclicQueueLen]]
		if s.state.CompareAndSwap(slotQueued, slotCarried) {
			q.head.Store(h)
			return s
		}
		if s.state.Load() == slotCancelled {
			s.state.Store(slotFree)
		}
		q.head.Store(h + 1)
	}
	return nil
}

// take marks the datagram peek returned as carried by this exchange.
// Cycle only.
func (q *acyclicQueue) take() { q.head.Add(1) }

// putBack returns the datagram peek returned to the queue: it did not fit
// this cycle and goes first in the next. Cycle only.
func (q *acyclicQueue) putBack(s *acyclicSlot) { s.state.Store(slotQueued) }

// resolve hands a carried datagram's answer to its requester (d nil: its
// frame was lost). Cycle only; the caller notifies once per exchange.
func resolve(s *acyclicSlot, d *wire.Datagram) {
	if d == nil || d.Command != s.cmd || len(d.Data) != s.n {
		s.state.Store(slotLost)
		return
	}
	s.wkc = d.WKC
	if s.cmd.Reads() {
		copy(s.data[:s.n], d.Data)
	}
	s.state.Store(slotDone)
}

// QueueAcyclic hands the link to the cyclic exchange (on) or takes it back
// (off). While on, every Bus transaction of the master — bring-up steps,
// state changes, SII reads, mailbox transfers, Recover, Reconnect,
// CheckSlaves — queues its datagram for the cycle and waits for the
// answer: for the cycle to take it (a host that delays the cycle delays
// the datagram, up to Config.StateTimeout), then within the exchange
// that carries it; a try is lost when its frame is, or when the cycle
// ran three cycles and a few periods (period is the cycle time) plus
// Config.RecoveryTimeout passed without room for it. State changes to
// SAFEOP or OP do not run cyclic frames themselves, the cycle keeps the
// outputs valid. Transactions may then run from several goroutines at
// once.
//
// Call it while no Bus transaction runs: before the cycle starts, or after
// it stopped and the acyclic users are done.
func (m *Master) QueueAcyclic(on bool, period time.Duration) {
	if !on {
		m.bus.queue = nil
		return
	}
	q := m.acyclic
	q.wait = 3*period + m.cfg.RecoveryTimeout
	q.backstop = m.cfg.StateTimeout
	q.cycles = &m.counters.cycles
	// The requesters of steady operation (the error-counter reads, a
	// maintenance command) park without allocating from the first
	// cycle on; recovery's many at once may allocate, as it does.
	q.answered.Prepare(steadyRequesters)
	m.bus.queue = q
}

// queued reports whether Bus transactions go through the cycle: the
// cyclic exchange then runs in another goroutine and must not be called
// from a Bus user.
func (m *Master) queued() bool { return m.bus.queue != nil }
