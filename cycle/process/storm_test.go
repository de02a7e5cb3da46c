package process

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle"
	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// stormDuration is how long TestFaultStorm runs: 20 s in the suite,
// ECAGENT_STORM (a Go duration, e.g. 5m) for the soak.
func stormDuration(t *testing.T) time.Duration {
	if v := os.Getenv("ECAGENT_STORM"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ECAGENT_STORM=%q: %v", v, err)
		}
		return d
	}
	return 20 * time.Second
}

// stormReport is what the storm's watcher counted.
type stormReport struct {
	cycles, overruns, skipped uint64
	acyclicCycles             uint64
	// Cycles that sent the extra acyclic frame, and the overruns among
	// them.
	acyclicFrames, acyclicFrameOverruns uint64
	reconnects                          []time.Duration // replug to back in OP
	recovered                           int             // AL errors acknowledged back to OP
	sdoOK, sdoFailed                    int64
}

// TestFaultStorm runs the cycle at 1 ms with recovery while, every 2 s,
// a slave is unplugged and plugged back 1 s later, another slave raises an
// AL error, an SDO upload loop runs against the CoE slave without a
// pause, and a register dump loop reads blocks too large for the cyclic
// frame's room (so the extra acyclic frame goes out). The cycles that sent
// the extra frame must not overrun more often than the others (beyond
// noise): that excess would be the acyclic work's doing. Host stalls
// (late wake-ups, late or lost cyclic answers: this test runs without
// real-time priority, beside the simulator) hit both kinds of cycle
// alike. Every replugged slave must be back in OP within 1 s, and once the
// storm is over the cycle allocates nothing. SDO uploads and dumps fail
// while a break upstream cuts their slave off; they are counted. The cycle
// runs the default, pipelined exchange (ECAGENT_STORM_EXCHANGE=wait runs
// the waiting one).
func TestFaultStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s storm")
	}
	const period = time.Millisecond
	devices := []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}
	const sdoSlave = 5
	unplug := []int{1, 2, 3, 4, 6}
	m, seg := simbus.Start(t, devices, master.Config{})
	mem, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e := cycle.New(m, mem, cycle.Config{Period: period, KeepGC: true, AlarmCycles: 10,
		Pipelined: os.Getenv("ECAGENT_STORM_EXCHANGE") != ExchangeWait, RT: rt.Options{Priority: 0, Core: -1}})
	m.QueueAcyclic(true, period)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	rec := newRecoverer(m, e, log)
	wg.Go(func() { rec.run(ctx) })
	wg.Go(func() { e.Run() })
	defer func() {
		e.Stop()
		cancel()
		wg.Wait()
		m.QueueAcyclic(false, 0)
	}()

	var rep stormReport
	var sdoOK, sdoFailed atomic.Int64
	sdoCtx, stopSDO := context.WithCancel(ctx)
	var sdo sync.WaitGroup
	sdo.Go(func() {
		s := m.Slaves()[sdoSlave]
		for sdoCtx.Err() == nil {
			if _, err := m.SDOUpload(sdoCtx, s, 0x1018, 1); err != nil {
				if sdoFailed.Add(1) <= 3 {
					t.Logf("SDO upload: %v", err)
				}
			} else {
				sdoOK.Add(1)
			}
		}
	})

	// The register dump: a frame's worth of slave 0's registers
	// (0x0000-0x05C1), more than the room beside the cyclic datagrams.
	var dumps atomic.Int64
	sdo.Go(func() {
		buf := make([]byte, wire.MaxDataLen)
		station := m.Slaves()[0].StationAddress
		for sdoCtx.Err() == nil {
			if m.Bus().FPRD(sdoCtx, station, 0x0000, buf) == nil {
				dumps.Add(1)
			}
		}
	})

	watch := newStormWatch(mem, period)
	watch.t = t
	storm := stormDuration(t)
	start := time.Now()
	plugged := map[int]time.Time{} // position → when it was plugged back
	for round := 0; time.Since(start) < storm; round++ {
		pos := unplug[round%len(unplug)]
		roundStart := time.Now()
		if err := seg.Faults().Disappear(pos); err != nil {
			t.Fatal(err)
		}
		watch.follow(pos, roundStart)
		watch.until(roundStart.Add(500*time.Millisecond), &rep, plugged)
		if err := seg.Faults().ALError(sdoSlave, 0x001B); err != nil {
			t.Fatal(err)
		}
		watch.until(roundStart.Add(time.Second), &rep, plugged)
		if err := seg.Faults().Return(pos); err != nil {
			t.Fatal(err)
		}
		plugged[pos] = time.Now()
		watch.until(roundStart.Add(2*time.Second), &rep, plugged)
		if _, waiting := plugged[pos]; waiting {
			t.Errorf("round %d: slave %d, unplugged at 0 and plugged in at +%v, not back in OP 1 s later; its events: %s",
				round, pos, plugged[pos].Sub(roundStart).Round(time.Millisecond), strings.Join(watch.trail, ", "))
			delete(plugged, pos)
		}
	}
	stopSDO()
	sdo.Wait()
	rep.sdoOK, rep.sdoFailed = sdoOK.Load(), sdoFailed.Load()
	watch.until(time.Now().Add(500*time.Millisecond), &rep, plugged)

	// The storm is over: the cycle alone runs, and allocates nothing. The
	// count is the process's over a quiet window that starts when no
	// recovery episode runs (an episode allocates, on its own goroutine; a
	// loaded host makes the last returns late), and is taken again if one
	// began during it.
	n, quiet, sites := quietWindow(t, rec, watch, &rep, plugged)

	var worst time.Duration
	for _, d := range rep.reconnects {
		worst = max(worst, d)
	}
	others := rep.cycles - rep.acyclicFrames
	otherOverruns := rep.overruns - rep.acyclicFrameOverruns
	rateExtra := float64(rep.acyclicFrameOverruns) / float64(max(rep.acyclicFrames, 1))
	rateOther := float64(otherOverruns) / float64(max(others, 1))
	t.Logf("storm of %v: %d cycles, %d carried acyclic datagrams, %d sent the extra acyclic frame; overruns %d: "+
		"%d in the cycles that sent the extra frame (%.3f %%), %d in the others (%.3f %%); skipped %d; "+
		"%d reconnects, worst %v from plug-in to OP; %d AL errors recovered; SDO uploads %d ok, %d failed; %d register dumps; "+
		"%d mallocs in %d quiet cycles",
		storm, rep.cycles, rep.acyclicCycles, rep.acyclicFrames, rep.overruns, rep.acyclicFrameOverruns, 100*rateExtra,
		otherOverruns, 100*rateOther, rep.skipped, len(rep.reconnects), worst, rep.recovered, rep.sdoOK, rep.sdoFailed,
		dumps.Load(), n, quiet)
	// More than a handful, and three times the host's own rate: the
	// extra frame makes cycles overrun.
	if rep.acyclicFrameOverruns > 5 && rateExtra > 3*rateOther {
		t.Errorf("cycles with the extra acyclic frame overran at %.3f %%, the others at %.3f %%", 100*rateExtra, 100*rateOther)
	}
	if rep.acyclicFrames < rep.cycles/10 {
		t.Errorf("only %d of %d cycles sent the extra acyclic frame: the storm did not exercise it", rep.acyclicFrames, rep.cycles)
	}
	if rep.acyclicCycles == 0 || rep.sdoOK == 0 || dumps.Load() == 0 || len(rep.reconnects) == 0 || rep.recovered == 0 {
		t.Errorf("the storm did not happen: %+v", rep)
	}
	// Every allocation is profiled with its stack. Some are not the cycle
	// process's: the simulator's (in production the segment is another
	// process), the collector's own workers' (the cycle process runs with
	// the collector off), and the wait records (sudogs) the in-process
	// pipe that stands in for the wire takes when it blocks in a select
	// (the socket waits in ppoll). A collection empties the runtime's
	// shared cache of those records; a goroutine whose own cache is empty
	// then allocates new ones.
	//
	// The profile spans more than the window (the collections that
	// publish it), so it can hold more of theirs than the window did, never
	// fewer. A tiny allocation (under 16 bytes, no pointers) that fits in
	// a block already begun is counted by MemStats but not profiled: when
	// the window counted more allocations than the profile holds of
	// theirs, the rest may be the cycle's, and the test fails.
	checkQuietAllocations(t, n, quiet, sites, "after the storm")
}

// stormWatch reads the samples and events the cycle writes.
type stormWatch struct {
	t      *testing.T
	mem    *shm.Segment
	period int64
	cycles uint64
	s      shm.Sample
	ev     shm.Event
	// trail is the events about the slave unplugged last (followed), and
	// when they came after it was unplugged (since): what a late return
	// to OP is reported with.
	followed int
	since    time.Time
	trail    []string
}

func newStormWatch(mem *shm.Segment, period time.Duration) *stormWatch {
	return &stormWatch{mem: mem, period: int64(period), followed: -1}
}

// follow starts the trail of the slave at pos, unplugged at since.
func (w *stormWatch) follow(pos int, since time.Time) {
	w.followed, w.since, w.trail = pos, since, w.trail[:0]
}

// until reads samples and events until t, every 10 ms.
func (w *stormWatch) until(t time.Time, rep *stormReport, plugged map[int]time.Time) {
	for {
		w.read(rep, plugged)
		if !time.Now().Before(t) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (w *stormWatch) read(rep *stormReport, plugged map[int]time.Time) {
	samples := w.mem.Samples()
	for samples.Next(&w.s) {
		w.cycles++
		rep.cycles++
		f := w.s.Flags
		if f.Has(shm.SampleAcyclic) {
			rep.acyclicCycles++
		}
		if f.Has(shm.SampleAcyclicFrame) {
			rep.acyclicFrames++
		}
		if f.Has(shm.SampleSkipped) {
			rep.skipped += uint64(w.s.Skipped)
		}
		if f.Has(shm.SampleOverrun) {
			rep.overruns++
			if f.Has(shm.SampleAcyclicFrame) {
				rep.acyclicFrameOverruns++
				if rep.acyclicFrameOverruns <= 3 {
					w.t.Logf("overrun: wake +%v, send +%v, recv +%v, end +%v", time.Duration(w.s.Wake-w.s.Deadline),
						time.Duration(w.s.Send-w.s.Deadline), time.Duration(w.s.Recv-w.s.Deadline), time.Duration(w.s.End-w.s.Deadline))
				}
			}
		}
	}
	samples.Commit()
	events := w.mem.Events()
	for events.Next(&w.ev) {
		if int(w.ev.Slave) == w.followed {
			seen := time.Since(w.since)
			happened := seen - time.Duration(rt.Now()-w.ev.Time) // event times are CLOCK_MONOTONIC
			w.trail = append(w.trail, fmt.Sprintf("%v at +%v (read +%v)", w.ev.Kind,
				happened.Round(time.Millisecond), seen.Round(time.Millisecond)))
		}
		switch w.ev.Kind {
		case shm.EventSlaveReconnected, shm.EventSlaveFound:
			pos := int(w.ev.Slave)
			if at, ok := plugged[pos]; ok {
				rep.reconnects = append(rep.reconnects, time.Since(at))
				delete(plugged, pos)
			}
		case shm.EventALAcknowledged:
			rep.recovered++
		}
	}
	events.Commit()
}
