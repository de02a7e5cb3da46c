package cycle

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/shm"
)

// countedPipe is the master's end of a pipe that tells what it received,
// as a raw socket does (link.StatsReader), and counts the reads.
type countedPipe struct {
	*link.PipeEnd
	reads atomic.Int64
}

func (p *countedPipe) Stats() (link.Stats, error) {
	p.reads.Add(1)
	return p.PipeEnd.Stats(), nil
}

// TestRunPublishesLinkCounters: the engine reads the link's receive
// counters at a low rate (once when it starts, then every linkEvery, and
// once when it stops) and the heartbeat line carries them to the agent.
func TestRunPublishesLinkCounters(t *testing.T) {
	var p *countedPipe
	m, _ := simbus.StartOn(t, referenceSet, master.Config{}, func(e *link.PipeEnd) link.Link {
		p = &countedPipe{PipeEnd: e}
		return p
	})
	mem, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	if received, drops := mem.Heartbeat().Link(); received != 0 || drops != 0 {
		t.Fatalf("link counters %d, %d before the cycle ran", received, drops)
	}
	p.reads.Store(0)
	const cycles = 100
	e := New(m, mem, Config{Period: time.Millisecond, Cycles: cycles, KeepGC: true, RT: noRT()})
	start := time.Now()
	if n := e.Run(); n != cycles {
		t.Fatalf("ran %d cycles, want %d", n, cycles)
	}
	took := time.Since(start)
	want := p.PipeEnd.Stats()
	if received, drops := mem.Heartbeat().Link(); received != want.Packets || drops != want.Drops || received < cycles {
		t.Errorf("heartbeat link counters %d, %d; the link counted %d, %d after %d cycles", received, drops, want.Packets, want.Drops, cycles)
	}
	if reads, most := p.reads.Load(), int64(took/linkEvery)+2; reads < 2 || reads > most {
		t.Errorf("the link's counters read %d times in %v, want 2 to %d", reads, took, most)
	}
}

// TestPublishLinkAllocatesNothing: reading the link's counters into the
// heartbeat line is fit for the cycle thread.
func TestPublishLinkAllocatesNothing(t *testing.T) {
	m, _ := simbus.StartOn(t, referenceSet, master.Config{}, func(e *link.PipeEnd) link.Link { return &countedPipe{PipeEnd: e} })
	mem, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	e := New(m, mem, Config{Period: time.Millisecond, KeepGC: true, RT: noRT()})
	now := int64(0)
	if allocs := testing.AllocsPerRun(1000, func() { now += int64(linkEvery); e.publishLink(now) }); allocs != 0 {
		t.Errorf("publishLink allocates %v times", allocs)
	}
	if received, _ := mem.Heartbeat().Link(); received == 0 {
		t.Error("nothing published")
	}
}
