package test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// compactEnv, when set, makes the test binary the injector of the
// kernel-memory test (compactMain): "cpu,priority,every,for,name,mb" —
// every every, for for, a thread named name fragments mb MiB of its own
// memory on another core, then, pinned to cpu at SCHED_FIFO priority,
// has the kernel compact all memory (/proc/sys/vm/compact_memory).
const compactEnv = "ECAGENT_TEST_SPIKE_COMPACT"

// compactKnob makes the kernel compact every zone when written
// (CONFIG_COMPACTION).
const compactKnob = "/proc/sys/vm/compact_memory"

// compactMain runs the injector described by spec; it prints its
// thread's id and "go" before the first compaction and "burst START END"
// (CLOCK_MONOTONIC ns) after each, as hogMain does.
func compactMain(spec string) int {
	f, ok := injectorSpec("compact", spec, "cpu,priority,every,for,name,mb")
	if !ok {
		return 2
	}
	cpu, _ := strconv.Atoi(f[0])
	prio, _ := strconv.Atoi(f[1])
	every, _ := time.ParseDuration(f[2])
	total, _ := time.ParseDuration(f[3])
	mb, _ := strconv.Atoi(f[5])
	if err := nameThread(f[4]); err != nil {
		fmt.Fprintln(os.Stderr, "compact:", err)
		return 1
	}
	knob, err := os.OpenFile(compactKnob, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compact:", err)
		return 1
	}
	defer knob.Close()
	// Where to fragment (not the cycle's core) and where to compact.
	var away, on unix.CPUSet
	for c := 0; c < runtime.NumCPU(); c++ {
		if c != cpu {
			away.Set(c)
		}
	}
	on.Set(cpu)
	fifo := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	other := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	fmt.Printf("%d go\n", unix.Gettid())
	end := time.Now().Add(total)
	for next := time.Now().Add(every); next.Before(end); next = next.Add(every) {
		if err := unix.SchedSetaffinity(0, &away); err != nil {
			fmt.Fprintln(os.Stderr, "compact: affinity:", err)
			return 1
		}
		mem, err := fragment(mb)
		if err != nil {
			fmt.Fprintln(os.Stderr, "compact:", err)
			return 1
		}
		time.Sleep(time.Until(next))
		if err := unix.SchedSetaffinity(0, &on); err != nil {
			fmt.Fprintln(os.Stderr, "compact: affinity:", err)
			return 1
		}
		if err := unix.SchedSetAttr(0, &fifo, 0); err != nil {
			fmt.Fprintln(os.Stderr, "compact: SCHED_FIFO:", err)
			return 1
		}
		start := monoNS()
		_, werr := knob.WriteString("1")
		stop := monoNS()
		_ = unix.SchedSetAttr(0, &other, 0)
		_ = unix.Munmap(mem)
		if werr != nil {
			fmt.Fprintln(os.Stderr, "compact:", werr)
			return 1
		}
		fmt.Printf("burst %d %d\n", start, stop)
	}
	return 0
}

// fragment maps mb MiB of small pages, touches them all and gives every
// other page back: free pages scattered between used ones, which a
// compaction moves.
func fragment(mb int) ([]byte, error) {
	const page = 4096
	mem, err := unix.Mmap(-1, 0, mb<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE)
	for i := 0; i < len(mem); i += page {
		mem[i] = 1
	}
	for i := page; i < len(mem); i += 2 * page {
		if err := unix.Madvise(mem[i:i+page], unix.MADV_DONTNEED); err != nil {
			_ = unix.Munmap(mem)
			return nil, fmt.Errorf("madvise: %w", err)
		}
	}
	return mem, nil
}

// TestSpikesBlameCompaction: a SCHED_FIFO task above the cycle's
// priority on its core has the kernel compact memory it fragmented just
// before (compact_memory, as a direct compaction of an allocation would):
// the spikes it makes are kernel memory — compaction, named with the
// task that compacted — not the task.
func TestSpikesBlameCompaction(t *testing.T) {
	if _, err := os.Stat(compactKnob); err != nil {
		t.Skipf("the kernel has no compaction (CONFIG_COMPACTION): %v", err)
	}
	if _, err := os.Stat("/sys/kernel/tracing/events/compaction/mm_compaction_begin"); err != nil {
		t.Skipf("the kernel traces no compaction (compaction/mm_compaction_begin): %v", err)
	}
	a, addr := startSpikeAgent(t, "kmm")
	const rounds = 12
	h := startInjector(t, compactEnv, fmt.Sprintf("%d,%d,%v,%v,%s,%d", spikeCore, 90, 400*time.Millisecond,
		rounds*400*time.Millisecond+200*time.Millisecond, "ecmemhog", 64))
	for deadline := time.Now().Add(40 * time.Second); len(h.spans()) < rounds; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d compactions done\n%s", len(h.spans()), rounds, a.log())
		}
	}
	waitExplained(t, a, addr)
	spans := h.spans()
	per := spikesIn(getSpikes(t, addr).Spikes, spans)
	var n, right, hit int
	var excess, memory float64
	for i, sps := range per {
		if len(sps) > 0 {
			hit++
		}
		t.Logf("compaction %d took %v", i, time.Duration(spans[i][1]-spans[i][0]))
		for _, sp := range sps {
			n++
			excess += sp.ExcessUS
			t.Logf("compaction %d: cycle %d late %.0f µs excess %.0f µs: %+v", i, sp.Cycle, sp.LateUS, sp.ExcessUS, sp.Causes)
			for _, c := range sp.Causes {
				if c.Class == "kernel-memory" {
					memory += c.TimeUS
				}
			}
			top := topCause(sp)
			if top.Class == "kernel-memory" && strings.HasPrefix(top.Name, fmt.Sprintf("compaction in ecmemhog/%d ", h.tid)) {
				right++
			}
		}
	}
	t.Logf("%d of %d spikes in %d of %d compactions blamed on kernel memory; kernel memory %.0f of %.0f µs of their excess", right, n, hit, len(per), memory, excess)
	if hit*2 < rounds {
		t.Errorf("spikes in %d of %d compactions: the injector did not hold the core", hit, rounds)
	}
	if right*10 < n*9 {
		t.Errorf("%d of %d spikes during the compactions blamed on the compaction, want ≥ 90 %%", right, n)
	}
}
