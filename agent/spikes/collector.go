package spikes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/spikes/tracefs"
	"github.com/ecagent/ecagent/shm"
)

// Options configure a Collector.
type Options struct {
	// Root is the tracefs mount (tracefs.DefaultRoot when empty);
	// Instance the name of the collector's instance under instances/.
	Root, Instance string
	// ProcRoot is /proc (for tests: another tree).
	ProcRoot string
	// CPU is the cycle's core.
	CPU int
	// BufferKB is the size of the core's ring in KiB.
	BufferKB int
	// Period is the cycle period; Threshold the share of it by which a
	// cycle must wake late (or overrun) to be explained.
	Period    time.Duration
	Threshold float64
	// Poll is how often the ring is read.
	Poll time.Duration
	// Keep is how many explained spikes Last can return.
	Keep int
	// Log receives the collector's own troubles.
	Log *slog.Logger
}

// history is how much of the trace the collector keeps: a late cycle is
// explained from the last context switch before its deadline, and a
// cycle's sample reaches the agent some milliseconds after its end.
const history = time.Second

// maxRecords bounds the records kept whatever history holds: under a
// block-I/O storm (stress-ng --io) a core raises 200 000 of the traced
// events a second, so this keeps about 650 ms of it then — a spike as
// long as RT throttling's 300 ms, and the time its sample takes to come.
// A record is 72 bytes: at most 9 MiB, touched only as far as it fills.
const maxRecords = 1 << 17

// settle is how long after a window's end the collector waits for the
// trace to cover it, at most: an idle core writes no events.
const settle = 300 * time.Millisecond

// Collector explains the cycle's spikes from a tracefs instance of its
// own. Observe is called for every sample, by one goroutine; the
// explained spikes come out of Spikes.
type Collector struct {
	opts  Options
	in    *tracefs.Instance
	dec   *decoder
	names *resolver
	late  chan window
	out   chan Spike
	done  chan struct{}
	// lateNS is the wake-up latency above which a cycle is late.
	lateNS int64

	mu     sync.Mutex
	id     identity
	pid    int
	prio   int
	idSet  bool
	last   []Spike
	lastAt int

	closeFn   func() error
	closeOnce sync.Once
	dropped   atomic.Uint64
	stealPrev int64
}

// Start opens the collector's tracefs instance on the cycle's core and
// reads it until ctx ends or Close. An error says why forensics cannot
// run (tracefs absent, not permitted: wrapping fs.ErrPermission).
func Start(ctx context.Context, opts Options) (*Collector, error) {
	if opts.Instance == "" {
		opts.Instance = "ecagent"
	}
	if opts.ProcRoot == "" {
		opts.ProcRoot = "/proc"
	}
	if opts.Poll <= 0 {
		opts.Poll = 20 * time.Millisecond
	}
	if opts.Keep <= 0 {
		opts.Keep = 256
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.CPU < 0 {
		return nil, errors.New("spikes: the cycle is not pinned (cycle.core -1): there is no one core to trace")
	}
	if opts.Period <= 0 || opts.Threshold <= 0 {
		return nil, fmt.Errorf("spikes: period %v, threshold %v: want both > 0", opts.Period, opts.Threshold)
	}
	evs := make([]string, len(traceEvents))
	for i, e := range traceEvents {
		evs[i] = e.name
	}
	filters := map[string]string{}
	for _, e := range faultEvents {
		filters[e] = "common_pid == -1" // none until the cycle's threads are known
	}
	in, err := tracefs.Open(tracefs.Config{Root: opts.Root, Name: opts.Instance, CPU: opts.CPU,
		BufferKB: opts.BufferKB, Events: evs, Filters: filters})
	if err != nil {
		return nil, err
	}
	dec, err := newDecoder(in.Formats())
	if err != nil {
		in.Close()
		return nil, err
	}
	c := &Collector{opts: opts, in: in, dec: dec, late: make(chan window, 256), out: make(chan Spike, 64),
		done: make(chan struct{}), lateNS: int64(opts.Threshold * float64(opts.Period))}
	c.names = newResolver(opts.ProcRoot, dec.irqName)
	c.stealPrev = readSteal(opts.ProcRoot, opts.CPU)
	if m := in.Missing(); len(m) > 0 {
		opts.Log.Info("forensics: events this kernel lacks, left out", "events", strings.Join(m, " "))
	}
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.run(ctx)
	}()
	go func() {
		<-c.done
		cancel()
		<-stopped
	}()
	c.closeFn = func() error {
		c.closeOnce.Do(func() { close(c.done) })
		<-stopped
		return c.in.Close()
	}
	return c, nil
}

// SetCycle names the cycle process (pid) and its thread's SCHED_FIFO
// priority: its threads are read from ProcRoot.
func (c *Collector) SetCycle(pid, priority int) {
	c.mu.Lock()
	c.pid, c.prio, c.idSet = pid, priority, false
	c.mu.Unlock()
}

// Observe takes one sample of the cycle; a late one (or an overrun) is
// queued for explanation. It never blocks: when the queue is full the
// spike is counted as dropped (Dropped).
func (c *Collector) Observe(s *shm.Sample) {
	overrun := s.Flags&shm.SampleOverrun != 0
	if s.Wake-s.Deadline <= c.lateNS && !overrun {
		return
	}
	select {
	case c.late <- window{cycle: s.Cycle, deadline: s.Deadline, wake: s.Wake, end: s.End, overrun: overrun}:
	default:
		c.dropped.Add(1)
	}
}

// Spikes delivers the explained spikes.
func (c *Collector) Spikes() <-chan Spike { return c.out }

// Dropped is the number of late cycles not explained because the
// collector was behind.
func (c *Collector) Dropped() uint64 { return c.dropped.Load() }

// Last returns up to n of the latest spikes, latest first.
func (c *Collector) Last(n int) []Spike {
	c.mu.Lock()
	defer c.mu.Unlock()
	n = min(n, len(c.last))
	out := make([]Spike, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, c.last[(c.lastAt-1-i+len(c.last))%len(c.last)])
	}
	return out
}

// Close stops the collector and leaves tracefs as it found it.
func (c *Collector) Close() error { return c.closeFn() }

func (c *Collector) run(ctx context.Context) {
	tick := time.NewTicker(c.opts.Poll)
	defer tick.Stop()
	tr := trace{buf: make([]record, 0, maxRecords)} // no growth in steady state
	type pending struct {
		w     window
		since time.Time
	}
	var queue []pending
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-c.late:
			queue = append(queue, pending{w, time.Now()})
			continue
		case <-tick.C:
		}
		c.refreshIdentity()
		var r record
		_, err := c.in.Read(func(ts uint64, rec []byte) {
			if c.dec.decode(ts, rec, &r) {
				tr.add(r)
			}
		}, func(ts uint64) { tr.add(record{ts: int64(ts), kind: kindGap, pid: -1}) })
		if err != nil {
			c.opts.Log.Warn("forensics: reading the trace", "err", err)
		}
		recs := tr.records()
		if len(recs) > 0 {
			tr.trim(recs[len(recs)-1].ts - int64(history))
			recs = tr.records()
		}
		c.mu.Lock()
		id := c.id
		c.mu.Unlock()
		for len(queue) > 0 {
			p := queue[0]
			to := p.w.wake
			if p.w.overrun {
				to = p.w.end
			}
			covered := len(recs) > 0 && recs[len(recs)-1].ts >= to
			if !covered && time.Since(p.since) < settle {
				break
			}
			queue = queue[1:]
			sp := attribute(recs, p.w, id, c.names)
			c.finish(&sp)
		}
	}
}

// finish adds what the host says and hands the spike out.
func (c *Collector) finish(sp *Spike) {
	if s := readSteal(c.opts.ProcRoot, c.opts.CPU); s >= 0 && c.stealPrev >= 0 {
		sp.Steal = time.Duration(s - c.stealPrev)
		c.stealPrev = s
	}
	c.mu.Lock()
	if len(c.last) < c.opts.Keep {
		c.last = append(c.last, *sp)
		c.lastAt = len(c.last) % c.opts.Keep
	} else {
		c.last[c.lastAt] = *sp
		c.lastAt = (c.lastAt + 1) % c.opts.Keep
	}
	c.mu.Unlock()
	select {
	case c.out <- *sp:
	default:
		c.dropped.Add(1)
	}
}

// refreshIdentity reads the cycle process's threads when SetCycle named
// a new one, and filters the page-fault events to them.
func (c *Collector) refreshIdentity() {
	c.mu.Lock()
	pid, prio, set := c.pid, c.prio, c.idSet
	c.mu.Unlock()
	if set || pid == 0 {
		return
	}
	id, err := readIdentity(c.opts.ProcRoot, pid, prio)
	if err != nil {
		c.opts.Log.Warn("forensics: reading the cycle process's threads", "pid", pid, "err", err)
	}
	c.mu.Lock()
	c.id, c.idSet = id, true
	c.mu.Unlock()
	var conds []string
	for tid := range id.threads {
		conds = append(conds, "common_pid == "+strconv.Itoa(int(tid)))
	}
	if len(conds) > 0 {
		for _, e := range faultEvents {
			_ = c.in.SetFilter(e, strings.Join(conds, " || ")) // absent on some kernels
		}
	}
}

// Settle waits until every late cycle observed before the call has been
// explained (or given up on, when the trace never covered it): at most
// the settle time and two polls.
func (c *Collector) Settle() { time.Sleep(settle + 2*c.opts.Poll) }

// trace is the part of the core's trace the collector keeps, in time
// order: buf[lo:]. Trimming moves lo; the records move to the front of
// buf only once the trimmed part outgrows the kept one, or buf is full,
// so a poll costs about what it reads, not what is kept.
type trace struct {
	buf []record
	lo  int
}

// add appends r; a full buf loses its oldest quarter (attribution then
// finds no switch before a window that old: incomplete, not wrong).
func (t *trace) add(r record) {
	if len(t.buf) == cap(t.buf) {
		if t.lo == 0 {
			t.lo = len(t.buf) / 4
		}
		t.compact()
	}
	t.buf = append(t.buf, r)
}

// records returns the records kept, oldest first.
func (t *trace) records() []record { return t.buf[t.lo:] }

// trim drops the records older than ts.
func (t *trace) trim(ts int64) {
	i, _ := slices.BinarySearchFunc(t.buf[t.lo:], ts, func(r record, ts int64) int { return cmp.Compare(r.ts, ts) })
	t.lo += i
	if t.lo > len(t.buf)-t.lo {
		t.compact()
	}
}

func (t *trace) compact() {
	t.buf = t.buf[:copy(t.buf, t.buf[t.lo:])]
	t.lo = 0
}
