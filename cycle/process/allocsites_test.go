package process

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// allocSites records where the process allocates between its start and
// its sites call: every allocation, by stack (runtime.MemProfileRate 1
// while it runs). A test that finds allocations where it expects none
// can say where they came from, and tell the code under test from the
// harness that shares its process.
type allocSites struct {
	rate   int
	before map[[32]uintptr]int64
}

// allocSite is one stack that allocated, and how often.
type allocSite struct {
	stack []runtime.Frame
	n     int64
}

// has reports whether a function of the site's stack contains any of
// names.
func (s allocSite) has(names ...string) bool {
	for _, f := range s.stack {
		for _, n := range names {
			if strings.Contains(f.Function, n) {
				return true
			}
		}
	}
	return false
}

// String renders the site as a count and a stack trace.
func (s allocSite) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d allocation(s) at:\n", s.n)
	for _, f := range s.stack {
		fmt.Fprintf(&b, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
	}
	return b.String()
}

// startAllocSites profiles every allocation from now on. Setting the
// rate to 1 takes effect at once: the runtime profiles every allocation
// at that rate without waiting for the sample point drawn at the old one.
func startAllocSites() *allocSites {
	a := &allocSites{rate: runtime.MemProfileRate}
	runtime.MemProfileRate = 1
	a.before = allocCounts()
	return a
}

// sites stops profiling and returns the stacks that allocated since the
// start, most allocations first. The profile is published by garbage
// collections, which it runs: what they made others allocate (a
// goroutine refilling its sudog cache) is in it too.
func (a *allocSites) sites() []allocSite {
	after := allocCounts()
	runtime.MemProfileRate = a.rate
	var sites []allocSite
	for stk, n := range after {
		d := n - a.before[stk]
		if d <= 0 {
			continue
		}
		s := allocSite{stack: frames(stk), n: d}
		if !s.has("process.allocCounts", "process.startAllocSites") {
			sites = append(sites, s)
		}
	}
	slices.SortFunc(sites, func(x, y allocSite) int { return int(y.n - x.n) })
	return sites
}

// allocCounts is the allocations made so far per stack, as the profile
// has them after the collections that publish it.
func allocCounts() map[[32]uintptr]int64 {
	// A completed cycle publishes the profile; two make sure the
	// allocations up to now are in it.
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	for {
		n, ok := runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, n+64)
	}
	counts := make(map[[32]uintptr]int64, len(recs))
	for _, r := range recs {
		counts[r.Stack0] += r.AllocObjects
	}
	return counts
}

// frames symbolises a profile record's stack.
func frames(stk [32]uintptr) []runtime.Frame {
	pcs := stk[:]
	if i := slices.Index(pcs, 0); i >= 0 {
		pcs = pcs[:i]
	}
	var out []runtime.Frame
	fs := runtime.CallersFrames(pcs)
	for {
		f, more := fs.Next()
		out = append(out, f)
		if !more {
			return out
		}
	}
}
