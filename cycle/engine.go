package cycle

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/internal/realtime/spsc"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// Config says how the engine runs.
type Config struct {
	// Period is the cycle time.
	Period time.Duration
	// BusyWait is the tail before each deadline spent spinning instead of
	// sleeping (0: sleep all the way).
	BusyWait time.Duration
	// SleepKeepsP makes the cycle's sleep keep its P (a raw system call,
	// rt.SleepUntilInterrupted): for the cycle process, whose cycle thread
	// is its only sleeper, with GOMAXPROCS ≥ 2, so that the other
	// goroutines have a P of their own. The cycle then yields to the Go
	// scheduler only for the runtime: when it asks for the P, from within
	// the sleep, or just before it would (see Engine.sleep).
	SleepKeepsP bool
	// RT is the thread set-up; settings the host refuses are reported as
	// events and the cycle runs anyway.
	RT rt.Options
	// Cycles stops the engine after this many cycles; 0 runs until Stop.
	Cycles uint64
	// AlarmCycles raises the bus alarm (EventBusAlarm) after this many
	// consecutive cycles with a lost frame or a wrong working counter,
	// and clears it after as many clean cycles; 0 disables the alarm.
	AlarmCycles int
	// Pipelined runs the exchange pipelined when the link allows it
	// (master.CanPost): each cycle collects the answers to the frames the
	// previous one sent (master.Collect), runs its jobs on those inputs
	// and sends its frames (master.Post) without waiting, as IgH's master
	// and TwinCAT do. The frames have the whole period for their round
	// trip and the cycle thread one context switch a period, its sleep.
	// Otherwise each cycle sends its frames and waits for their answers.
	Pipelined bool
	// KeepGC leaves the garbage collector on. Only tests that share a
	// process with other goroutines set it.
	KeepGC bool
}

// Engine runs the cycle of one bus.
type Engine struct {
	m    *master.Master
	seg  *shm.Segment
	cfg  Config
	stop atomic.Bool

	// Pre-allocated records: the loop only fills them.
	sample shm.Sample
	event  shm.Event
	cmd    shm.Command

	cycle     uint64
	badRun    int  // consecutive cycles with a lost frame or a wrong WKC
	goodRun   int  // consecutive clean cycles
	alarm     bool // the bus alarm is raised
	alarmLost bool // ... for lost frames (else for the working counter)
	lostRun   int  // consecutive cycles with a lost frame
	wkcRun    int  // consecutive cycles with every frame back and a wrong WKC
	linkDown  bool // the link refused to send
	pipelined bool // Config.Pipelined and the link can post
	busKnown  bool // lastBus holds a read of the AL status
	// discardedAt is when the discarded frames were last looked at,
	// discarded their counts (invalid, foreign, mismatched) as reported.
	discardedAt int64
	discarded   [3]uint64
	linkAt      int64  // when the link's counters were last read (publishLink)
	dc          dcSync // keeps the schedule on the DC reference, when configured
	dcOn        bool
	dcRef       int    // ring position of the reference clock
	dcStep      int64  // correction the controller asks of the next deadline
	lastBus     uint32 // responding<<16 | error<<8 | states, as last reported
	setup       *rt.Setup
	slaveCount  int
	stall       func() // tests only: runs inside the job to provoke overruns
	// yields counts the sleeps a signal interrupted, at each of which the
	// cycle let the runtime take its P if it had asked, and its yields
	// ahead of a request (see sleep).
	yields uint64
	// asks foresees the runtime's next request (see yieldAhead).
	asks askForecast
	// yieldLate is set when a yield returned after the next deadline;
	// the next sample carries shm.SampleYieldLate.
	yieldLate bool
	// yielded, when set (tests), runs where the cycle lets the runtime
	// take its P: a stand-in for a slow hand-back.
	yielded func()
	// yield yields to the Go scheduler ahead of a request (yieldAhead):
	// runtime.Gosched, or a test's stand-in.
	yield func()

	// OnStart, if set, runs on the cycle thread after the real-time set-up
	// and before the garbage collector is switched off: the place for the
	// last allocations (reporting the set-up).
	OnStart func(*rt.Setup)
	// Jobs run every cycle before the exchange, in order (see Job). Set
	// them before Run.
	Jobs []Job

	// trouble wakes the recovery worker when a cycle shows a problem
	// (troubled tells it there is some); reports carries the worker's
	// events to the cycle, which owns the event ring. Neither blocks the
	// cycle or takes a lock (spsc).
	trouble  spsc.Signal
	troubled atomic.Bool
	reports  *spsc.Ring[shm.Event]
	reportMu sync.Mutex // among Report's callers; never the cycle's
	report   shm.Event  // the cycle's copy of a popped report

	// emergencies receives the master's queued CoE emergency messages
	// each cycle; its capacity is allocated in New.
	emergencies []master.SlaveEmergency

	// OnSteady, if set, runs on the cycle thread once, between cycle
	// SteadyAfter-1 and SteadyAfter of this Run (0: before the first), when
	// first-use initialisation is behind the cycle (e.g. to read MemStats).
	OnSteady    func()
	SteadyAfter uint64
}

// New returns an engine for the master m, which must be in OP (or SAFEOP)
// with its process image mapped, writing to the segment seg.
func New(m *master.Master, seg *shm.Segment, cfg Config) *Engine {
	e := &Engine{m: m, seg: seg, cfg: cfg, slaveCount: len(m.Slaves()),
		emergencies: make([]master.SlaveEmergency, 0, master.EmergencyQueueLen), yield: runtime.Gosched}
	e.reports, _ = spsc.NewRing[shm.Event](reportQueueLen) // a power of two
	e.trouble.Prepare(1)                                   // for the recovery worker's WaitTrouble
	if setup, _, ok := m.DC(); ok && setup.Reference != nil {
		e.dcOn, e.dcRef = true, setup.Reference.Position
		e.dc = newDCSync(int64(cfg.Period))
	}
	return e
}

// Stop asks the engine to return after the current cycle. Safe from any
// goroutine or a signal handler's goroutine.
func (e *Engine) Stop() { e.stop.Store(true) }

// Setup returns what the thread set-up achieved, after Run has started.
func (e *Engine) Setup() *rt.Setup { return e.setup }

// Run runs the cycle on the calling goroutine's thread until Stop or
// Config.Cycles. It locks the thread, applies the real-time settings,
// switches the garbage collector off (after one last collection), and
// returns the number of cycles this call ran.
func (e *Engine) Run() uint64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e.setup = rt.Apply(e.cfg.RT)
	gcPercent, gcOff := 0, false
	defer func() {
		// The thread back as it came before the collector is on
		// again: once unlocked, it may run the collector's workers.
		e.setup.Close()
		if gcOff {
			debug.SetGCPercent(gcPercent)
		}
	}()
	for _, r := range e.setup.Refused() {
		e.note(shm.EventNote, 0, "rt: "+r.Setting+" refused")
	}
	if e.OnStart != nil {
		e.OnStart(e.setup)
	}
	if !e.cfg.KeepGC {
		gcPercent, gcOff = debug.SetGCPercent(-1), true
		// Collect and return memory to the OS now, then let the runtime's
		// background scavenger run and re-arm its timer (its first sleep
		// grows a timer heap: a runtime allocation that belongs here, not
		// in a cycle).
		debug.FreeOSMemory()
		time.Sleep(20 * time.Millisecond)
	}
	e.seg.Heartbeat().SetCyclePID(osPID())
	e.note(shm.EventCycleStarted, 0, "")

	p := int64(e.cfg.Period)
	spin := int64(e.cfg.BusyWait)
	next := rt.Now() + p
	var skipped uint32
	first := e.cycle
	e.yieldLate = false
	e.pipelined = e.cfg.Pipelined && e.m.CanPost()
	if e.pipelined {
		// The first cycle collects these.
		e.m.Post(time.Now().Add(time.Duration(p)))
		defer func() { e.drain(next) }()
	}
	for !e.stop.Load() && (e.cfg.Cycles == 0 || e.cycle-first < e.cfg.Cycles) {
		if e.OnSteady != nil && e.cycle-first == e.SteadyAfter {
			e.OnSteady()
			// Its time is not the cycle's: start the schedule afresh,
			// with no late yield to report.
			next = max(next, rt.Now()+p)
			e.yieldLate = false
		}
		e.sleep(next, spin)
		end := e.step(next, skipped)
		skipped = 0
		next += p + e.dcStep
		if end > next {
			missed := (end-next)/p + 1
			skipped = uint32(missed)
			next += missed * p
			e.sample.Flags |= shm.SampleOverrun
		}
		e.publish(end)
		e.yieldAhead(end, next)
	}
	e.publishLink(rt.Now()) // the last figures, for the agent's accounting
	return e.cycle - first
}

// sleep sleeps until next, busy-waiting its last spin ns (Config.BusyWait).
//
// A sleep that keeps its P (Config.SleepKeepsP) is a raw system call, and
// to the runtime the cycle goroutine never stops running: sysmon asks for
// its P once it has held it for 10 ms (forcePreemptNS), with a signal
// that cuts the sleep short. The cycle yields then, inside its sleep
// (yieldAsked), and sleeps on; it yields on its own only just before a
// request due where serving it could make a cycle late (yieldAhead). It
// used to yield every 5 ms after its frames went out, so that the request
// would never come: about 170 hand-overs of its P a second, each a round
// of futex calls and wake-ups across three threads of the process (3.0
// system calls and 1.7 context switches a cycle on the mmap link, where
// the cycle's own are 2 and 1). Asked, it hands the P over once per two
// sysmon ticks, about 50 times a second (docs/performance.md). A
// stop-the-world's request comes the same way and is served within
// microseconds instead of at the sleep's end.
//
// A request that comes while the cycle runs its job is served there, at
// the runtime's next safe point (a few % of them at 1 ms: the share of
// the period the cycle is not asleep; yieldAhead avoids those it
// foresees).
func (e *Engine) sleep(next, spin int64) {
	if !e.cfg.SleepKeepsP {
		rt.SleepUntilSpin(next, spin, false)
		return
	}
	until := next
	if spin > 0 {
		until = next - spin
	}
	for rt.SleepUntilInterrupted(until) {
		e.asks.asked(rt.Now()) // the vDSO's clock: no call that could yield first
		e.yieldAsked(next)
	}
	if spin > 0 {
		rt.SpinUntil(next)
	}
}

// forecastPeriod is the longest period for which the cycle yields ahead
// of the runtime's request (yieldAhead): the yield, up to a period and a
// half before the request, must come after sysmon's tick before it.
const forecastPeriod = 2 * time.Millisecond

// yieldAhead yields to the scheduler after the cycle that ended at end
// when the runtime's next request for the P (askForecast) is due where
// serving it could make a cycle late: in the last quarter of the coming
// sleep, or in the next cycle's job (then at the job's next safe point).
// This cycle's frames are out and at least half a period is left: the
// hand-over has room, and the request moves one sysmon tick on. Sysmon's
// tick is not a whole number of periods, so a request's place in the
// period drifts (about 0.1 ms a request at 1 ms here): the cycle yields
// ahead while it drifts through those places, and lets the runtime ask
// otherwise.
func (e *Engine) yieldAhead(end, next int64) {
	p := int64(e.cfg.Period)
	if !e.cfg.SleepKeepsP || p > int64(forecastPeriod) || next-end < p/2 {
		return
	}
	due := e.asks.next(end)
	const slop = 50_000 // the forecast's error: sysmon's wake-up and the signal's
	if due == 0 || due < next-p/4-slop || due > next+p/8+slop {
		return
	}
	e.yield()
	e.asks.yielded()
	e.yields++
	e.yieldLate = e.yieldLate || rt.Now() > next
}

// yieldAsked runs when a signal cut the sleep to next short. If the
// runtime asked for the cycle's P, the goroutine yields at its next
// function call, which this call is (a function that calls another, and
// is not inlined, checks for a request on entry): the P goes to another
// thread and comes back through it. Calling runtime.Gosched here would
// hand the P over a second time. A signal that was not the runtime's
// request (SIGTERM, a test's SIGURG) costs nothing more.
//
//go:noinline
func (e *Engine) yieldAsked(next int64) {
	if e.yielded != nil {
		e.yielded()
	}
	e.yields++
	e.yieldLate = e.yieldLate || rt.Now() > next
}

// step runs one cycle woken for deadline and fills e.sample; it returns
// the time the job ended. It allocates nothing.
func (e *Engine) step(deadline int64, skipped uint32) int64 {
	wake := rt.Now()
	if e.stall != nil {
		e.stall()
	}
	var res master.CycleResult
	if e.pipelined {
		res = e.m.Collect()
	}
	e.applyCommands()
	for _, j := range e.Jobs {
		e.event = shm.Event{}
		if j.Cycle(wake, &e.event) {
			e.event.Cycle, e.event.Time = e.cycle, wake
			e.seg.Events().Push(&e.event)
		}
	}
	p := int64(e.cfg.Period)
	if e.pipelined {
		// Collected when the next cycle wakes.
		e.m.Post(time.Now().Add(time.Duration(deadline + p - wake)))
	} else {
		// The frame may use the rest of this period, less a tenth so
		// that a lost frame does not also make the next cycle late.
		wait := deadline + p - p/10 - wake
		res = e.m.ExchangeUntil(time.Now().Add(time.Duration(wait)))
	}
	end := rt.Now()

	s := &e.sample
	*s = shm.Sample{
		Cycle:       e.cycle,
		Deadline:    deadline,
		Wake:        wake,
		Send:        res.SendTime,
		Recv:        res.RecvTime,
		End:         end,
		WKC:         res.WKC,
		ExpectedWKC: res.ExpectedWKC,
		Skipped:     uint16(min(skipped, 0xFFFF)),
	}
	if res.FrameLost() {
		s.Flags |= shm.SampleLostFrame
		s.Recv = s.Send
	}
	// A lost frame is not also a working-counter error: the counter of a
	// frame that did not come back is unknown.
	if res.Lost == 0 && res.WKC != res.ExpectedWKC {
		s.Flags |= shm.SampleWKCMismatch
	}
	if res.Stale > 0 {
		s.Flags |= shm.SampleLateAnswer
	}
	if skipped > 0 {
		s.Flags |= shm.SampleSkipped
	}
	if res.Acyclic > 0 {
		s.Flags |= shm.SampleAcyclic
	}
	if res.AcyclicFrames > 0 {
		s.Flags |= shm.SampleAcyclicFrame
	}
	if e.yieldLate {
		s.Flags |= shm.SampleYieldLate
		e.yieldLate = false
	}
	e.trackDC(&res)
	e.watchBus(&res)
	e.watchLink(&res)
	e.watchAlarm(&res)
	e.signalTrouble(&res)
	e.reportEmergencies()
	e.reportDiscarded(end)
	e.forwardReports(end)
	return end
}

// drain takes the answers to the frames the last cycle posted, so that
// the acyclic requests they carry are answered, waiting until the time
// the next cycle would have collected them.
func (e *Engine) drain(at int64) {
	rt.SleepUntil(at)
	_ = e.m.Collect()
}

// trackDC records the distributed-clock figures of the cycle and runs the
// controller that keeps the schedule on the reference clock.
func (e *Engine) trackDC(res *master.CycleResult) {
	s := &e.sample
	prevStep := e.dcStep
	e.dcStep = 0
	// The reference's own 0x092C is never updated (nothing is written
	// to it): only the other clocks' differences mean something.
	if res.DCDiffValid && res.DCDiffPosition != e.dcRef {
		s.DCDiff = res.DCDiff
		s.Flags |= shm.SampleDCValid
	}
	if !e.dcOn || !res.DCValid {
		return
	}
	t := res.DCTime
	if e.pipelined {
		// The frame was sent a cycle ago, before the last correction
		// moved this cycle's wake: the frame this cycle sends will pass
		// the reference that much later (a correction is negative when
		// the master was late). Without this the controller would see
		// each correction one cycle late and take it out twice.
		t = uint64(int64(t) + prevStep)
	}
	errNS, step := e.dc.update(t)
	s.CtlErr = int32(min(max(errNS, -1<<31), 1<<31-1))
	s.Flags |= shm.SampleCtlValid
	e.dcStep = step
}

// reportQueueLen bounds the worker's events waiting for the cycle (a
// power of two).
const reportQueueLen = 256

// WaitTrouble blocks until a cycle has shown fewer slaves answering, a
// slave not in OP or one with its error indication since the last call
// (see signalTrouble), or ctx ends; it reports whether there was trouble.
// One goroutine (the recovery worker) calls it.
func (e *Engine) WaitTrouble(ctx context.Context) bool {
	// The end of ctx wakes the wait too, so it can sleep long: every
	// wake-up is work for the runtime, and each one keeps its sysmon
	// thread polling at 20 µs for a while (a 50 ms poll cost the cycle
	// process 1.1 context switches and ~20 µs of CPU per 1 ms cycle).
	stop := context.AfterFunc(ctx, e.trouble.Notify)
	defer stop()
	for ctx.Err() == nil {
		seq := e.trouble.Seq()
		if e.troubled.Swap(false) {
			return true
		}
		e.trouble.Wait(seq, troubleWait)
	}
	return false
}

// troubleWait is the longest WaitTrouble sleeps at once.
const troubleWait = 10 * time.Second

// Report hands an event to the cycle, which pushes it to the event ring
// with its cycle number and time set. It does not block on the cycle; it
// returns false when the queue is full (the event is lost). Safe from
// several goroutines: they take turns on a lock the cycle never takes.
func (e *Engine) Report(ev shm.Event) bool {
	e.reportMu.Lock()
	defer e.reportMu.Unlock()
	return e.reports.Push(&ev)
}

// forwardReports pushes the worker's events to the ring.
func (e *Engine) forwardReports(now int64) {
	for e.reports.Pop(&e.report) {
		e.report.Cycle, e.report.Time = e.cycle, now
		e.seg.Events().Push(&e.report)
	}
}

// signalTrouble wakes the recovery worker when the cycle's AL status read
// shows a slave missing, out of OP or with its error indication. Lost
// frames and working-counter errors alone are counted, not recovered
// from: the next cycle is the retry, and the recovery's frames (and
// allocations) stay out of a cycle process that merely lost a frame.
func (e *Engine) signalTrouble(res *master.CycleResult) {
	if res.Lost > 0 && res.Responding == 0 {
		return // the status read did not come back: nothing known
	}
	if int(res.Responding) == e.slaveCount && res.ALStates == uint8(esc.StateOp) && !res.ALError {
		return
	}
	if !e.troubled.Swap(true) {
		e.trouble.Notify()
	}
}

// reportEmergencies turns the CoE emergency messages the exchange (or
// earlier mailbox traffic) received into events.
func (e *Engine) reportEmergencies() {
	e.emergencies = e.m.Emergencies(e.emergencies[:0])
	for i := range e.emergencies {
		em := &e.emergencies[i]
		e.event = shm.Event{Cycle: e.cycle, Time: rt.Now(), Kind: shm.EventEmergency, Slave: uint16(em.Position),
			Value: shm.EmergencyValue(em.Emergency.ErrorCode, em.Emergency.ErrorRegister, em.Emergency.Data)}
		e.seg.Events().Push(&e.event)
	}
}

// publish hands the cycle's results to the agent: sample, image, heartbeat.
func (e *Engine) publish(end int64) {
	e.seg.Samples().Push(&e.sample) // a full ring drops and counts
	e.seg.Image().Publish(e.m.Image().Bytes(), e.cycle)
	hb := e.seg.Heartbeat()
	hb.CountFrames(e.m.FrameTotals())
	hb.CountLate(e.m.LateFrames())
	if end-e.linkAt >= int64(linkEvery) {
		e.publishLink(end)
	}
	hb.Beat(e.cycle, end)
	e.cycle++
}

// applyCommands applies what the agent asked for since the last cycle, at
// this cycle boundary, so no output changes in the middle of an exchange.
// Only output writes are taken in the cycle; anything that needs acyclic
// frames is refused with a reason.
func (e *Engine) applyCommands() {
	cmds := e.seg.Commands()
	for cmds.Next(&e.cmd) {
		c := &e.cmd
		var reason string
		taken := false
		for _, j := range e.Jobs {
			if ok, why := j.Command(c); ok {
				taken, reason = true, why
				break
			}
		}
		switch {
		case taken:
		case c.Kind != shm.CommandSetOutputs:
			reason = "not applied in the cycle"
		case int(c.Slave) >= e.slaveCount:
			reason = "no such slave"
		case c.BitLen == 0 || c.BitLen > 64:
			reason = "bit length not 1..64"
		default:
			s := e.m.Slaves()[c.Slave]
			if err := e.m.Image().SetOutputValue(s, int(c.BitOffset), int(c.BitLen), c.Value); err != nil {
				reason = "bits outside the slave's outputs"
			}
		}
		e.event = shm.Event{Cycle: e.cycle, Time: rt.Now(), Value: c.Seq, Slave: c.Slave, Kind: shm.EventCommandDone}
		if reason != "" {
			e.event.Kind = shm.EventCommandRejected
			e.event.SetText(reason)
		}
		e.seg.Events().Push(&e.event)
	}
	cmds.Commit()
}
