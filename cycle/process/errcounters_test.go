package process

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle"
	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// TestErrorCountersReportChangesOnly polls a quiet segment (every slave's
// counters reported once), then puts a noisy cable on port 1 of slave 3:
// the next reports are of the slaves whose counters moved, slave 3's
// block shows RX errors on port 1 and no other slave RX errors of its own.
func TestErrorCountersReportChangesOnly(t *testing.T) {
	devices := []string{"EK1100", "EL2004", "EL1014", "EL2004", "EK1110"}
	m, seg := simbus.Start(t, devices, master.Config{})
	// The cycle runs, as in the cycle process: the noise hits the frames
	// that cross the cable, a thousand a second, and the reads ride in
	// the cycle's frames.
	mem, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	e := cycle.New(m, mem, cycle.Config{Period: time.Millisecond, KeepGC: true, Pipelined: true, RT: rt.Options{Core: -1}})
	m.QueueAcyclic(true, time.Millisecond)
	cycleDone := make(chan struct{})
	go func() { defer close(cycleDone); e.Run() }()
	defer func() { e.Stop(); <-cycleDone; m.QueueAcyclic(false, 0) }()
	var mu sync.Mutex
	var got []shm.Event
	report := func(ev shm.Event) bool {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
		return true
	}
	reports := func() []shm.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]shm.Event(nil), got...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		pollErrorCounters(ctx, m, report, 20*time.Millisecond)
	}()
	defer func() { cancel(); <-done }()

	waitFor := func(what string, ok func([]shm.Event) bool) []shm.Event {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if evs := reports(); ok(evs) {
				return evs
			}
		}
		t.Fatalf("%s: reports %v", what, reports())
		return nil
	}
	first := waitFor("every slave once", func(evs []shm.Event) bool { return len(evs) >= len(devices) })
	seen := map[uint16]bool{}
	for i, ev := range first[:len(devices)] {
		if ev.Kind != shm.EventErrorCounters || int(ev.Slave) >= len(devices) || seen[ev.Slave] {
			t.Fatalf("report %d: %v of slave %d (seen %v)", i, ev.Kind, ev.Slave, seen)
		}
		seen[ev.Slave] = true
	}
	// A few more polls of a quiet segment report nothing new.
	time.Sleep(100 * time.Millisecond) // polls to happen, not synchronisation: nothing is awaited
	if n := len(reports()); n != len(devices) {
		t.Errorf("%d reports of a quiet segment, want %d", n, len(devices))
	}
	if err := seg.Faults().Noisy(3, 1, 50); err != nil {
		t.Fatal(err)
	}
	evs := waitFor("slave 3's RX errors", func(evs []shm.Event) bool {
		for _, ev := range evs[len(devices):] {
			if ev.Slave == 3 && ev.Text[2*1+1] > 0 { // port 1 RX error counter, 0x0303
				return true
			}
		}
		return false
	})
	// Upstream slaves see the damaged frames pass (forwarded RX errors,
	// 0x0308–0x030B), never RX errors of their own: the cable is slave
	// 3's.
	for _, ev := range evs[len(devices):] {
		if ev.Slave != 3 && [8]byte(ev.Text[:8]) != [8]byte{} {
			t.Errorf("slave %d reports RX errors of its own: % x", ev.Slave, ev.Text[:20])
		}
	}
}
