// Command schedtrace attributes the cycle thread's late wake-ups from a
// kernel scheduler trace.
//
// It turns on the tracefs events sched_switch, sched_wakeup, hrtimer_start
// and the cycle process's entries to futex and returns from clock_nanosleep,
// ppoll and futex (raw_syscalls, x86-64 numbers) with the monotonic trace
// clock, reads trace_pipe while a
// cycle runs (ecagent run, ecagent bench, a test), and follows every thread
// named -comm at real-time priority -priority: each time it sleeps until
// its deadline (clock_nanosleep arms an hrtimer whose expiry is the
// deadline, in the thread's own context) or waits for its frames, and when
// it runs again. A wake-up later than -late — from the deadline for a
// timed sleep, from the wake-up for any other wait — is printed with what
// held the CPU in that window, thread by thread, and classed:
//
//	own    a thread of the cycle process (-comm), or the cycle thread itself
//	agent  another ecagent process (the agent, the simulator, bench)
//	host   any other task, kernel threads included
//	idle   the CPU was idle: the timer or the wake-up came late, which on a
//	       virtual machine is the hypervisor's (steal), not the guest's
//
// A cycle thread that runs without a break for longer than -late is printed
// too (class own): that is the process stalling itself, as a real-time
// thread spinning in the Go runtime would — or, on a virtual machine, the
// CPU taken away from the guest while it ran, which the guest cannot see.
// So is a futex call of the cycle thread that takes longer than -late
// (class own): it waited for another thread of its runtime.
//
// Usage (root; tracefs at /sys/kernel/tracing):
//
//	go run ./scripts/schedtrace -for 10m &
//	ecagent bench --duration 10m
//
// Some kernels (this project's 2-core paravirtualised VM, on its second
// CPU) record no event at all in a CPU's idle task, so the switch from idle
// to the next task is missing. The cycle thread is then seen running by
// its return from clock_nanosleep or ppoll; another task is seen only when
// it switches out, and is taken to have held the CPU since the last switch
// on record, which may include idle time before it: such a holder is
// marked "~", its time an upper bound.
//
// It stops after -for, or on SIGINT, and prints a summary. The tracing
// settings it changed are restored when it stops.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	var (
		dir      = flag.String("tracefs", "/sys/kernel/tracing", "tracefs mount point")
		comm     = flag.String("comm", "ecagent-cycle", "command name of the cycle process's threads")
		priority = flag.Int("priority", 80, "SCHED_FIFO priority of the cycle thread (cycle.priority)")
		late     = flag.Duration("late", time.Millisecond, "report wake-ups and runs longer than this")
		dur      = flag.Duration("for", 0, "stop after this long (0: at SIGINT)")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: schedtrace [-for D] [-late D] [-priority N]\n\n"+
			"Attribute the cycle thread's late wake-ups from a scheduler trace.\n\n"+
			"Example (root):\n  go run ./scripts/schedtrace -for 10m & ecagent bench --duration 10m\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	a := newAnalyzer(*comm, 99-*priority, *late, os.Stdout)
	if err := trace(ctx, *dir, a); err != nil {
		fmt.Fprintln(os.Stderr, "schedtrace:", err)
		os.Exit(1)
	}
	a.summary()
}

// trace sets up tracefs, feeds trace_pipe to a until ctx ends, and puts
// the settings back.
func trace(ctx context.Context, dir string, a *analyzer) error {
	// Only the wake-ups of the cycle process's threads and the timers
	// they arm: the trace is read as it is written, and the reading is
	// work on the traced CPUs too.
	settings := []struct{ file, value string }{
		{"tracing_on", "0"},
		{"trace_clock", "mono"},
		{"buffer_size_kb", "16384"},
		{"events/sched/sched_wakeup/filter", fmt.Sprintf("comm == %q", a.comm)},
		{"events/timer/hrtimer_start/filter", fmt.Sprintf("COMM == %q", a.comm)},
		// Returns from clock_nanosleep (230), ppoll (271) and futex (202),
		// x86-64: the cycle thread is running again. Some kernels
		// (paravirtualised guests) record no sched_switch out of a CPU's
		// idle task.
		{"events/raw_syscalls/sys_exit/filter", fmt.Sprintf("COMM == %q && (id == 230 || id == 271 || id == 202)", a.comm)},
		{"events/raw_syscalls/sys_exit/enable", "1"},
		// Calls of futex: a cycle thread that blocks in one waits for
		// another thread of its runtime (its P handed back after a yield
		// or a preemption).
		{"events/raw_syscalls/sys_enter/filter", fmt.Sprintf("COMM == %q && id == 202", a.comm)},
		{"events/raw_syscalls/sys_enter/enable", "1"},
		{"events/sched/sched_switch/enable", "1"},
		{"events/sched/sched_wakeup/enable", "1"},
		{"events/timer/hrtimer_start/enable", "1"},
		{"trace", ""},
		{"tracing_on", "1"},
	}
	var restore []func()
	defer func() {
		for i := len(restore) - 1; i >= 0; i-- {
			restore[i]()
		}
	}()
	for _, s := range settings {
		p := filepath.Join(dir, s.file)
		old, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("tracefs: %w", err)
		}
		if err := os.WriteFile(p, []byte(s.value), 0); err != nil {
			return fmt.Errorf("tracefs: set %s to %q: %w", s.file, s.value, err)
		}
		if s.file == "trace" || s.file == "tracing_on" {
			continue
		}
		v := string(old)
		if strings.HasSuffix(s.file, "/filter") {
			v = "0" // clears a filter
		}
		if s.file == "trace_clock" { // "[local] global mono ...": the selected one
			if i, j := strings.IndexByte(v, '['), strings.IndexByte(v, ']'); i >= 0 && j > i {
				v = v[i+1 : j]
			}
		}
		restore = append(restore, func() { _ = os.WriteFile(p, []byte(strings.TrimSpace(v)), 0) })
	}
	restore = append(restore, func() { _ = os.WriteFile(filepath.Join(dir, "tracing_on"), []byte("0"), 0) })
	pipe, err := os.Open(filepath.Join(dir, "trace_pipe"))
	if err != nil {
		return fmt.Errorf("tracefs: %w", err)
	}
	go func() { <-ctx.Done(); pipe.Close() }()
	err = a.read(pipe)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// event is one line of the trace, the fields schedtrace uses.
type event struct {
	at   int64  // trace clock, ns
	cpu  int    // CPU the event was recorded on
	pid  int    // current task
	comm string // current task's command
	name string // sched_switch, sched_wakeup, hrtimer_start, sys_enter, sys_exit
	args map[string]string
}

// parseLine decodes a trace_pipe line:
//
//	<comm>-<pid> [<cpu>] <flags> <secs>.<usecs>: <event>: k=v k=v ...
func parseLine(line string) (event, error) {
	var e event
	open := strings.Index(line, " [")
	if open < 0 {
		return e, errors.New("no CPU field")
	}
	task := strings.TrimSpace(line[:open])
	if i := strings.Index(task, " ("); i >= 0 { // a tgid column
		task = strings.TrimSpace(task[:i])
	}
	dash := strings.LastIndexByte(task, '-')
	if dash < 0 {
		return e, errors.New("no task field")
	}
	e.comm = task[:dash]
	var err error
	if e.pid, err = strconv.Atoi(task[dash+1:]); err != nil {
		return e, fmt.Errorf("task pid: %w", err)
	}
	rest := line[open+2:]
	closeAt := strings.IndexByte(rest, ']')
	if closeAt < 0 {
		return e, errors.New("no CPU field")
	}
	if e.cpu, err = strconv.Atoi(rest[:closeAt]); err != nil {
		return e, fmt.Errorf("cpu: %w", err)
	}
	f := strings.Fields(rest[closeAt+1:])
	if len(f) < 3 {
		return e, errors.New("short line")
	}
	ts := strings.TrimSuffix(f[1], ":")
	sec, frac, ok := strings.Cut(ts, ".")
	if !ok {
		return e, fmt.Errorf("timestamp %q", ts)
	}
	s, err1 := strconv.ParseInt(sec, 10, 64)
	fr, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
	if err1 != nil || err2 != nil {
		return e, fmt.Errorf("timestamp %q", ts)
	}
	e.at = s*1e9 + fr
	e.name = strings.TrimSuffix(f[2], ":")
	e.args = make(map[string]string, 8)
	body := strings.Join(f[3:], " ")
	if e.name == "sched_switch" { // prev_* ==> next_*
		body = strings.Replace(body, "==>", "", 1)
	}
	for _, kv := range strings.Fields(body) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			e.args[k] = v
		}
	}
	return e, nil
}

// segment is a stretch of one CPU given to one task.
type segment struct {
	from, to int64
	pid      int
	comm     string
	inferred bool // its start is not on record: see event
}

// thread is what the analyzer knows of one cycle thread.
type thread struct {
	running  bool  // on a CPU; otherwise waiting to be switched in
	ranSince int64 // when it was last switched in
	expires  int64 // deadline of the timed sleep it is in, 0 for none
	futexAt  int64 // when it called futex, 0 for not in one
	wokeAt   int64 // when it was woken or preempted, 0 for not yet
	seen     bool  // switched out once: its waits are measured from then on
}

// analyzer follows the cycle threads and the CPUs through the trace.
type analyzer struct {
	comm    string
	prio    string // kernel priority of the cycle thread: 99 - SCHED_FIFO priority
	late    int64
	out     io.Writer
	cpus    map[int][]segment // recent history per CPU
	current map[int]segment   // open segment per CPU
	threads map[int]*thread
	lines   int
	bad     int
	wakeups int
	counts  map[string]int
	worst   int64
	// futexWaits are the cycle threads' calls of futex, from call to
	// return, blocking or not.
	futexWaits []int64
}

func newAnalyzer(comm string, prio int, late time.Duration, out io.Writer) *analyzer {
	return &analyzer{comm: comm, prio: strconv.Itoa(prio), late: late.Nanoseconds(), out: out,
		cpus: map[int][]segment{}, current: map[int]segment{}, threads: map[int]*thread{}, counts: map[string]int{}}
}

// read feeds every line of r to the analyzer.
func (a *analyzer) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		a.lines++
		e, err := parseLine(line)
		if err != nil {
			a.bad++
			continue
		}
		a.event(e)
	}
	return sc.Err()
}

// history is kept this long per CPU.
const history = 2 * int64(time.Second)

// event takes one trace event into account.
func (a *analyzer) event(e event) {
	if t := a.threads[e.pid]; t != nil && !t.running && e.comm == a.comm {
		// Seen running with no switch to it on record.
		at := e.at
		if cur, ok := a.current[e.cpu]; ok && isIdle(cur.comm) && t.wokeAt > cur.from && t.wokeAt < at {
			at = t.wokeAt // an idle CPU runs what it wakes at once
		}
		a.begin(e.cpu, at, e.pid, a.comm)
		a.switchIn(t, at, e.pid, e.cpu)
	}
	switch e.name {
	case "sys_enter":
		if t := a.threads[e.pid]; t != nil && e.comm == a.comm {
			t.futexAt = e.at
		}
	case "sys_exit":
		a.sysExit(e)
	case "hrtimer_start":
		if t := a.threads[e.pid]; t != nil && e.args["function"] == "hrtimer_wakeup" {
			if x, err := strconv.ParseInt(e.args["expires"], 10, 64); err == nil {
				t.expires = x
			}
		}
	case "sched_wakeup":
		pid, _ := strconv.Atoi(e.args["pid"])
		if t := a.threads[pid]; t != nil && !t.running {
			t.wokeAt = e.at
		}
	case "sched_switch":
		a.schedSwitch(e)
	}
}

// sysExit ends a futex wait of one of the traced threads.
func (a *analyzer) sysExit(e event) {
	t := a.threads[e.pid]
	if t == nil || e.comm != a.comm || t.futexAt == 0 {
		return
	}
	a.futexWaits = append(a.futexWaits, e.at-t.futexAt)
	if e.at-t.futexAt > a.late {
		a.report("futex", e.pid, e.cpu, t.futexAt, e.at, "own")
	}
	t.futexAt = 0
}

// schedSwitch takes a context switch: the CPU's task changes, a traced
// thread stops or starts running.
func (a *analyzer) schedSwitch(e event) {
	prev, _ := strconv.Atoi(e.args["prev_pid"])
	next, _ := strconv.Atoi(e.args["next_pid"])
	if cur, ok := a.current[e.cpu]; ok && cur.pid != prev {
		// The switch to prev is not on record (see event): it held the
		// CPU since the last switch that is.
		a.current[e.cpu] = segment{from: cur.from, pid: prev, comm: e.args["prev_comm"], inferred: true}
	}
	a.begin(e.cpu, e.at, next, e.args["next_comm"])
	if e.args["prev_comm"] == a.comm && e.args["prev_prio"] == a.prio {
		t := a.thread(prev)
		if t.running {
			if d := e.at - t.ranSince; d > a.late {
				a.report("ran", prev, e.cpu, t.ranSince, e.at, "own")
			}
		}
		t.running, t.seen, t.wokeAt = false, true, 0
		if st := e.args["prev_state"]; st == "R" || st == "R+" {
			t.wokeAt = e.at // preempted: runnable from now on
		}
	}
	if e.args["next_comm"] == a.comm && e.args["next_prio"] == a.prio {
		a.switchIn(a.thread(next), e.at, next, e.cpu)
	}
}

// begin records that cpu runs task pid from at on.
func (a *analyzer) begin(cpu int, at int64, pid int, comm string) {
	if cur, ok := a.current[cpu]; ok {
		cur.to = at
		h := append(a.cpus[cpu], cur)
		k := 0
		for k < len(h) && h[k].to < at-history {
			k++
		}
		a.cpus[cpu] = h[k:]
	}
	a.current[cpu] = segment{from: at, pid: pid, comm: comm}
}

// switchIn records that cycle thread t (pid) runs on cpu from at on, and
// reports it if it comes late.
func (a *analyzer) switchIn(t *thread, at int64, pid, cpu int) {
	if t.seen {
		a.wakeups++
		from := t.wokeAt
		if t.expires != 0 && (from == 0 || from >= t.expires) {
			from = t.expires // a timed sleep: late from its deadline
		}
		if from != 0 && at-from > a.late {
			a.report("woke", pid, cpu, from, at, "")
		}
	}
	t.running, t.ranSince, t.expires, t.wokeAt = true, at, 0, 0
}

func isIdle(comm string) bool { return strings.HasPrefix(comm, "swapper") }

func (a *analyzer) thread(pid int) *thread {
	t := a.threads[pid]
	if t == nil {
		t = &thread{}
		a.threads[pid] = t
	}
	return t
}

// occupancy is how long each task held cpu in [from, to).
func (a *analyzer) occupancy(cpu int, from, to int64) map[string]int64 {
	held := map[string]int64{}
	add := func(s segment) {
		lo, hi := max(s.from, from), min(s.to, to)
		if hi > lo {
			k := fmt.Sprintf("%s-%d", s.comm, s.pid)
			if s.inferred {
				k += "~"
			}
			held[k] += hi - lo
		}
	}
	for _, s := range a.cpus[cpu] {
		add(s)
	}
	if cur, ok := a.current[cpu]; ok {
		cur.to = to
		add(cur)
	}
	return held
}

// class names who is behind a stretch of CPU time held by task key.
func (a *analyzer) class(key string) string {
	comm := key[:strings.LastIndexByte(strings.TrimSuffix(key, "~"), '-')]
	switch {
	case comm == a.comm:
		return "own"
	case comm == "ecagent":
		return "agent"
	case isIdle(comm):
		return "idle"
	default:
		return "host"
	}
}

func (a *analyzer) report(what string, pid, cpu int, from, to int64, class string) {
	d := to - from
	a.worst = max(a.worst, d)
	held := a.occupancy(cpu, from, to)
	keys := make([]string, 0, len(held))
	for k := range held {
		if k != fmt.Sprintf("%s-%d", a.comm, pid) || what == "ran" {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return held[keys[i]] > held[keys[j]] })
	if class == "" {
		class = "idle"
		if len(keys) > 0 {
			class = a.class(keys[0])
		}
	}
	a.counts[class]++
	var b strings.Builder
	for i, k := range keys {
		if i == 4 {
			break
		}
		fmt.Fprintf(&b, " %s %.2f ms;", k, float64(held[k])/1e6)
	}
	fmt.Fprintf(a.out, "%.6f %s %s-%d cpu %d: %.2f ms, %s:%s\n", float64(from)/1e9, what, a.comm, pid, cpu, float64(d)/1e6, class, b.String())
}

func (a *analyzer) summary() {
	if n := len(a.futexWaits); n > 0 {
		w := slices.Clone(a.futexWaits)
		slices.Sort(w)
		fmt.Fprintf(a.out, "\nfutex calls of the cycle thread: %d, p50 %.1f µs, p99 %.1f µs, max %.1f µs\n",
			n, float64(w[n/2])/1e3, float64(w[n*99/100])/1e3, float64(w[n-1])/1e3)
	}
	fmt.Fprintf(a.out, "\n%d trace lines (%d not understood), %d wake-ups of %d cycle threads; over %v: own %d, agent %d, host %d, idle %d; worst %.2f ms\n",
		a.lines, a.bad, a.wakeups, len(a.threads), time.Duration(a.late), a.counts["own"], a.counts["agent"], a.counts["host"], a.counts["idle"], float64(a.worst)/1e6)
}
