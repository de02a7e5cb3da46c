package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		line string
		want event
		args map[string]string
	}{
		{
			line: "   ecagent-cycle-13195   [001] d..2. 42.000123: sched_switch: prev_comm=ecagent-cycle prev_pid=13195 prev_prio=19 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
			want: event{at: 42000123000, cpu: 1, pid: 13195, comm: "ecagent-cycle", name: "sched_switch"},
			args: map[string]string{"prev_pid": "13195", "prev_state": "S", "next_comm": "swapper/1", "next_prio": "120"},
		},
		{
			line: "          <idle>-0       [000] d.h2. 7.5: sched_wakeup: comm=ecagent-cycle pid=13195 prio=19 target_cpu=001",
			want: event{at: 7500000000, cpu: 0, pid: 0, comm: "<idle>", name: "sched_wakeup"},
			args: map[string]string{"pid": "13195", "target_cpu": "001"},
		},
		{ // a tgid column, a command with a dash and a space
			line: " kworker/0:1 H-x-77 (   77) [000] ..... 1.000001: hrtimer_start: hrtimer=0000 function=hrtimer_wakeup expires=1001000000 softexpires=1001000000 mode=ABS was_armed=0",
			want: event{at: 1000001000, cpu: 0, pid: 77, comm: "kworker/0:1 H-x", name: "hrtimer_start"},
			args: map[string]string{"function": "hrtimer_wakeup", "expires": "1001000000"},
		},
	} {
		e, err := parseLine(c.line)
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if e.at != c.want.at || e.cpu != c.want.cpu || e.pid != c.want.pid || e.comm != c.want.comm || e.name != c.want.name {
			t.Errorf("%q: got %+v, want %+v", c.line, e, c.want)
		}
		for k, v := range c.args {
			if e.args[k] != v {
				t.Errorf("%q: %s=%q, want %q", c.line, k, e.args[k], v)
			}
		}
	}
	for _, bad := range []string{"", "no brackets here", "x-1 [000] ..... notatime: sched_switch:", "x-y [000] ..... 1.0: e:"} {
		if _, err := parseLine(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestAnalyzer replays a made-up trace: a cycle thread (pid 10, priority
// 80, kernel priority 19) sleeps until 1.001 s, a kernel worker holds its
// CPU until 1.0035 s, and the thread runs at 1.0036 s (2.6 ms late, the
// host's); then it sleeps until 1.005 s and runs at once; then it runs
// 1.5 ms without a break (its own stall); then a 5 ms wait for a frame with
// the CPU idle after the wake-up (idle). Then two sleeps whose switches
// out of the idle task are not on record, as on some paravirtualised
// kernels: one woken on time from the idle CPU (seen running by its return
// from clock_nanosleep), one held up 2 ms by a kernel thread that the idle
// CPU ran (seen only as it switched out). Last, a futex call that waits
// 1.2 ms for another thread of the process to hand the CPU back.
func TestAnalyzer(t *testing.T) {
	trace := `
x-10 [000] ..... 1.000000: sched_switch: prev_comm=sh prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=ecagent-cycle next_pid=10 next_prio=19
ecagent-cycle-10 [000] ..... 1.000100: hrtimer_start: hrtimer=1 function=hrtimer_wakeup expires=1001000000 softexpires=1001000000 mode=ABS
ecagent-cycle-10 [000] d..2. 1.000101: sched_switch: prev_comm=ecagent-cycle prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=kworker/0:1 next_pid=20 next_prio=120
kworker/0:1-20 [000] d.h2. 1.001010: sched_wakeup: comm=ecagent-cycle pid=10 prio=19 target_cpu=000
kworker/0:1-20 [000] d..2. 1.003500: sched_switch: prev_comm=kworker/0:1 prev_pid=20 prev_prio=120 prev_state=R ==> next_comm=swapper/0 next_pid=0 next_prio=120
<idle>-0 [000] d..2. 1.003600: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ecagent-cycle next_pid=10 next_prio=19
ecagent-cycle-10 [000] ..... 1.003700: hrtimer_start: hrtimer=1 function=hrtimer_wakeup expires=1005000000 softexpires=1005000000 mode=ABS
ecagent-cycle-10 [000] d..2. 1.003701: sched_switch: prev_comm=ecagent-cycle prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
<idle>-0 [000] d.h2. 1.005010: sched_wakeup: comm=ecagent-cycle pid=10 prio=19 target_cpu=000
<idle>-0 [000] d..2. 1.005020: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ecagent-cycle next_pid=10 next_prio=19
ecagent-cycle-10 [000] d..2. 1.006600: sched_switch: prev_comm=ecagent-cycle prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
<idle>-0 [000] d.h2. 1.007000: sched_wakeup: comm=ecagent-cycle pid=10 prio=19 target_cpu=000
<idle>-0 [000] d..2. 1.012000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ecagent-cycle next_pid=10 next_prio=19
ecagent-cycle-10 [000] ..... 1.012050: hrtimer_start: hrtimer=1 function=hrtimer_wakeup expires=1013000000 softexpires=1013000000 mode=ABS
ecagent-cycle-10 [000] d..2. 1.012100: sched_switch: prev_comm=ecagent-cycle prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
<idle>-0 [000] d.h2. 1.013010: sched_wakeup: comm=ecagent-cycle pid=10 prio=19 target_cpu=000
ecagent-cycle-10 [000] ..... 1.013030: sys_exit: NR 230 = 0
ecagent-cycle-10 [000] ..... 1.013050: hrtimer_start: hrtimer=1 function=hrtimer_wakeup expires=1014000000 softexpires=1014000000 mode=ABS
ecagent-cycle-10 [000] d..2. 1.013100: sched_switch: prev_comm=ecagent-cycle prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
kdamond.0-79 [000] d.h2. 1.014010: sched_wakeup: comm=ecagent-cycle pid=10 prio=19 target_cpu=000
kdamond.0-79 [000] d..2. 1.016000: sched_switch: prev_comm=kdamond.0 prev_pid=79 prev_prio=120 prev_state=R ==> next_comm=ecagent-cycle next_pid=10 next_prio=19
ecagent-cycle-10 [000] ..... 1.016100: sys_enter: NR 202 (1, 0, 0, 0, 0, 0)
ecagent-cycle-10 [000] d..2. 1.016110: sched_switch: prev_comm=ecagent-cycle prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
<idle>-0 [000] d..2. 1.017290: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ecagent-cycle next_pid=11 next_prio=120
ecagent-cycle-11 [000] d..3. 1.017295: sched_wakeup: comm=ecagent-cycle pid=10 prio=19 target_cpu=000
ecagent-cycle-11 [000] d..2. 1.017300: sched_switch: prev_comm=ecagent-cycle prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=ecagent-cycle next_pid=10 next_prio=19
ecagent-cycle-10 [000] ..... 1.017310: sys_exit: NR 202 = 0
`
	var out strings.Builder
	a := newAnalyzer("ecagent-cycle", 19, time.Millisecond, &out)
	if err := a.read(strings.NewReader(trace)); err != nil {
		t.Fatal(err)
	}
	a.summary()
	got := out.String()
	for _, want := range []string{
		"1.001000 woke ecagent-cycle-10 cpu 0: 2.60 ms, host: kworker/0:1-20 2.50 ms; swapper/0-0 0.10 ms;",
		"1.005020 ran ecagent-cycle-10 cpu 0: 1.58 ms, own:",
		"1.007000 woke ecagent-cycle-10 cpu 0: 5.00 ms, idle: swapper/0-0 5.00 ms;",
		"1.014000 woke ecagent-cycle-10 cpu 0: 2.00 ms, host: kdamond.0-79~ 2.00 ms;",
		"1.016100 futex ecagent-cycle-10 cpu 0: 1.21 ms, own:",
		"futex calls of the cycle thread: 1, p50 1210.0 µs",
		"own 2, agent 0, host 2, idle 1; worst 5.00 ms",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if a.wakeups != 6 || a.bad != 0 {
		t.Errorf("wake-ups %d, lines not understood %d; want 6, 0", a.wakeups, a.bad)
	}
}
