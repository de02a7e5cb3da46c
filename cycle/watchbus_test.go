package cycle

import (
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// TestWatchBusTakesOnlyStatusReads feeds the bus watcher cycle results
// and checks the state-change events it reports: a result without an AL
// status read (a lost frame, or a forged answer that carried none) never
// changes the bus state, and a real change back to OP is reported, not
// taken as a new baseline.
func TestWatchBusTakesOnlyStatusReads(t *testing.T) {
	op := master.CycleResult{StatusRead: true, Responding: 7, ALStates: 0x08}
	none := master.CycleResult{StatusRead: true, Responding: 0}
	forged := master.CycleResult{WKC: 8, ExpectedWKC: 8} // an LRW answer alone
	safeErr := master.CycleResult{StatusRead: true, Responding: 7, ALStates: 0x0C, ALError: true}
	cases := []struct {
		name    string
		results []master.CycleResult
		want    []shm.EventKind
	}{
		{"steady OP", []master.CycleResult{op, op, op}, nil},
		{"a forged answer between OP reads", []master.CycleResult{op, forged, op, forged, forged, op}, nil},
		{"a forged answer first", []master.CycleResult{forged, op, op}, nil},
		{"nobody answering, then OP again", []master.CycleResult{op, none, op},
			[]shm.EventKind{shm.EventStateChange, shm.EventStateChange}},
		{"an AL error and back", []master.CycleResult{op, safeErr, forged, op},
			[]shm.EventKind{shm.EventALError, shm.EventStateChange}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _, mem := bus(t)
			e := New(m, mem, Config{Period: time.Millisecond, KeepGC: true, RT: noRT()})
			mem.Events().Discard()
			for i := range c.results {
				e.watchBus(&c.results[i])
			}
			var got []shm.EventKind
			var ev shm.Event
			for mem.Events().Next(&ev) {
				got = append(got, ev.Kind)
			}
			if len(got) != len(c.want) {
				t.Fatalf("events %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("events %v, want %v", got, c.want)
				}
			}
		})
	}
}
