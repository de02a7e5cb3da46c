package spikes

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Scheduling policies as /proc/PID/stat reports them.
const (
	policyOther    = 0
	policyFIFO     = 1
	policyRR       = 2
	policyBatch    = 3
	policyIdle     = 5
	policyDeadline = 6
)

// readIdentity reads the threads of the cycle process pid and finds its
// cycle thread: the one at SCHED_FIFO priority prio.
func readIdentity(proc string, pid, prio int) (identity, error) {
	id := identity{tid: -1, prio: int32(99 - prio), threads: map[int32]bool{}}
	if prio == 0 {
		id.prio = 120
	}
	ents, err := os.ReadDir(filepath.Join(proc, strconv.Itoa(pid), "task"))
	if err != nil {
		return id, fmt.Errorf("spikes: %w", err)
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		id.threads[int32(tid)] = true
		f, err := statFields(filepath.Join(proc, strconv.Itoa(pid), "task", e.Name(), "stat"))
		if err != nil || len(f) < 39 {
			continue
		}
		rtprio, _ := strconv.Atoi(f[37])
		policy, _ := strconv.Atoi(f[38])
		if prio > 0 && (policy == policyFIFO || policy == policyRR) && rtprio == prio {
			id.tid = int32(tid)
		}
	}
	return id, nil
}

// statFields returns the fields of a stat file after the command name:
// the process state is [0], so field N of proc(5) is [N−3].
func statFields(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("%s: no command name", path)
	}
	return strings.Fields(s[i+1:]), nil
}

// readSteal returns the steal time of cpu in ns from /proc/stat, −1 when
// it cannot tell.
func readSteal(proc string, cpu int) int64 {
	f, err := os.Open(filepath.Join(proc, "stat"))
	if err != nil {
		return -1
	}
	defer f.Close()
	prefix := "cpu" + strconv.Itoa(cpu) + " "
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 9 {
			return -1
		}
		ticks, err := strconv.ParseInt(fs[8], 10, 64)
		if err != nil {
			return -1
		}
		return ticks * 10_000_000 // USER_HZ is 100 on Linux
	}
	return -1
}

// resolver names what the trace holds as numbers; it reads /proc lazily
// and remembers.
type resolver struct {
	proc   string
	irqs   map[int32]string
	mu     sync.Mutex
	funcs  map[uint64]string
	noSyms bool
}

func newResolver(proc string, irqs map[int32]string) *resolver {
	return &resolver{proc: proc, irqs: irqs, funcs: map[uint64]string{}}
}

func (r *resolver) irq(num int32) string {
	if num < 0 && int(-1-num) < len(vectorNames) {
		return vectorNames[-1-num]
	}
	if n := r.irqs[num]; n != "" {
		return "irq " + strconv.Itoa(int(num)) + " " + n
	}
	return "irq " + strconv.Itoa(int(num))
}

// function names a kernel function by its address, from kallsyms (which
// hides addresses from the unprivileged: then the address).
func (r *resolver) function(addr uint64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.funcs[addr]; ok {
		return n
	}
	name := "0x" + strconv.FormatUint(addr, 16)
	if !r.noSyms {
		if n, ok := r.lookup(addr); ok {
			name = n
		}
	}
	r.funcs[addr] = name
	return name
}

func (r *resolver) lookup(addr uint64) (string, bool) {
	f, err := os.Open(filepath.Join(r.proc, "kallsyms"))
	if err != nil {
		r.noSyms = true
		return "", false
	}
	defer f.Close()
	want := fmt.Sprintf("%016x ", addr)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "0000000000000000 ") {
			r.noSyms = true // addresses hidden
			return "", false
		}
		if strings.HasPrefix(line, want) {
			fs := strings.Fields(line)
			if len(fs) >= 3 {
				return fs[2], true
			}
		}
	}
	return "", false
}

// policy is a task's scheduling class and priority, as chrt says them.
// The class is the trace's priority's (a task may have changed it since,
// or be gone); /proc tells RR from FIFO and BATCH or IDLE from OTHER.
func (r *resolver) policy(pid, prio int32) string {
	pol := -1
	if f, err := statFields(filepath.Join(r.proc, strconv.Itoa(int(pid)), "stat")); err == nil && len(f) >= 39 {
		pol, _ = strconv.Atoi(f[38])
	}
	switch {
	case prio < 0:
		return "DEADLINE"
	case prio < 100 && pol == policyRR:
		return "RR " + strconv.Itoa(int(99-prio))
	case prio < 100:
		return "FIFO " + strconv.Itoa(int(99-prio))
	case pol == policyBatch:
		return "BATCH nice " + strconv.Itoa(int(prio-120))
	case pol == policyIdle:
		return "IDLE"
	}
	return "OTHER nice " + strconv.Itoa(int(prio-120))
}
