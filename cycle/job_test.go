package cycle

import (
	"testing"
	"time"

	"github.com/ecagent/ecagent/shm"
)

// countingJob counts its cycles, reports an event on its third and takes
// drive fault resets for one slave.
type countingJob struct {
	slave  uint16
	cycles int
	resets int
	last   int64
	order  bool // times passed in were increasing
}

func (j *countingJob) Cycle(now int64, ev *shm.Event) bool {
	j.order = j.cycles == 0 || now > j.last
	j.last = now
	j.cycles++
	if j.cycles == 3 {
		ev.Kind, ev.Slave, ev.Value = shm.EventDriveState, j.slave, 4
		ev.SetText("operation enabled")
		return true
	}
	return false
}

func (j *countingJob) Command(c *shm.Command) (bool, string) {
	if c.Kind != shm.CommandResetDriveFault || c.Slave != j.slave {
		return false, ""
	}
	j.resets++
	if j.resets > 1 {
		return true, "no fault to reset"
	}
	return true, ""
}

func TestJobsRunEveryCycleAndTakeTheirCommands(t *testing.T) {
	m, _, mem := bus(t)
	job := &countingJob{slave: 2}
	for _, c := range []shm.Command{
		{Seq: 1, Kind: shm.CommandResetDriveFault, Slave: 2},
		{Seq: 2, Kind: shm.CommandResetDriveFault, Slave: 2},
		{Seq: 3, Kind: shm.CommandResetDriveFault, Slave: 5}, // no job for it
	} {
		if !mem.Commands().Push(&c) {
			t.Fatal("command ring full")
		}
	}
	e := New(m, mem, Config{Period: 2 * time.Millisecond, Cycles: 10, KeepGC: true, RT: noRT()})
	e.Jobs = []Job{job}
	if n := e.Run(); n != 10 {
		t.Fatalf("ran %d cycles", n)
	}
	if job.cycles != 10 || !job.order {
		t.Fatalf("job ran %d times (want 10), times increasing %v", job.cycles, job.order)
	}
	want := map[uint64]struct {
		kind   shm.EventKind
		reason string
	}{
		1: {shm.EventCommandDone, ""},
		2: {shm.EventCommandRejected, "no fault to reset"},
		3: {shm.EventCommandRejected, "not applied in the cycle"},
	}
	var ev shm.Event
	var drive int
	events := mem.Events()
	for events.Next(&ev) {
		switch ev.Kind {
		case shm.EventDriveState:
			drive++
			if ev.Cycle != 2 || ev.Slave != 2 || ev.TextString() != "operation enabled" {
				t.Errorf("drive event %+v, want cycle 2, slave 2, text", ev)
			}
		case shm.EventCommandDone, shm.EventCommandRejected:
			w, ok := want[ev.Value]
			if !ok || w.kind != ev.Kind || w.reason != ev.TextString() {
				t.Errorf("command %d: %v %q, want %v %q", ev.Value, ev.Kind, ev.TextString(), w.kind, w.reason)
			}
			delete(want, ev.Value)
		}
	}
	if drive != 1 || len(want) != 0 {
		t.Errorf("%d drive events (want 1), commands without an answer: %v", drive, want)
	}
}
