package metrics

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/shm"
)

// testEpoch is the bus model's clock in the tests.
var testEpoch = time.Unix(1_700_000_000, 0)

// testEvent is one event of the cycle process.
func testEvent(kind shm.EventKind, slave uint16, al esc.ALStatus, code uint16, text string) shm.Event {
	var b [esc.ALStatusLen]byte
	al.Encode(b[:])
	ev := shm.Event{Kind: kind, Slave: slave, ALState: uint16(b[0]) | uint16(b[1])<<8, ALStatusCode: code}
	ev.SetText(text)
	return ev
}

// testModel is a bus model of the given slaves, brought up at testEpoch,
// that then received the events one second apart.
func testModel(t testing.TB, slaves []busstate.SlaveInfo, events ...shm.Event) *busstate.Model {
	t.Helper()
	now := testEpoch
	m := busstate.New(func() time.Time { return now })
	m.Reset(slaves)
	for i := range events {
		now = now.Add(time.Second)
		m.Apply(&events[i])
	}
	return m
}

// slaveLines renders what a scrape says of each slave, one line per slave
// in position order: "0 EK1100 up=1 al=8 err=0 code=0 presence=present
// quality=good since=0" (since: seconds after testEpoch). A state set with
// other than one series at 1 renders as "presence=?".
func slaveLines(t *testing.T, r *Registry) []string {
	t.Helper()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	type fields map[string]string
	by := map[string]fields{}
	var keys []string
	get := func(pos, name string) fields {
		k := pos + " " + name
		if by[k] == nil {
			by[k] = fields{}
			keys = append(keys, k)
		}
		return by[k]
	}
	short := map[string]string{nameSlaveUp: "up", nameSlaveALState: "al", nameSlaveALError: "err", nameSlaveALStatus: "code"}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "ecagent_slave_") || mf.GetName() == nameSlavePortErrors || mf.GetName() == nameSlaveESCErrors {
			continue
		}
		for _, m := range mf.GetMetric() {
			f := get(labelValue(m, labelPosition), labelValue(m, labelName))
			v := m.GetGauge().GetValue()
			switch n := mf.GetName(); n {
			case nameSlaveUp, nameSlaveALState, nameSlaveALError, nameSlaveALStatus:
				f[short[n]] = fmt.Sprintf("%g", v)
			case nameSlavePresence, nameSlaveQuality:
				key, label := "presence", labelPresence
				if n == nameSlaveQuality {
					key, label = "quality", labelQuality
				}
				if v == 1 {
					if _, dup := f[key]; dup {
						f[key] = "?"
					} else {
						f[key] = labelValue(m, label)
					}
				} else if v != 0 {
					f[key] = "?"
				}
			case nameSlaveQualitySince:
				f["since"] = fmt.Sprintf("%g", v-float64(testEpoch.Unix()))
			default:
				t.Errorf("unexpected slave family %s", n)
			}
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		f := by[k]
		out = append(out, fmt.Sprintf("%s up=%s al=%s err=%s code=%s presence=%s quality=%s since=%s",
			k, f["up"], f["al"], f["err"], f["code"], f["presence"], f["quality"], f["since"]))
	}
	return out
}

// TestSlaveStatesRenderTheModel checks that every slave series says what
// the bus model says, above all that a slave that does not answer is
// never shown in OP.
// standardSlaveLines is what DetailStandard shows of full's lines: no AL
// status code while it is 0, no since-time while the data is good.
func standardSlaveLines(full []string) []string {
	var out []string
	for _, l := range full {
		l = strings.Replace(l, " code=0 ", " code= ", 1)
		if strings.Contains(l, " quality=good ") {
			l = l[:strings.LastIndex(l, " since=")] + " since="
		}
		out = append(out, l)
	}
	return out
}

func TestSlaveStatesRenderTheModel(t *testing.T) {
	slaves := []busstate.SlaveInfo{{Position: 0, Name: "EK1100"}, {Position: 1, Name: "EL2004"}, {Position: 2, Name: "EL1014"}}
	op := esc.ALStatus{State: esc.StateOp}
	for _, tc := range []struct {
		name   string
		events []shm.Event
		want   []string
	}{
		{"healthy", nil, []string{
			"0 EK1100 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
			"1 EL2004 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
			"2 EL1014 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
		}},
		{"lost slave", []shm.Event{testEvent(shm.EventSlaveLost, 2, esc.ALStatus{}, 0, "does not answer")}, []string{
			"0 EK1100 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
			"1 EL2004 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
			"2 EL1014 up=0 al=0 err=0 code=0 presence=lost quality=stale since=1",
		}},
		{"slave in SAFEOP+ERR", []shm.Event{
			testEvent(shm.EventSlaveState, 1, esc.ALStatus{State: esc.StateSafeOp, Error: true}, 0x001B, ""),
		}, []string{
			"0 EK1100 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
			"1 EL2004 up=1 al=4 err=1 code=27 presence=present quality=good since=0",
			"2 EL1014 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
		}},
		{"foreign device", []shm.Event{
			testEvent(shm.EventSlaveLost, 2, esc.ALStatus{}, 0, ""),
			testEvent(shm.EventSlaveRefused, 2, esc.ALStatus{}, 0, "EL2004 rev 0x00110000"),
		}, []string{
			"0 EK1100 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
			"1 EL2004 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
			"2 EL1014 up=0 al=0 err=0 code=0 presence=refused quality=invalid since=2",
		}},
		{"reconnecting in PREOP", []shm.Event{
			testEvent(shm.EventSlaveLost, 0, esc.ALStatus{}, 0, ""),
			testEvent(shm.EventSlaveFound, 0, esc.ALStatus{}, 0, ""),
			testEvent(shm.EventSlaveState, 0, esc.ALStatus{State: esc.StatePreOp}, 0, ""),
		}, []string{
			"0 EK1100 up=1 al=2 err=0 code=0 presence=reconnecting quality=stale since=1",
			"1 EL2004 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
			"2 EL1014 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
		}},
		{"reconnected", []shm.Event{
			testEvent(shm.EventSlaveLost, 0, esc.ALStatus{}, 0, ""),
			testEvent(shm.EventSlaveReconnected, 0, op, 0, ""),
		}, []string{
			"0 EK1100 up=1 al=8 err=0 code=0 presence=present quality=good since=2",
			"1 EL2004 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
			"2 EL1014 up=1 al=8 err=0 code=0 presence=present quality=good since=0",
		}},
	} {
		for _, detail := range []Detail{DetailFull, DetailStandard} {
			t.Run(tc.name+"/"+string(detail), func(t *testing.T) {
				opts := testOptions()
				opts.Detail = detail
				r := newTestRegistry(t, opts)
				r.SetBusModel(testModel(t, slaves, tc.events...))
				want := tc.want
				if detail == DetailStandard {
					want = standardSlaveLines(tc.want)
				}
				if got := slaveLines(t, r); !slices.Equal(got, want) {
					t.Errorf("scrape says\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
				}
			})
		}
	}
}

// TestSlaveStatesFollowTheModel checks that a scrape reads the model as it
// is at that moment (no copy kept between scrapes), and that without a
// model no slave series is exported.
func TestSlaveStatesFollowTheModel(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	names := []string{nameSlaveUp, nameSlaveALState, nameSlaveALError, nameSlaveALStatus, nameSlavePresence, nameSlaveQuality, nameSlaveQualitySince}
	if n, err := testutil.GatherAndCount(r.Gatherer(), names...); err != nil || n != 0 {
		t.Errorf("without a model: %d slave series (err %v), want 0", n, err)
	}
	m := testModel(t, []busstate.SlaveInfo{{Position: 0, Name: "EL2004"}})
	r.SetBusModel(m)
	perSlave := 5 + len(busstate.Presences) + len(busstate.Qualities) // up, al state, error, code, since
	if n, _ := testutil.GatherAndCount(r.Gatherer(), names...); n != perSlave {
		t.Errorf("one slave: %d slave series, want %d", n, perSlave)
	}
	ev := testEvent(shm.EventSlaveLost, 0, esc.ALStatus{}, 0, "")
	m.Apply(&ev)
	want := `
# HELP ecagent_slave_al_state EtherCAT application-layer state of a slave as last read while it answers: 1 INIT, 2 PREOP, 3 BOOT, 4 SAFEOP, 8 OP; 0 while it does not answer (lost or refused).
# TYPE ecagent_slave_al_state gauge
ecagent_slave_al_state{host="ipc-7",line="line-3",name="EL2004",position="0",site="plant-1"} 0
# HELP ecagent_slave_up 1 while a configured slave answers at its position (present, or being reconnected), 0 while it does not (lost, or another device answers in its place).
# TYPE ecagent_slave_up gauge
ecagent_slave_up{host="ipc-7",line="line-3",name="EL2004",position="0",site="plant-1"} 0
`
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), nameSlaveUp, nameSlaveALState); err != nil {
		t.Errorf("after the slave was lost: %v", err)
	}
	r.SetBusModel(nil)
	if n, _ := testutil.GatherAndCount(r.Gatherer(), names...); n != 0 {
		t.Errorf("model taken away: %d slave series, want 0", n)
	}
}

// TestCycleProcessUpFromTheSameSnapshot: ecagent_cycle_process_up comes
// from the snapshot the slave series come from, so no scrape shows the
// cycle process down beside slaves that answer; without a model it is
// what the agent last told the registry.
func TestCycleProcessUpFromTheSameSnapshot(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	gauge := func(name string, labels map[string]string) float64 {
		t.Helper()
		fams, err := r.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
		next:
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
						continue next
					}
				}
				return m.GetGauge().GetValue()
			}
		}
		t.Fatalf("%s%v not gathered", name, labels)
		return 0
	}
	if up := gauge(nameProcessUp, nil); up != 0 {
		t.Errorf("before any cycle process: up %v", up)
	}
	r.CycleProcessStarted(1)
	if up := gauge(nameProcessUp, nil); up != 1 {
		t.Errorf("started, no model: up %v", up)
	}
	m := testModel(t, []busstate.SlaveInfo{{Position: 0, Name: "EL2004"}})
	r.SetBusModel(m)
	r.CycleProcessResponding(true)
	m.SetCycleStalled(true) // the model knows first; the registry is told after
	if up, slave := gauge(nameProcessUp, nil), gauge(nameSlaveUp, map[string]string{labelPosition: "0"}); up != 0 || slave != 0 {
		t.Errorf("stalled in the model: cycle process up %v, slave up %v; want 0 and 0", up, slave)
	}
	m.SetCycleStalled(false)
	r.CycleProcessResponding(false) // a registry that lags the model does not count
	if up, slave := gauge(nameProcessUp, nil), gauge(nameSlaveUp, map[string]string{labelPosition: "0"}); up != 1 || slave != 1 {
		t.Errorf("beating again in the model: cycle process up %v, slave up %v; want 1 and 1", up, slave)
	}
	m.CycleDown()
	if up := gauge(nameProcessUp, nil); up != 0 {
		t.Errorf("cycle process down in the model: up %v", up)
	}
	// Failed bring-ups: counted in a row under the last one's reason.
	failures := func(reason string) float64 {
		return gauge(nameBringUpFailures, map[string]string{labelReason: reason})
	}
	m.BringUpFailed(busstate.BringUpNoAnswer, "no answer to frame")
	m.BringUpFailed(busstate.BringUpNotAsConfigured, "found 5 slaves on the segment, configuration expects 7")
	if a, b := failures("not-as-configured"), failures("no-answer"); a != 2 || b != 0 {
		t.Errorf("after two failed bring-ups: not-as-configured %v, no-answer %v; want 2 and 0", a, b)
	}
	m.Reset([]busstate.SlaveInfo{{Position: 0, Name: "EL2004"}})
	if a := failures("not-as-configured"); a != 0 {
		t.Errorf("once a cycle process runs: not-as-configured %v, want 0", a)
	}
}
