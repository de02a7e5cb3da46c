package process

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/cycle"
	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// Recovery timing. A slave that is absent is looked for every absentPoll
// (one APRD); a refusing slave is retried with back-off from retryMin to
// retryMax; a different device at a position is looked at again after
// refusedRetry (an identity read: a dozen frames), so that the right
// device plugged back in is found within a second. Between checks of the
// bus the worker waits checkPoll. The cycle process runs with the
// collector off; recovery collects its garbage at the end of an episode,
// and every gcEvery of a long one, once it has allocated gcAfter bytes
// since the last collection (see collectIfDue).
const (
	absentPoll   = 20 * time.Millisecond
	checkPoll    = 10 * time.Millisecond
	retryMin     = 100 * time.Millisecond
	retryMax     = 5 * time.Second
	refusedRetry = 250 * time.Millisecond
	// reconnectRetryMax caps the back-off of a failed reconnect.
	reconnectRetryMax = 400 * time.Millisecond
	gcEvery           = 5 * time.Second
	gcAfter           = 4 << 20
	// parallelRecoveries bounds the slaves recovered at once: each has
	// one datagram queued for the cycle at a time, and together they
	// leave room in the acyclic queue.
	parallelRecoveries = min(8, master.AcyclicQueueLen/2)
	// slowStep: a check, reconnect or recovery of one slave that takes
	// longer is logged with its outcome, whatever it was.
	slowStep = 500 * time.Millisecond
)

// recoveryMaster is what the recovery worker asks of the master
// (*master.Master; a test's fake).
type recoveryMaster interface {
	CheckSlaves(ctx context.Context, dst []master.SlaveHealth) ([]master.SlaveHealth, error)
	Reconnect(ctx context.Context, position int) (master.ReconnectReport, error)
	Recover(ctx context.Context, s *master.Slave, target esc.ALState) error
	Slaves() []*master.Slave
}

// recoveryCycle is what the recovery worker asks of the cycle
// (*cycle.Engine; a test's fake): to be woken on trouble, and to carry
// its events to the ring.
type recoveryCycle interface {
	WaitTrouble(ctx context.Context) bool
	Report(ev shm.Event) bool
}

// recoverer brings the bus back while the cycle runs: woken by the
// engine's trouble signal, it reads every slave's state (its datagrams
// ride in the cycle's frames), acknowledges AL errors and requests
// OP again with back-off, reconnects slaves that come back after a power
// loss (refusing another device at their position), and reports each
// step as an event. It allocates — but only while something is wrong, and
// it collects its garbage when the episode ends.
//
// Each slave's step (a reconnect, a return to OP) runs in a goroutine of
// its own, as IgH runs one state machine per slave, while the worker
// keeps checking the bus and starting the steps of the other slaves: one
// slave's slow step (a mailbox that times out, a reconnect of many
// frames) delays nobody else's. At most parallelRecoveries steps run at
// once; a slave finding every lane taken waits for the next check.
type recoverer struct {
	m   recoveryMaster
	e   recoveryCycle
	log *slog.Logger
	now func() time.Time

	health []master.SlaveHealth
	// slaves is the worker's (the goroutine of run) record of each
	// slave; a slave's record is its step's while busy is set.
	slaves map[int]*slaveRecovery
	// lanes bounds the steps running at once; steps counts them, so
	// that run returns after its steps.
	lanes chan struct{}
	steps sync.WaitGroup
	// episodes counts the episodes begun (Report.RecoveryEpisodes);
	// active is set while one runs.
	episodes atomic.Uint64
	active   atomic.Bool

	// allocated reads the bytes the process has allocated so far
	// (runtime/metrics, without stopping the world); collect collects
	// the garbage (runtime.GC). collectedAt is allocated's reading after
	// the last collection.
	allocated   func() uint64
	collect     func()
	collectedAt uint64

	// rt is how the worker's threads are set up (its own and those of
	// the slaves it recovers in parallel): just below the cycle's
	// priority, on its core, so that they run in the cycle's idle time
	// and have their next datagrams queued before the next cycle (on the
	// normal scheduler a busy host wakes them milliseconds late; the
	// cycle never waits for them either way).
	rt rt.Options
}

// slaveRecovery is what the worker remembers of one slave in trouble.
type slaveRecovery struct {
	// busy is set while a step of this slave runs in its own goroutine,
	// which then owns the other fields; the worker leaves them alone
	// until the step clears it.
	busy atomic.Bool
	// stale is the worker's: the slave's step ran when the last check
	// began, so the check may have read it half-way through.
	stale    bool
	lost     bool      // reported lost, not back yet
	refused  bool      // another device is at its position (reported)
	attempts int       // failed returns to OP in a row
	next     time.Time // not before this
	// addressed is when a reconnect of ours that did not finish first
	// wrote the slave's station address since it was lost (zero if none
	// did): found at that address in SAFEOP or OP later, the slave is
	// where that reconnect took it, not a device that kept its
	// configuration, and its return to OP is reported as a reconnect.
	addressed time.Time
	// reported is the AL status and code last reported for the slave
	// (EventSlaveState); reportedSet is false until the first report or
	// after the slave was lost, when any state read is news.
	reported    esc.ALStatus
	reportedErr esc.ALStatusCode
	reportedSet bool
}

func newRecoverer(m *master.Master, e *cycle.Engine, log *slog.Logger) *recoverer {
	return newRecovererOf(m, e, log)
}

// newRecovererOf returns a worker for any master and cycle; its threads
// are not set up (rt.Options with no core) until the caller says.
func newRecovererOf(m recoveryMaster, e recoveryCycle, log *slog.Logger) *recoverer {
	return &recoverer{m: m, e: e, log: log, now: time.Now, slaves: map[int]*slaveRecovery{},
		lanes: make(chan struct{}, parallelRecoveries), rt: rt.Options{Core: -1},
		allocated: allocatedBytes, collect: runtime.GC}
}

// recoveryRT is the set-up of the recovery worker's threads for a cycle
// thread at SCHED_FIFO priority cycle: one below it, off the cycle's
// core, which the cycle keeps to itself (rt.Options.Core). On the cycle's
// core a worker would hold up the cycle it is preempted by: the cycle
// leaving a system call spins in the Go runtime while the worker, in a
// garbage collection, holds its stack for scanning. Its transactions
// ride in the cycle's frames, so it need not run where the cycle does.
// A cycle on the normal scheduler leaves the worker there too.
func recoveryRT(cycle int) rt.Options {
	return rt.Options{Priority: max(cycle-1, 0), Core: -1}
}

// run waits for trouble and recovers until ctx ends. It runs on a thread
// of its own, set up as r.rt says, and returns after the steps it started.
func (r *recoverer) run(ctx context.Context) {
	// Locked for good: when run returns, its thread ends with it rather
	// than going back to the runtime with a real-time priority.
	runtime.LockOSThread()
	setup := rt.Apply(r.rt)
	defer setup.Close()
	for _, refused := range setup.Refused() {
		r.log.Warn("recovery worker: real-time setting refused by the host; running without it", "setting", refused.Setting, "err", refused.Err)
	}
	defer r.steps.Wait()
	r.collectedAt = r.allocated()
	for r.e.WaitTrouble(ctx) {
		r.active.Store(true)
		r.episode(ctx)
		r.active.Store(false)
	}
}

// episode works until every slave answers in OP without an error and no
// step runs.
func (r *recoverer) episode(ctx context.Context) {
	r.episodes.Add(1)
	defer r.collectIfDue()
	lastGC := r.now()
	for ctx.Err() == nil {
		if r.pass(ctx) {
			return
		}
		if r.now().Sub(lastGC) > gcEvery {
			r.collectIfDue()
			lastGC = r.now()
		}
		select {
		case <-ctx.Done():
		case <-time.After(checkPoll):
		}
	}
}

// collectIfDue collects the garbage when the process has allocated
// gcAfter bytes since the last collection. A collection stops the world,
// the cycle with it: the cycle's goroutine yields at the request, in its
// sleep or at its job's next safe point, parks until the world starts
// again, and then waits for its P to be handed back. A
// fault storm that collected at the end of every episode (one every 2 s)
// multiplied the cycle thread's waits for its P over 1 ms by eight
// (docs/performance.md); an episode allocates far less than gcAfter, so
// that most episodes now end without one, and the heap stays within
// gcAfter of what recovery keeps.
func (r *recoverer) collectIfDue() {
	if r.allocated()-r.collectedAt < gcAfter {
		return
	}
	r.collect()
	r.collectedAt = r.allocated()
}

// allocatedBytes is what the process has allocated so far, read without
// stopping the world.
func allocatedBytes() uint64 {
	s := [1]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s[:])
	return s[0].Value.Uint64()
}

// pass checks every slave once and starts a step for each in trouble
// whose step is due and not running; it does not wait for the steps. It
// reports whether all are well and no step runs.
func (r *recoverer) pass(ctx context.Context) bool {
	// A slave whose step runs now, or ran during the check, was read
	// half-way through it (a reconnect's PREOP): what the check says of
	// it is stale, and the next check reads it again.
	for _, st := range r.slaves {
		st.stale = st.busy.Load()
	}
	var err error
	start := r.now()
	r.health, err = r.m.CheckSlaves(ctx, r.health)
	r.slow("check", -1, start, err)
	if err != nil {
		// Nothing answers: the link is down or the segment is gone. The
		// cycle reports the link; keep looking.
		return false
	}
	well := true
	for _, h := range r.health {
		st := r.slaves[h.Position]
		if st == nil {
			// Every slave was in OP at bring-up, which is where it
			// was reported last.
			st = &slaveRecovery{reported: esc.ALStatus{State: esc.StateOp}, reportedSet: true}
			r.slaves[h.Position] = st
		}
		if st.stale || st.busy.Load() {
			// Its step runs, or ran during the check.
			well = false
			continue
		}
		if h.Present {
			r.reportState(h, st)
		}
		if r.held(h.Position) {
			// A maintenance procedure has it out of OP on purpose.
			well = false
			continue
		}
		switch {
		case !h.Present, st.lost && !configured(h):
			// Gone; or back at its address but below SAFEOP: a
			// reconnect that was cut short (a frame lost, the device
			// gone again), which only a full reconnect completes.
			well = false
			if !st.lost {
				st.lost, st.refused, st.attempts = true, false, 0
				st.next, st.addressed = time.Time{}, time.Time{}
				st.reportedSet = false
				r.report(shm.EventSlaveLost, h.Position, 0, 0, "does not answer")
			}
			r.start(ctx, st, func() { r.absent(ctx, h.Position, st) })
		case st.lost && !st.addressed.IsZero():
			// Where a reconnect of ours that was cut short took it
			// (its last frames lost): that reconnect ends in OP.
			st.lost = false
			if h.Healthy(esc.StateOp) {
				r.reconnected(h.Position, st, r.now().Sub(st.addressed), "reconfigured, in OP")
			} else {
				well = false
				r.start(ctx, st, func() { r.toOp(ctx, h, st) })
			}
		case st.lost:
			// Back with its configuration (it kept power: a cable, or
			// it was behind the break).
			st.lost = false
			r.report(shm.EventSlaveFound, h.Position, 0, 0, "answers again")
			if !h.Healthy(esc.StateOp) {
				well = false
				r.start(ctx, st, func() { r.toOp(ctx, h, st) })
			}
		case !h.Healthy(esc.StateOp):
			well = false
			r.start(ctx, st, func() { r.toOp(ctx, h, st) })
		default:
			st.attempts = 0
		}
	}
	return well
}

// start runs step for the slave st in a goroutine of its own, on a
// thread set up like the worker's, when it is due and a lane is free;
// otherwise the next pass looks again.
func (r *recoverer) start(ctx context.Context, st *slaveRecovery, step func()) {
	if r.now().Before(st.next) || ctx.Err() != nil {
		return
	}
	select {
	case r.lanes <- struct{}{}:
	default:
		return // every lane taken: the next pass
	}
	st.busy.Store(true)
	r.steps.Go(func() {
		defer func() {
			st.busy.Store(false) // after the step's writes to st
			<-r.lanes
		}()
		runtime.LockOSThread()
		setup := rt.Apply(r.rt)
		defer releaseThread(setup)
		step()
	})
}

// releaseThread gives a step's thread back to the runtime once its
// set-up is undone; one that could not be restored stays locked and ends
// with its goroutine, rather than run other goroutines with a real-time
// priority. A thread that ends is one fewer idle thread the runtime
// keeps: the cycle thread, which hands its P to an idle thread whenever
// the runtime asks for it (cycle.Config.SleepKeepsP), then finds none
// and has the runtime make one — 7 allocations on the cycle thread, once
// the steps of a few recovery episodes had ended the threads made
// beforehand (rt.WarmThreads; TestFaultStorm, the cycle process's
// mallocs_in_cycle after long runs).
func releaseThread(setup *rt.Setup) {
	if setup.Close() == nil {
		runtime.UnlockOSThread()
	}
}

// absent is the step of a slave that does not answer at its station
// address (pass reported it lost): it is reconnected when a device
// answers at its position again.
func (r *recoverer) absent(ctx context.Context, pos int, st *slaveRecovery) {
	start := r.now()
	rep, err := r.m.Reconnect(ctx, pos)
	r.slow("reconnect", pos, start, err)
	var mismatch *master.IdentityMismatchError
	if err != nil && rep.Addressed && st.addressed.IsZero() {
		st.addressed = start
	}
	switch {
	case err == nil:
		st.lost, st.refused = false, false
		took := rep.Took
		if !st.addressed.IsZero() {
			took = r.now().Sub(st.addressed) // from the first attempt's address
		}
		text := "reconfigured, in OP"
		if rep.Replaced {
			text = "replaced: serial " + rep.Identity.String()
		}
		r.reconnected(pos, st, took, text)
	case errors.Is(err, master.ErrStillConfigured) && !st.addressed.IsZero():
		// Configured by an earlier attempt of ours: the next pass reads
		// its state and finishes that reconnect.
	case errors.Is(err, master.ErrStillConfigured):
		// It kept power and configuration (it was behind the break):
		// found, and taken back to OP by the next pass if need be.
		st.lost = false
		r.report(shm.EventSlaveFound, pos, 0, 0, "answers again")
	case errors.Is(err, master.ErrAcyclicQueueFull):
		// Refused before a frame went out: no attempt, look again soon.
		st.next = r.now().Add(absentPoll)
		r.log.Warn("reconnect not started: the acyclic queue to the cycle is full", "position", pos, "err", err)
	case errors.Is(err, master.ErrSlaveAbsent), errors.Is(err, master.ErrNoResponse):
		// Not there yet, or a frame of the reconnect went unanswered (a
		// loaded host, a device still booting): look again soon, it is
		// no refusal to back off from.
		st.next = r.now().Add(absentPoll)
	case errors.As(err, &mismatch):
		if !st.refused {
			st.refused = true
			text := mismatch.Got.String()
			if t := mismatch.Topology; t != nil {
				text = t.Field + ": expected " + t.Expected + ", found " + t.Found
			}
			r.report(shm.EventSlaveRefused, pos, 0, 0, text)
			r.log.Error("another device at a slave's position: not configured", "position", pos, "err", err)
		}
		st.next = r.now().Add(refusedRetry)
	default:
		// A device that answers but fails part of its configuration is
		// retried soon: it came back to be used, within a second.
		st.attempts++
		st.next = r.now().Add(min(backoff(st.attempts), reconnectRetryMax))
		r.log.Warn("reconnect failed", "position", pos, "attempt", st.attempts, "err", err)
	}
}

// reconnected reports the slave at pos back in OP after a reconnect that
// took took.
func (r *recoverer) reconnected(pos int, st *slaveRecovery, took time.Duration, text string) {
	st.attempts, st.addressed = 0, time.Time{}
	st.reported, st.reportedErr, st.reportedSet = esc.ALStatus{State: esc.StateOp}, 0, true
	r.report(shm.EventSlaveReconnected, pos, uint64(took), 0, text)
}

// toOp acknowledges a slave's AL error and takes it back to OP, with
// back-off between failed attempts.
func (r *recoverer) toOp(ctx context.Context, h master.SlaveHealth, st *slaveRecovery) {
	if h.Position >= len(r.m.Slaves()) {
		return
	}
	s := r.m.Slaves()[h.Position]
	code := h.Code
	start := r.now()
	err := r.m.Recover(ctx, s, esc.StateOp)
	r.slow("recover", h.Position, start, err)
	if err == nil && !st.addressed.IsZero() {
		r.reconnected(h.Position, st, r.now().Sub(st.addressed), "reconfigured, in OP")
		return
	}
	if err == nil {
		st.attempts = 0
		st.reported, st.reportedErr, st.reportedSet = esc.ALStatus{State: esc.StateOp}, 0, true
		r.report(shm.EventALAcknowledged, h.Position, 0, code, "back in OP")
		return
	}
	if errors.Is(err, master.ErrAcyclicQueueFull) || errors.Is(err, master.ErrNoResponse) {
		// Refused before a frame went out, or its frames went unanswered
		// (lost, or a loaded host let a datagram's wait run out before
		// the cycle carried it): the slave refused nothing. No attempt,
		// no event; the next check reads it again soon.
		st.next = r.now().Add(absentPoll)
		r.log.Warn("return to OP cut short: no refusal of the slave's", "position", h.Position, "err", err)
		return
	}
	var re *master.RecoveryError
	if errors.As(err, &re) {
		code = re.Code
	}
	st.attempts++
	st.next = r.now().Add(backoff(st.attempts))
	// Every failure is counted by the agent; the log says it at the
	// first and then at each doubling.
	r.report(shm.EventRecoveryFailed, h.Position, uint64(st.attempts), code, "refuses OP")
	if st.attempts&(st.attempts-1) == 0 {
		r.log.Warn("slave refuses to return to OP", "position", h.Position, "attempt", st.attempts, "err", err)
	}
}

// reportState reports the AL status a per-slave read found when it is not
// the one last reported: which slave is in SAFEOP+ERR, or back in PREOP
// after a power cycle, is known from here only (the cycle's own read is
// the OR of every slave's status).
func (r *recoverer) reportState(h master.SlaveHealth, st *slaveRecovery) {
	if st.reportedSet && h.State == st.reported && h.Code == st.reportedErr {
		return
	}
	st.reported, st.reportedErr, st.reportedSet = h.State, h.Code, true
	var b [esc.ALStatusLen]byte
	h.State.Encode(b[:])
	ev := shm.Event{Kind: shm.EventSlaveState, Slave: uint16(h.Position), ALStatusCode: uint16(h.Code),
		ALState: uint16(b[0]) | uint16(b[1])<<8}
	ev.SetText(h.State.String())
	if !r.e.Report(ev) {
		r.log.Warn("recovery event lost: the queue to the cycle is full", "kind", ev.Kind.String(), "position", h.Position)
	}
}

// slow logs a step that took longer than slowStep, with its outcome.
func (r *recoverer) slow(step string, pos int, start time.Time, err error) {
	if took := r.now().Sub(start); took > slowStep {
		r.log.Warn("recovery step slow", "step", step, "position", pos, "took", took.Round(time.Millisecond), "err", err)
	}
}

// configured reports a slave that answers in SAFEOP or OP: it has its
// SyncManagers, FMMUs and clock, and Recover can take it to OP.
func configured(h master.SlaveHealth) bool {
	return h.Present && (h.State.State == esc.StateSafeOp || h.State.State == esc.StateOp)
}

// report hands an event to the cycle, which writes it to the ring.
func (r *recoverer) report(kind shm.EventKind, pos int, value uint64, code esc.ALStatusCode, text string) {
	ev := shm.Event{Kind: kind, Slave: uint16(pos), Value: value, ALStatusCode: uint16(code)}
	ev.SetText(text)
	if !r.e.Report(ev) {
		r.log.Warn("recovery event lost: the queue to the cycle is full", "kind", kind.String(), "position", pos)
	}
}

// backoff is the wait after the nth failed attempt.
func backoff(n int) time.Duration {
	d := retryMin << min(n-1, 10)
	return min(d, retryMax)
}

// held reports whether a maintenance procedure holds the slave at pos
// (master.Slave.Hold): recovery leaves it alone until it is given back.
func (r *recoverer) held(pos int) bool {
	slaves := r.m.Slaves()
	return pos >= 0 && pos < len(slaves) && slaves[pos].Held()
}
