package agent

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/shm"
)

// TestEventsCountedAsCatalogued feeds an event of every kind of the cycle
// process, about slave 1, to the telemetry and checks
// ecagent_bus_events_total against the catalogue: a counted event under
// its name, at the slave's position and name when it is about a slave,
// at -1 "bus" when not; one not counted nowhere; the Value in an event's
// own counter family, under its Text.
func TestEventsCountedAsCatalogued(t *testing.T) {
	reg, err := metrics.NewRegistry(metrics.Options{Site: "s", Line: "l", Host: "h", Target: time.Millisecond, CycleCore: -1})
	if err != nil {
		t.Fatal(err)
	}
	tel := &telemetry{reg: reg}
	cp := &CycleProcess{info: &process.BusInfo{Slaves: []process.SlaveInfo{{Position: 1, Name: "EL2004 8 Ch. Dig. Output", OrderCode: "EL2004"}}}}
	for _, e := range contract.Events() {
		if e.Origin != contract.OriginCycle {
			continue
		}
		ev := shm.Event{Kind: e.Kind, Slave: 1, Value: 5}
		ev.SetText("invalid")
		tel.event(cp, &ev, e, nil)
	}
	counted := map[string]string{} // kind → position/name
	own := map[string]float64{}    // family/label=value → value
	families, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if f.GetName() == "ecagent_bus_events_total" {
				counted[l["kind"]] = l["position"] + "/" + l["name"]
			}
			for k, v := range l {
				own[f.GetName()+"/"+k+"="+v] = m.GetCounter().GetValue()
			}
		}
	}
	for _, e := range contract.Events() {
		if e.Origin != contract.OriginCycle {
			continue
		}
		want := ""
		switch {
		case e.Counted && e.PerSlave:
			want = "1/EL2004"
		case e.Counted:
			want = "-1/bus"
		}
		if got := counted[e.Name]; got != want {
			t.Errorf("%s counted at %q, want %q", e.Name, got, want)
		}
		if c := e.Counter; c.Stem != "" {
			if got := own[metrics.EventCounterName(c)+"/"+c.Label+"=invalid"]; got != 5 {
				t.Errorf("%s: its own counter has %v under its Text, want the Value 5", e.Name, got)
			}
		}
	}
}

// recordLog keeps the records a logger writes.
type recordLog struct{ records []slog.Record }

func (h *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	h.records = append(h.records, r)
	return nil
}
func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordLog) WithGroup(string) slog.Handler      { return h }

// TestEventsLoggedAsCatalogued logs an event of every kind of the cycle
// process and checks each line against its row: its level and message,
// its name, the slave's condition for an event that changes a slave, the
// bus's for one that changes the bus; an event without a log message
// writes nothing.
func TestEventsLoggedAsCatalogued(t *testing.T) {
	for _, e := range contract.Events() {
		if e.Origin != contract.OriginCycle {
			continue
		}
		h := &recordLog{}
		c := &consumer{log: slog.New(h), model: busstate.New(nil)}
		c.model.Reset([]busstate.SlaveInfo{{Position: 1, Name: "EL2004"}})
		ev := shm.Event{Kind: e.Kind, Slave: 1, Cycle: 9, Value: 5}
		c.model.Apply(&ev)
		c.logEvent(&ev, e)
		if e.Log == "" {
			if len(h.records) != 0 {
				t.Errorf("%s: logged %q, want nothing", e.Name, h.records[0].Message)
			}
			continue
		}
		if len(h.records) != 1 {
			t.Errorf("%s: %d log lines, want 1", e.Name, len(h.records))
			continue
		}
		r := h.records[0]
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.Resolve().String(); return true })
		if r.Level != e.Level || r.Message != e.Log || attrs["event"] != e.Name || attrs["cycle"] != strconv.Itoa(9) {
			t.Errorf("%s: logged %v %q %v, want %v %q with its name and cycle", e.Name, r.Level, r.Message, attrs, e.Level, e.Log)
		}
		_, condition := attrs["condition"]
		_, bus := attrs["bus"]
		if condition != (e.PerSlave && e.Effect != contract.EffectNone) || bus != (!e.PerSlave && e.Effect != contract.EffectNone) {
			t.Errorf("%s: condition %v, bus %v in %v", e.Name, condition, bus, attrs)
		}
		if e.PerSlave && attrs["slave"] != "1 (EL2004)" {
			t.Errorf("%s: slave %q, want 1 (EL2004)", e.Name, attrs["slave"])
		}
	}
}
