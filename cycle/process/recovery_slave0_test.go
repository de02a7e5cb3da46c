package process

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle"
	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// phaseCounts are the samples of one phase of TestRecoverFirstSlaveLost.
type phaseCounts struct {
	cycles, overruns, skipped   uint64
	acyclic, acyclicOverruns    uint64 // cycles that carried recovery's datagrams
	extraFrames, extraOverruns  uint64 // cycles that sent the extra acyclic frame
	lost, reconnected, alarm    int    // events
	alarmAtStart                bool   // the bus alarm was up when the phase began
	otherEvents                 int
	lastWake, lastEnd, lastRecv int64 // of the last overrun, from its deadline
}

// readPhase reads the samples and events the cycle wrote until n more
// cycles ran, or the deadline; alarm follows the bus alarm across phases
// (raised, cleared).
func readPhase(mem *shm.Segment, n uint64, deadline time.Time, alarm *bool) phaseCounts {
	p := phaseCounts{alarmAtStart: *alarm}
	var s shm.Sample
	var ev shm.Event
	for p.cycles < n && time.Now().Before(deadline) {
		samples := mem.Samples()
		for p.cycles < n && samples.Next(&s) {
			p.cycles++
			f := s.Flags
			acy, extra := f.Has(shm.SampleAcyclic), f.Has(shm.SampleAcyclicFrame)
			if acy {
				p.acyclic++
			}
			if extra {
				p.extraFrames++
			}
			if f.Has(shm.SampleSkipped) {
				p.skipped += uint64(s.Skipped)
			}
			if f.Has(shm.SampleOverrun) {
				p.overruns++
				p.lastWake, p.lastEnd, p.lastRecv = s.Wake-s.Deadline, s.End-s.Deadline, s.Recv-s.Deadline
				if acy {
					p.acyclicOverruns++
				}
				if extra {
					p.extraOverruns++
				}
			}
		}
		samples.Commit()
		events := mem.Events()
		for events.Next(&ev) {
			switch ev.Kind {
			case shm.EventSlaveLost:
				p.lost++
			case shm.EventSlaveReconnected:
				p.reconnected++
			case shm.EventBusAlarm:
				p.alarm++
				*alarm = true
			case shm.EventBusAlarmCleared:
				*alarm = false
				p.otherEvents++
			default:
				p.otherEvents++
			}
		}
		events.Commit()
		time.Sleep(5 * time.Millisecond)
	}
	return p
}

// TestRecoverFirstSlaveLost: slave 0, the first in the ring, lost and
// back, at a 1 ms cycle with recovery, the cycle waiting for its frames
// (the exchange of a link that cannot post). While it is gone nothing
// answers: every frame is lost, the bus alarm is raised, recovery is not
// woken (the cycle learns nothing of any slave) and carries no datagram;
// when it is back, slave 0 alone is lost and reconnected. The figures
// per phase say where overruns come from: the cycles that carried
// recovery's datagrams, or the others.
func TestRecoverFirstSlaveLost(t *testing.T) {
	if testing.Short() {
		t.Skip("6 s of cycles")
	}
	const period = time.Millisecond
	const window = 2000 // cycles per phase
	devices := []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}
	m, seg := simbus.Start(t, devices, master.Config{})
	mem, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	e := cycle.New(m, mem, cycle.Config{Period: period, KeepGC: true, AlarmCycles: 10, RT: rt.Options{Core: -1}})
	m.QueueAcyclic(true, period)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	rec := newRecoverer(m, e, slog.New(slog.NewTextHandler(io.Discard, nil)))
	wg.Go(func() { rec.run(ctx) })
	wg.Go(func() { e.Run() })
	defer func() {
		e.Stop()
		cancel()
		wg.Wait()
		m.QueueAcyclic(false, 0)
	}()

	deadline := time.Now().Add(30 * time.Second)
	var alarm bool
	readPhase(mem, 200, deadline, &alarm) // settle
	quiet := readPhase(mem, window, deadline, &alarm)
	if err := seg.Faults().Disappear(0); err != nil {
		t.Fatal(err)
	}
	gone := readPhase(mem, window, deadline, &alarm)
	upWhileGone := alarm
	if err := seg.Faults().Return(0); err != nil {
		t.Fatal(err)
	}
	back := readPhase(mem, window, deadline, &alarm)
	for _, p := range []struct {
		name string
		c    phaseCounts
	}{{"quiet", quiet}, {"slave 0 gone", gone}, {"slave 0 back", back}} {
		t.Logf("%s: %d cycles, %d overruns (%d skipped); %d carried acyclic datagrams (%d of them overran), %d sent the extra frame (%d overran); "+
			"last overrun woke +%v, received +%v, ended +%v; events: %d lost, %d reconnected, %d alarms, %d others",
			p.name, p.c.cycles, p.c.overruns, p.c.skipped, p.c.acyclic, p.c.acyclicOverruns, p.c.extraFrames, p.c.extraOverruns,
			time.Duration(p.c.lastWake), time.Duration(p.c.lastRecv), time.Duration(p.c.lastEnd),
			p.c.lost, p.c.reconnected, p.c.alarm, p.c.otherEvents)
	}
	// A host stall that lost ten frames in a row at the end of the quiet
	// phase raised the alarm already: it stays up, and is not raised again.
	wantAlarms := 1
	if gone.alarmAtStart {
		wantAlarms = 0
		t.Logf("the bus alarm was up when slave 0 went (frames lost to a host stall)")
	}
	if gone.acyclic != 0 || gone.lost != 0 || gone.alarm != wantAlarms || !upWhileGone {
		t.Errorf("slave 0 gone: %d cycles carried acyclic datagrams, %d slave-lost, %d bus alarms raised (up at the start %v, at the end %v); "+
			"want 0, 0 and %d, up at the end", gone.acyclic, gone.lost, gone.alarm, gone.alarmAtStart, upWhileGone, wantAlarms)
	}
	if back.lost != 1 || back.reconnected != 1 {
		t.Errorf("slave 0 back: %d slave-lost, %d slave-reconnected; want 1 and 1", back.lost, back.reconnected)
	}
}
