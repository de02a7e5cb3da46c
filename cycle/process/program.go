package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle"
	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/link/xdp"
	"github.com/ecagent/ecagent/shm"
)

// IsBusMismatch reports whether err says the segment is not as
// configured (a cycle process exits with ExitBusMismatch for it).
func IsBusMismatch(err error) bool {
	var count *master.SlaveCountError
	var state *master.ALStateError
	var topology *master.TopologyError
	var startup *master.StartupError
	return errors.As(err, &count) || errors.As(err, &state) || errors.As(err, &topology) || errors.As(err, &startup)
}

// Options are what the agent tells a cycle process beyond the
// configuration.
type Options struct {
	// LinkFD is an inherited file descriptor of a link to the segment (a
	// socket pair to a simulated segment in another process); -1 opens
	// bus.interface instead.
	LinkFD int
	// Cycles stops after this many cycles (benchmarks, tests); 0 runs
	// until SIGTERM or SIGINT.
	Cycles uint64

	// running, when set (tests), is called just before cyclic operation
	// starts, with the recovery worker: a test tells from it when no
	// recovery episode runs.
	running func(*recoverer)
	// BringUpReport, when not nil, is told why bring-up failed — one line
	// of JSON, a contract.BringUpFailure — and closed, unwritten, once the cycle
	// runs (a pipe the agent reads: it then knows why without parsing
	// the log).
	BringUpReport io.WriteCloser
}

// FailureReason classifies an error of Run for a contract.BringUpFailure.
func FailureReason(err error) string {
	var le *linkError
	switch {
	case IsBusMismatch(err):
		return contract.ReasonNotAsConfigured
	case errors.As(err, &le):
		return contract.ReasonLink
	case errors.Is(err, master.ErrNoResponse), errors.Is(err, master.ErrNoSlaves):
		return contract.ReasonNoAnswer
	}
	return contract.ReasonFailed
}

// linkError is an error opening the link to the segment.
type linkError struct{ err error }

func (e *linkError) Error() string { return e.err.Error() }
func (e *linkError) Unwrap() error { return e.err }

// Report is what a cycle process did, printed by it on exit.
type Report struct {
	Cycles uint64
	// Mallocs counts heap allocations made by the whole process during
	// cyclic operation from the second cycle on (runtime.MemStats.Mallocs
	// after minus before). It is 0 when the steady state is
	// allocation-free, as it must be.
	Mallocs uint64
	// NumGC counts garbage collections during cyclic operation.
	NumGC uint32
	// RecoveryEpisodes counts the recovery worker's episodes begun during
	// cyclic operation, MaintenanceRequests the requests the maintenance
	// endpoint took (ecagent slaves, reg, sii …). Both allocate (an
	// episode reads every slave, starts steps, logs; a request decodes
	// and encodes JSON) on their own goroutines while the cycle runs on:
	// Mallocs above 0 with neither are the cycle's, and a defect. What
	// they leave behind must not make the cycle allocate afterwards
	// (TestCycleAllocatesNothingAfterMaintenance, TestFaultStorm).
	RecoveryEpisodes    uint64
	MaintenanceRequests uint64
}

// Run is the body of ecagent-cycle: it attaches to the shared-memory
// segment cfg.Cycle.SHM that the agent created, opens the link, brings
// the bus to OP, writes the bus description, and runs the real-time cycle
// until SIGTERM/SIGINT or o.Cycles, then takes the bus to INIT.
// Everything that allocates happens before cyclic operation starts. An
// error is a failed bring-up, told to o.BringUpReport too.
func Run(ctx context.Context, cfg Config, o Options, log *slog.Logger) (rep Report, err error) {
	report := &bringUpReport{w: o.BringUpReport}
	defer func() { report.finish(err) }()
	period := time.Duration(cfg.Cycle.Period)
	// SIGPIPE from a closed stderr (the agent died) must not kill the cycle.
	signal.Ignore(syscall.SIGPIPE)
	seg, err := attachSegment(cfg.Cycle.SHM, period)
	if err != nil {
		return rep, err
	}
	defer seg.Close()
	defer claimInterface(ctx, cfg, o, log)()
	l, err := openCycleLink(cfg, o, log)
	if err != nil {
		return rep, err
	}
	m, err := master.New(l, MasterConfig(cfg, log))
	if err != nil {
		_ = l.Close()
		return rep, err
	}
	defer m.Close()
	jobs, err := bringUpBus(ctx, m, seg, cfg, log)
	if err != nil {
		return rep, err
	}
	info := NewBusInfo(m, period)
	e := newEngine(m, seg, cfg, o)
	e.Jobs = jobs
	defer stopOnSignal(ctx, e)()
	e.OnStart = func(s *rt.Setup) {
		// Runs on the cycle thread after its set-up, before the first
		// cycle: the last moment allowed to allocate.
		announceCyclic(cfg, info, m, s, log)
		report.close() // brought up: nothing to report
	}
	// From here the cycle thread alone sends and receives: recovery's
	// datagrams ride in the cycle's frames (master.QueueAcyclic).
	m.QueueAcyclic(true, period)
	w := startWorkers(ctx, m, e, seg, cfg, info, log)
	defer w.stop(m)
	stopSpin := spinForAnswers(l, cfg)
	// Counting starts after the first cycle: it meets one first-use
	// allocation in the runtime (measured: 1 malloc, then none in 99 999
	// cycles).
	counts := &steadyCounts{episodes: w.rec.episodes.Load, requests: w.ctl.Requests}
	e.SteadyAfter = 1
	e.OnSteady = counts.start
	prepareThreads(cfg, w.rec, log)
	if o.running != nil {
		o.running(w.rec)
	}
	rep.Cycles = e.Run()
	stopSpin()
	counts.report(&rep)

	w.stop(m)
	down, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.Bus.StateTimeout))
	defer cancel()
	if err := m.RequestState(down, esc.StateInit); err != nil {
		log.Warn("taking the bus to INIT", "err", err)
	}
	return rep, nil
}

// bringUpReport is where Run tells the agent why bring-up failed
// (Options.BringUpReport): nil once the cycle runs.
type bringUpReport struct{ w io.WriteCloser }

// finish tells err, a failed bring-up, if the report is still open, and
// closes it.
func (r *bringUpReport) finish(err error) {
	if r.w == nil {
		return
	}
	if err != nil {
		line, _ := json.Marshal(contract.BringUpFailure{Reason: FailureReason(err), Error: err.Error()})
		_, _ = r.w.Write(append(line, '\n'))
	}
	r.close()
}

// close closes the report unwritten: the bus is up.
func (r *bringUpReport) close() {
	if r.w != nil {
		_ = r.w.Close()
		r.w = nil
	}
}

// bringUpBus brings the bus to OP, binds the drives' jobs and checks that
// the cycle fits its period and the process image the segment, then locks
// the segment if configured.
func bringUpBus(ctx context.Context, m *master.Master, seg *shm.Segment, cfg Config, log *slog.Logger) ([]cycle.Job, error) {
	if err := m.BringUp(ctx); err != nil {
		return nil, fmt.Errorf("bring-up: %w", err)
	}
	jobs, err := bindDrives(ctx, m, cfg.Drives, log)
	if err != nil {
		return nil, err
	}
	if err := checkCycleFits(m, time.Duration(cfg.Cycle.Period), cfg.Cycle.Exchange == ExchangePipelined, log); err != nil {
		return nil, err
	}
	if n := len(m.Image().Bytes()); n > seg.Image().Cap() {
		return nil, fmt.Errorf("cycle: process image of %d bytes does not fit the segment's %d", n, seg.Image().Cap())
	}
	if cfg.Cycle.LockMemory {
		if err := seg.Lock(); err != nil {
			log.Warn("cannot lock the shared-memory segment", "err", err)
		}
	}
	return jobs, nil
}

// newEngine makes the cycle engine of cfg on m and seg.
func newEngine(m *master.Master, seg *shm.Segment, cfg Config, o Options) *cycle.Engine {
	return cycle.New(m, seg, cycle.Config{
		Period:      time.Duration(cfg.Cycle.Period),
		BusyWait:    time.Duration(cfg.Cycle.BusyWait),
		SleepKeepsP: runtime.GOMAXPROCS(0) >= 2, // the cycle thread is this process's only sleeper
		Pipelined:   cfg.Cycle.Exchange == ExchangePipelined,
		Cycles:      o.Cycles,
		AlarmCycles: cfg.Bus.AlarmCycles,
		RT: rt.Options{Priority: cfg.Cycle.Priority, Core: cfg.Cycle.Core,
			LockMemory: cfg.Cycle.LockMemory, DMALatency: true},
	})
}

// stopOnSignal stops e on SIGTERM, SIGINT or the end of ctx; the returned
// function stops listening for the signals.
func stopOnSignal(ctx context.Context, e *cycle.Engine) (stopListening func()) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		e.Stop()
	}()
	return func() { signal.Stop(stop) }
}

// announceCyclic, on the cycle thread before its first cycle, completes
// the bus description with the real-time set-up s and writes it, and logs
// the settings the host refused and the start of cyclic operation.
func announceCyclic(cfg Config, info *BusInfo, m *master.Master, s *rt.Setup, log *slog.Logger) {
	setRT(info, s)
	if err := contract.WriteBusInfo(contract.BusInfoPath(cfg.Cycle.SHM), info); err != nil {
		log.Error("writing the bus description", "err", err)
	}
	for _, r := range s.Refused() {
		log.Warn("real-time setting refused by the host; running without it", "setting", r.Setting, "err", r.Err)
	}
	log.Info("cyclic operation", "period", time.Duration(cfg.Cycle.Period), "slaves", len(m.Slaves()),
		"expected_wkc", m.Cyclic().ExpectedWKC(), "pid", os.Getpid())
}

// workers are the goroutines that run beside the cycle and queue their
// datagrams into its frames: recovery, the maintenance endpoint (ecagent
// slaves, reg, sii …) and the error counters' poller.
type workers struct {
	rec                            *recoverer
	ctl                            *maintenance.Handler
	cancel                         context.CancelFunc
	recDone, ctlDone, countersDone <-chan struct{}
}

// startWorkers starts the workers until ctx ends or stop.
func startWorkers(ctx context.Context, m *master.Master, e *cycle.Engine, seg *shm.Segment, cfg Config, info *BusInfo, log *slog.Logger) *workers {
	w := &workers{rec: newRecoverer(m, e, log)}
	w.rec.rt = recoveryRT(cfg.Cycle.Priority)
	var recCtx context.Context
	recCtx, w.cancel = context.WithCancel(ctx)
	recDone := make(chan struct{})
	go func() { defer close(recDone); w.rec.run(recCtx) }()
	w.recDone = recDone
	w.ctlDone, w.ctl = serveControl(recCtx, m, e, seg, cfg, info, log)
	countersDone := make(chan struct{})
	counters := newErrorCountersPoller(recCtx, m, e.Report, errorCountersEvery) // allocates here, not in the cycle's steady state
	go func() {
		defer close(countersDone)
		counters.run(recCtx)
	}()
	w.countersDone = countersDone
	return w
}

// stop stops the workers and waits for them; acyclic frames then go
// straight out again, the cycle having stopped. Stopping twice is
// stopping once.
func (w *workers) stop(m *master.Master) {
	w.cancel()
	<-w.recDone
	<-w.ctlDone
	<-w.countersDone
	m.QueueAcyclic(false, 0)
}

// spinForAnswers lets the cycle thread, the link's only user from here,
// spin for its answers if configured (link.RecvSpinner); the returned
// function stops the spinning, for the frames of the way down.
func spinForAnswers(l link.Link, cfg Config) (stop func()) {
	spinner, ok := l.(link.RecvSpinner)
	if !ok || cfg.Cycle.RecvSpin <= 0 {
		return func() {}
	}
	spinner.SetRecvSpin(min(time.Duration(cfg.Cycle.RecvSpin), time.Duration(cfg.Cycle.Period)/2))
	return func() { spinner.SetRecvSpin(0) }
}

// prepareThreads makes now, rather than (allocating) in cyclic
// operation, the threads the runtime may need while the cycle yields,
// and with the cycle pinned puts every other thread of the process one
// below it, those of the runtime included, on the CPUs the cycle leaves
// (rt.Options.Core). The recovery worker's threads are then not alone at
// real-time priority among the runtime's threads of the normal
// scheduler, which they may wait for in the runtime's spin loops: on a
// host with one CPU left beside the cycle's, that is a livelock until
// real-time throttling (rt.ProcessFIFO). Unpinned, the kernel moves such
// threads to another CPU, and the runtime's work stays on the normal
// scheduler beside other processes' real-time threads.
func prepareThreads(cfg Config, rec *recoverer, log *slog.Logger) {
	rt.WarmThreads(runtime.GOMAXPROCS(0) + 4)
	if p := rec.rt.Priority; p > 0 && cfg.Cycle.Core >= 0 {
		if err := rt.ProcessFIFO(p); err != nil {
			log.Warn("real-time setting refused by the host; the process's other threads run without it", "setting", "process_fifo", "err", err)
		}
	}
}

// steadyCounts counts what the cycle process did from the cycle's steady
// state on (cycle.Engine.OnSteady): heap allocations and collections,
// recovery episodes, maintenance requests. A run stopped before it
// counted nothing and reports 0.
type steadyCounts struct {
	episodes, requests func() uint64 // running totals
	reached            bool
	before             runtime.MemStats
	episodes0          uint64
	requests0          uint64
}

// start takes the totals at the steady state's start, on the cycle
// thread; it allocates nothing.
func (c *steadyCounts) start() {
	c.reached = true
	runtime.ReadMemStats(&c.before)
	c.episodes0, c.requests0 = c.episodes(), c.requests()
}

// report puts what was counted since start in rep.
func (c *steadyCounts) report(rep *Report) {
	if !c.reached {
		return
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	rep.Mallocs = after.Mallocs - c.before.Mallocs
	rep.NumGC = after.NumGC - c.before.NumGC
	rep.RecoveryEpisodes = c.episodes() - c.episodes0
	rep.MaintenanceRequests = c.requests() - c.requests0
}

func openCycleLink(cfg Config, o Options, log *slog.Logger) (link.Link, error) {
	if o.LinkFD >= 0 {
		l, err := link.FileLink(o.LinkFD)
		if err != nil {
			return nil, fmt.Errorf("cycle: link fd %d: %w", o.LinkFD, err)
		}
		return l, nil
	}
	if cfg.Bus.Interface == "" {
		return nil, errors.New("cycle: no link: neither an inherited link nor bus.interface")
	}
	l, err := OpenInterface(cfg.Bus.Interface, link.Kind(cfg.Bus.Link), log)
	if err != nil {
		return nil, &linkError{fmt.Errorf("cycle: %w", err)}
	}
	return l, nil
}

// OpenInterface opens the link of the kind asked for (bus.link) on
// ifname for a master, or, when the host or the interface refuses it,
// the next slower kind (link.Kind.Fallbacks), saying so in the log: xdp
// needs CAP_BPF and CAP_NET_ADMIN and an interface with one receive
// queue, and an interface can hold one XDP program only. With
// link.KindAuto an xdp link in copy mode (no zero-copy driver) gives way
// to mmap, which costs the same copies and system calls without taking
// the interface's XDP hook. When every kind fails the error is the raw
// socket's.
func OpenInterface(ifname string, kind link.Kind, log *slog.Logger) (link.Link, error) {
	var refused []string
	for _, k := range kind.Fallbacks() {
		l, err := openKind(ifname, k)
		if err == nil && kind == link.KindAuto && k == link.KindXDP && !l.(*xdp.Socket).ZeroCopy() {
			_ = l.Close()
			refused = append(refused, "xdp: the driver has no zero-copy mode, and copy mode is no faster than mmap")
			continue
		}
		if err != nil {
			if k == link.KindRaw {
				return nil, err
			}
			refused = append(refused, err.Error())
			continue
		}
		attrs := []any{"interface", ifname, "link", k}
		if x, ok := l.(*xdp.Socket); ok {
			attrs = append(attrs, "xdp_mode", x.Mode(), "zero_copy", x.ZeroCopy())
		}
		if len(refused) > 0 {
			attrs = append(attrs, "bus.link", kind, "passed_over", strings.Join(refused, "; "))
		}
		if len(refused) > 0 && kind != link.KindAuto {
			log.Warn("bus.link refused by the host or the interface; using the next link that works", attrs...)
		} else {
			log.Info("link to the segment", attrs...)
		}
		return l, nil
	}
	return nil, errors.New("no link kind to try") // Fallbacks always ends with raw
}

// openKind opens one kind of link on ifname with the master's defaults.
func openKind(ifname string, k link.Kind) (link.Link, error) {
	switch k {
	case link.KindXDP:
		return xdp.Open(ifname)
	case link.KindMmap:
		return link.OpenMmap(ifname, nil)
	}
	return link.Open(ifname, nil)
}

// checkCycleFits refuses a period shorter than what the bus needs: it
// times a few exchanges and fails when even the fastest frame round trips
// take longer than the period, instead of starting an overrun storm. The
// floor is what the wire and the slaves need; what a busy host adds on top
// varies from moment to moment, so a typical (median) round trip above the
// period is a warning that frames will be late, not a refusal. It also
// walks the lost-frame and stale-answer paths once, with a deadline that
// has already passed: Go fills per-call-site type-assertion caches on
// first use (errors.Is on the link's timeout error allocates 64 bytes the
// first time), and that first time belongs in bring-up, not in cycle N.
func checkCycleFits(m *master.Master, period time.Duration, pipelined bool, log *slog.Logger) error {
	m.ExchangeUntil(time.Now()) // lost: its answer arrives late...
	time.Sleep(10 * time.Millisecond)
	m.ExchangeUntil(time.Now().Add(max(10*period, 10*time.Millisecond))) // ...and is discarded as stale here
	const n = 41
	rtts := make([]time.Duration, 0, n)
	for range n {
		res := m.ExchangeUntil(time.Now().Add(max(10*period, 10*time.Millisecond)))
		if !res.FrameLost() {
			rtts = append(rtts, res.RTT())
		}
	}
	if len(rtts) < n/2+1 {
		return fmt.Errorf("cycle: %d of %d cyclic frames did not come back while checking the cycle time", n-len(rtts), n)
	}
	slices.Sort(rtts)
	floor, median := rtts[len(rtts)/10], rtts[len(rtts)/2]
	// Pipelined, a frame has the whole period to come back; waiting, the
	// cycle's jobs need time after the answer too.
	need := func(rtt time.Duration) time.Duration {
		if pipelined {
			return (rtt * 5 / 4).Round(10 * time.Microsecond)
		}
		return (2 * rtt).Round(10 * time.Microsecond)
	}
	if floor >= period {
		return fmt.Errorf("cycle: cycle.period %v is shorter than the bus needs: the fastest tenth of %d frame round trips take %v or more (median %v); choose a period of at least %v",
			period, len(rtts), floor.Round(time.Microsecond), median.Round(time.Microsecond), need(median))
	}
	if median >= period {
		log.Warn("cycle: the median frame round trip exceeds cycle.period; expect late (lost) frames until the host is less busy",
			"period", period, "rtt_median", median.Round(time.Microsecond), "rtt_fastest_tenth", floor.Round(time.Microsecond),
			"suggested_period", need(median))
	}
	return nil
}

// claimInterface claims the interface the cycle drives and returns what
// releases the claim. The claim tells a second master (a maintenance
// command given --iface) that this process drives the segment, and
// through which segment its maintenance socket is reached. One held by
// another process is told in the log but does not stop the machine: any
// local user could bind the name.
func claimInterface(ctx context.Context, cfg Config, o Options, log *slog.Logger) (release func()) {
	if cfg.Bus.Interface == "" || o.LinkFD >= 0 {
		return func() {}
	}
	claim, err := maintenance.ClaimInterface(ctx, cfg.Bus.Interface, cfg.Cycle.SHM)
	if err != nil {
		log.Warn("another master holds the interface's claim: its frames and ours will disturb each other",
			"interface", cfg.Bus.Interface, "err", err)
		return func() {}
	}
	claim.Serve(ctx)
	return func() { _ = claim.Close() }
}

// attachSegment attaches the shared-memory segment at path, which must
// have been made for a cycle of period (or for any).
func attachSegment(path string, period time.Duration) (*shm.Segment, error) {
	seg, err := shm.Attach(path)
	if err != nil {
		return nil, err
	}
	if p := seg.Layout().Period; p != 0 && p != period {
		_ = seg.Close()
		return nil, fmt.Errorf("cycle: segment %s was made for a %v cycle, configuration says %v", path, p, period)
	}
	return seg, nil
}
