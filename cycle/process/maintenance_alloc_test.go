package process

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/shm"
	"github.com/ecagent/ecagent/sim"
)

// TestCycleAllocatesNothingAfterMaintenance runs the cycle process's Run
// (thread warm-up, the cycle keeping its P and yielding, the collector off,
// recovery, the error-counter poller, the maintenance socket) against a
// simulated segment, serves every maintenance operation the ecagent
// toolbox offers through the socket as the toolbox sends them, has a
// slave unplugged and plugged back and another raise an AL error, and
// then checks that the process allocates nothing in a quiet second once
// recovery and the requests are done: what they leave behind (threads
// ended, caches drained) must not make the cycle thread allocate later.
// Every allocation of that second is profiled with its stack; only the
// simulator's (another process in production) and the collector's own
// workers' are not the cycle process's.
func TestCycleAllocatesNothingAfterMaintenance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cycle process for seconds")
	}
	allocatesNothingAfterMaintenance(t, socketPairSegment)
}

// segmentWire connects a simulated segment's end to the cycle: it returns
// the segment's link and sets cfg and o so that Run reaches the other end.
type segmentWire func(t *testing.T, cfg *Config, o *Options) link.Link

// socketPairSegment: one end of a socket pair for the segment, the other
// inherited by the cycle as a descriptor, as the agent hands it over.
func socketPairSegment(t *testing.T, cfg *Config, o *Options) link.Link {
	a, b, err := link.NewSocketPair()
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.File()
	_ = b.Close()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0) // Run owns this one
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	o.LinkFD = fd
	return a
}

// lockedBuffer is a bytes.Buffer several goroutines may write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func allocatesNothingAfterMaintenance(t *testing.T, wire segmentWire) {
	const period = time.Millisecond
	devices := []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110", "AKD"}
	const (
		unplugged = 3 // an EL1014
		alError   = 5 // the EL4132
		foeSlave  = 7 // the AKD
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The segment, served on the link wire gives it.
	devs, err := sim.ParseDevices(devices)
	if err != nil {
		t.Fatal(err)
	}
	simSeg := sim.NewSegment(devs)
	cfg := Default()
	opts := Options{LinkFD: -1}
	a := wire(t, &cfg, &opts)
	simCtx, stopSim := context.WithCancel(context.Background())
	simDone := make(chan struct{})
	go func() { _ = simSeg.Serve(simCtx, a); close(simDone) }()
	defer func() { stopSim(); _ = a.Close(); <-simDone }()

	path := filepath.Join(t.TempDir(), "ecagent.shm")
	layout := shm.DefaultLayout()
	layout.Period = period
	seg, err := shm.Create(path, layout)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	cfg.Bus.ExpectedSlaves = len(devices)
	cfg.Bus.Timeout = Duration(100 * time.Millisecond) // a shared, loaded machine
	cfg.Cycle.Period, cfg.Cycle.SHM = Duration(period), path
	cfg.Cycle.Priority, cfg.Cycle.LockMemory = 0, false // no real-time set-up in a test process

	running := make(chan *recoverer, 1)
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	var report Report
	var warnings lockedBuffer // a link refused would say so here
	log := slog.New(slog.NewTextHandler(io.MultiWriter(os.Stderr, &warnings), &slog.HandlerOptions{Level: slog.LevelWarn}))
	defer func() {
		if w := warnings.String(); strings.Contains(w, "bus.link refused") {
			t.Errorf("the cycle did not run on the link asked for:\n%s", w)
		}
	}()
	go func() {
		var err error
		opts.running = func(r *recoverer) { running <- r }
		report, err = Run(runCtx, cfg, opts, log)
		runDone <- err
	}()
	requests := uint64(0) // sent to the endpoint
	defer func() {
		stopRun()
		if err := <-runDone; err != nil {
			t.Errorf("Run: %v", err)
		}
		// The report counts the requests, whose allocations are theirs.
		if report.MaintenanceRequests != requests || report.RecoveryEpisodes == 0 {
			t.Errorf("the cycle process reports %d maintenance requests and %d recovery episodes, want %d and at least 1",
				report.MaintenanceRequests, report.RecoveryEpisodes, requests)
		}
	}()
	var rec *recoverer
	select {
	case rec = <-running:
	case err := <-runDone:
		runDone <- err
		t.Fatalf("Run ended before cyclic operation: %v", err)
	case <-ctx.Done():
		t.Fatal("no cyclic operation within 2 minutes")
	}
	watch := newStormWatch(seg, period)
	watch.t = t
	var rep stormReport
	plugged := map[int]time.Time{}
	for deadline := time.Now().Add(10 * time.Second); watch.cycles < 100; {
		if time.Now().After(deadline) {
			t.Fatalf("%d cycles in 10 s", watch.cycles)
		}
		watch.until(time.Now().Add(10*time.Millisecond), &rep, plugged)
	}
	goroutines := runtime.NumGoroutine() // the endpoint idle, no client

	// The toolbox's operations, one connection as ecagent opens it.
	cl, err := maintenance.Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// A loaded host now and then holds the cycle off for longer than a
	// datagram's tries (the endpoint tries a request three times): such a
	// request is sent again, as an operator would. Any other error fails.
	call := func(req maintenance.Request, res any) {
		t.Helper()
		raw, err := cl.Call(ctx, req)
		requests++
		for try := 2; err != nil && strings.Contains(err.Error(), "no answer to frame") && try <= 20; try++ {
			t.Logf("%s, try %d: %v", req.Op, try, err)
			raw, err = cl.Call(ctx, req)
			requests++
		}
		if err != nil {
			t.Fatalf("%s: %v", req.Op, err)
		}
		if res != nil {
			if err := json.Unmarshal(raw, res); err != nil {
				t.Fatalf("%s: %v", req.Op, err)
			}
		}
		watch.read(&rep, plugged)
	}
	var sii maintenance.SIIResult
	firmware := make([]byte, 3000)
	for i := range firmware {
		firmware[i] = byte(i * 7)
	}
	var foeBack maintenance.FoEResult
	for round := range 2 {
		call(maintenance.Request{Op: maintenance.OpHello}, nil)
		call(maintenance.Request{Op: maintenance.OpSlaves}, nil)
		call(maintenance.Request{Op: maintenance.OpMaster}, nil)
		call(maintenance.Request{Op: maintenance.OpRegRead, Slave: 1, Addr: 0x0130, Len: 6}, nil)
		call(maintenance.Request{Op: maintenance.OpRegRead, Slave: 0, Addr: 0x0000, Len: 1024}, nil) // beyond the cyclic frame's room
		call(maintenance.Request{Op: maintenance.OpRegWrite, Slave: 1, Addr: 0x0F80, Data: []byte{0x12, 0x34}, Write: true}, nil)
		call(maintenance.Request{Op: maintenance.OpCRC}, nil)
		call(maintenance.Request{Op: maintenance.OpPDOs}, nil)
		call(maintenance.Request{Op: maintenance.OpData}, nil)
		call(maintenance.Request{Op: maintenance.OpSIIRead, Slave: 2}, &sii)
		call(maintenance.Request{Op: maintenance.OpSIIWrite, Slave: 2, Data: sii.Data, Write: true}, nil)
		call(maintenance.Request{Op: maintenance.OpAlias, Slave: 4, Alias: uint16(0x100 + round), Write: true}, nil)
		call(maintenance.Request{Op: maintenance.OpAlias, Slave: 4, Alias: 0, Write: true}, nil)
		call(maintenance.Request{Op: maintenance.OpStates, Slave: 2, State: "SAFEOP", Write: true}, nil)
		call(maintenance.Request{Op: maintenance.OpStates, Slave: 2, State: "OP", Write: true}, nil)
		call(maintenance.Request{Op: maintenance.OpSDOUpload, Slave: alError, Index: 0x1018, Sub: 2}, nil)
		call(maintenance.Request{Op: maintenance.OpSDODownload, Slave: alError, Index: 0xF008, Data: []byte{1, 0, 0, 0}, Write: true}, nil)
		call(maintenance.Request{Op: maintenance.OpSDOInfo, Slave: alError, Values: true}, nil)
		call(maintenance.Request{Op: maintenance.OpDiag, Slave: alError}, nil)
		call(maintenance.Request{Op: maintenance.OpRescan}, nil)
		call(maintenance.Request{Op: maintenance.OpFoEWrite, Slave: foeSlave, Name: "fw.bin", Data: firmware, Write: true}, nil)
		call(maintenance.Request{Op: maintenance.OpFoERead, Slave: foeSlave, Name: "fw.bin"}, &foeBack)
		if string(foeBack.Data) != string(firmware) {
			t.Fatalf("FoE read back %d bytes, not the %d written", len(foeBack.Data), len(firmware))
		}
		// The transfers leave the drive in INIT: recovery takes it back
		// to OP, as it does any slave out of OP that nobody holds; the
		// next round begins when it is there.
		for deadline := time.Now().Add(20 * time.Second); ; {
			var slaves maintenance.SlavesResult
			call(maintenance.Request{Op: maintenance.OpSlaves}, &slaves)
			if st := slaves.Slaves[foeSlave].State; st == "OP" {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("the drive in %s 20 s after the FoE transfers, not back in OP", st)
			}
			watch.until(time.Now().Add(10*time.Millisecond), &rep, plugged)
		}
	}
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}

	// A recovery: a slave unplugged and plugged back, another raising an
	// AL error meanwhile.
	if err := simSeg.Faults().Disappear(unplugged); err != nil {
		t.Fatal(err)
	}
	watch.until(time.Now().Add(300*time.Millisecond), &rep, plugged)
	if err := simSeg.Faults().ALError(alError, 0x001B); err != nil {
		t.Fatal(err)
	}
	if err := simSeg.Faults().Return(unplugged); err != nil {
		t.Fatal(err)
	}
	plugged[unplugged] = time.Now()
	for deadline := time.Now().Add(20 * time.Second); len(plugged) > 0 || rep.recovered == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("slave %d not back in OP (%v) or the AL error not acknowledged (%d) within 20 s", unplugged, plugged, rep.recovered)
		}
		watch.until(time.Now().Add(10*time.Millisecond), &rep, plugged)
	}

	// The endpoint's connection goroutine is gone once the server has seen
	// the client close.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > goroutines; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 10 s after the client closed, %d before it connected", runtime.NumGoroutine(), goroutines)
		}
		watch.until(time.Now().Add(10*time.Millisecond), &rep, plugged)
	}

	n, quiet, sites := quietWindow(t, rec, watch, &rep, plugged)
	t.Logf("%d cycles, %d overruns; %d reconnects, %d AL errors recovered; %d mallocs in %d quiet cycles",
		rep.cycles, rep.overruns, len(rep.reconnects), rep.recovered, n, quiet)
	checkQuietAllocations(t, n, quiet, sites, "after maintenance and a recovery")
}

// quietCycles is how many cycles a quiet window spans: a second's worth
// at 1 ms. A loaded host runs fewer cycles a second (it skips deadlines it
// missed), so the window is counted in cycles, not in time, and is cut
// only at quietWindowLimit.
const quietCycles = 1000

// quietWindowLimit bounds a quiet window; a window that ends there with
// fewer than quietCycles cycles fails the test (the cycle stalled).
const quietWindowLimit = 20 * time.Second

// quietWindow counts the process's allocations over quietCycles cycles in
// which no recovery episode runs (taken again, up to five times, when one
// began during it), with every allocation profiled: the count, the
// cycles it spans and the allocation sites.
func quietWindow(t *testing.T, rec *recoverer, watch *stormWatch, rep *stormReport, plugged map[int]time.Time) (n, quiet uint64, sites []allocSite) {
	t.Helper()
	var before, after runtime.MemStats
	for try := 1; ; try++ {
		for deadline := time.Now().Add(5 * time.Second); rec.active.Load() && time.Now().Before(deadline); {
			watch.until(time.Now().Add(50*time.Millisecond), rep, plugged)
		}
		episodes := rec.episodes.Load()
		profile := startAllocSites()
		runtime.ReadMemStats(&before)
		c0 := watch.cycles
		for limit := time.Now().Add(quietWindowLimit); watch.cycles-c0 < quietCycles && time.Now().Before(limit); {
			watch.until(time.Now().Add(10*time.Millisecond), rep, plugged)
		}
		runtime.ReadMemStats(&after)
		sites = profile.sites()
		quiet = watch.cycles - c0
		if quiet < quietCycles {
			t.Errorf("only %d cycles in %v after the last recovery episode: the cycle stalled", quiet, quietWindowLimit)
		}
		if rec.episodes.Load() == episodes && !rec.active.Load() {
			return after.Mallocs - before.Mallocs, quiet, sites
		}
		if try == 5 {
			t.Errorf("recovery episodes kept beginning; the quiet window is not quiet")
			return after.Mallocs - before.Mallocs, quiet, sites
		}
		t.Logf("a recovery episode ran in the quiet window: taking it again")
	}
}

// checkQuietAllocations fails the test when the n allocations of a quiet
// window include one of the cycle process's, or more than the profile
// holds of others' (see TestFaultStorm): the simulator's, which in
// production is another process, the collector's own workers', and the
// wait records the in-process pipe's select takes after a collection.
func checkQuietAllocations(t *testing.T, n, quiet uint64, sites []allocSite, when string) {
	t.Helper()
	if n == 0 {
		return
	}
	var ours, theirs strings.Builder
	var theirsN int64
	for _, s := range sites {
		if s.has("ecagent/sim.", "runtime.gcBgMarkWorker") ||
			s.has("runtime.acquireSudog") && s.has("link.(*PipeEnd).Wait") {
			theirs.WriteString(s.String())
			theirsN += s.n
		} else {
			ours.WriteString(s.String())
		}
	}
	switch {
	case ours.Len() > 0:
		t.Errorf("%d allocations in %d cycles %s:\n%s", n, quiet, when, ours.String())
	case int64(n) > theirsN:
		t.Errorf("%d allocations in %d cycles %s, of which the profile holds %d, none the cycle process's; "+
			"the rest were not profiled (tiny ones are not) and may be the cycle's:\n%s", n, quiet, when, theirsN, theirs.String())
	default:
		t.Logf("%d allocations in %d cycles %s, none of them the cycle process's:\n%s", n, quiet, when, theirs.String())
	}
}
