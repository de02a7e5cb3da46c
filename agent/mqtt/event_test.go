package mqtt

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// TestAppendShmEvent compares the JSON of each kind of cycle event with
// the exact text a subscriber gets (after ts and seq).
func TestAppendShmEvent(t *testing.T) {
	model, problems := NewModel(referenceBus(), Rules{Interval: time.Second})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	event := func(kind shm.EventKind, slave uint16, value uint64, text string) shm.Event {
		ev := shm.Event{Kind: kind, Cycle: 42, Slave: slave, Value: value}
		ev.SetText(text)
		return ev
	}
	alEvent := func(kind shm.EventKind, slave, al, code uint16, text string) shm.Event {
		ev := event(kind, slave, 0, text)
		ev.ALState, ev.ALStatusCode = al, code
		return ev
	}
	tests := []struct {
		name  string
		ev    shm.Event
		model *Model
		want  string
	}{
		{
			name: "emergency with a known code",
			ev:   event(shm.EventEmergency, 5, shm.EmergencyValue(0x8611, 0x81, [5]byte{0x01, 0x02, 0xab, 0x00, 0xff}), ""),
			want: `{"kind":"emergency","cycle":42,"slave":5,"slave_name":"EL4132-5","error_code":34321,"error_register":129,"data":"0102ab00ff","meaning":"following error"}`,
		},
		{
			name: "emergency named by its class",
			ev:   event(shm.EventEmergency, 7, shm.EmergencyValue(0x4281, 0x09, [5]byte{}), ""),
			want: `{"kind":"emergency","cycle":42,"slave":7,"slave_name":"EL3204-7","error_code":17025,"error_register":9,"data":"0000000000","meaning":"device temperature"}`,
		},
		{
			name: "error reset, no bus model",
			ev:   event(shm.EventEmergency, 3, shm.EmergencyValue(0x0000, 0, [5]byte{}), ""),
			want: `{"kind":"emergency","cycle":42,"slave":3,"error_code":0,"error_register":0,"data":"0000000000","meaning":"error reset or no error"}`,
		},
		{
			name: "drive state",
			ev:   event(shm.EventDriveState, 1, 5, "operation enabled"),
			want: `{"kind":"drive-state","cycle":42,"slave":1,"slave_name":"EL2004-1","state":"operation enabled","state_number":5}`,
		},
		{
			name: "drive state without a name",
			ev:   event(shm.EventDriveState, 1, 6, ""),
			want: `{"kind":"drive-state","cycle":42,"slave":1,"slave_name":"EL2004-1","state":"quick stop active","state_number":6}`,
		},
		{
			name: "drive state out of range",
			ev:   event(shm.EventDriveState, 1, 1<<40, ""),
			want: `{"kind":"drive-state","cycle":42,"slave":1,"slave_name":"EL2004-1","state":"DriveState(2147483647)","state_number":1099511627776}`,
		},
		{
			name: "drive fault",
			ev:   event(shm.EventDriveFault, 2, 0x2310, "fault"),
			want: `{"kind":"drive-fault","cycle":42,"slave":2,"slave_name":"EL2004-2","error_code":8976,"meaning":"continuous over current (device output side)","state":"fault"}`,
		},
		{
			name: "drive fault with a manufacturer code",
			ev:   event(shm.EventDriveFault, 2, 0xFF42, ""),
			want: `{"kind":"drive-fault","cycle":42,"slave":2,"slave_name":"EL2004-2","error_code":65346,"meaning":"device specific"}`,
		},
		{
			name: "drive fault cleared",
			ev:   event(shm.EventDriveFaultCleared, 2, 0, ""),
			want: `{"kind":"drive-fault-cleared","cycle":42,"slave":2,"slave_name":"EL2004-2"}`,
		},
		{
			// A note is about the bus: slave 0 is not what it is about.
			name: "a note keeps its text",
			ev:   event(shm.EventNote, 0, 0, "hello"),
			want: `{"kind":"note","cycle":42,"text":"hello"}`,
		},
		{
			name: "frames discarded",
			ev:   event(shm.EventFramesDiscarded, 0, 17, "mismatched"),
			want: `{"kind":"frames-discarded","cycle":42,"frames":17,"reason":"mismatched"}`,
		},
		{
			name: "slave state: its AL status, not the text",
			ev:   alEvent(shm.EventSlaveState, 3, 0x14, 0x001B, "ignored"),
			want: `{"kind":"slave-state","cycle":42,"slave":3,"slave_name":"EL1014-3","state":"SAFEOP","error":true,"al_status_code":27,"al_status":"0x001b (sync manager watchdog)"}`,
		},
		{
			name: "bus state without a code",
			ev:   alEvent(shm.EventStateChange, 0, 0x08, 0, ""),
			want: `{"kind":"state-change","cycle":42,"state":"OP","error":false,"al_status_code":0}`,
		},
		{
			name: "recovery failed",
			ev:   alEvent(shm.EventRecoveryFailed, 2, 0, 0x001D, "still refused"),
			want: `{"kind":"recovery-failed","cycle":42,"slave":2,"slave_name":"EL2004-2","al_status_code":29,"al_status":"0x001d (invalid output configuration)","attempts":0,"text":"still refused"}`,
		},
		{
			name: "slave reconnected",
			ev:   event(shm.EventSlaveReconnected, 1, 1_234_567, ""),
			want: `{"kind":"slave-reconnected","cycle":42,"slave":1,"slave_name":"EL2004-1","took_us":1234}`,
		},
		{
			name: "bus alarm",
			ev:   event(shm.EventBusAlarm, 0, 3, shm.AlarmFramesLost),
			want: `{"kind":"bus-alarm","cycle":42,"cycles":3,"text":"frames lost"}`,
		},
		{
			name: "maintenance",
			ev:   event(shm.EventMaintenance, 1, 1000, "reg write 0x0120"),
			want: `{"kind":"maintenance","cycle":42,"slave":1,"slave_name":"EL2004-1","uid":1000,"text":"reg write 0x0120"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := model
			if tt.name == "error reset, no bus model" {
				m = nil
			}
			o := beginObject(nil)
			e, ok := tt.ev.Kind.Info()
			if !ok {
				t.Fatalf("%v has no row", tt.ev.Kind)
			}
			o.string("kind", e.Name) // the sequencer writes it (with ts and seq) before the fields
			appendShmEvent(&o, &tt.ev, e, m)
			got := string(o.end())
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

// TestEventKindsCatalogued reads the package's sources for the kinds the
// publisher writes on its own (sequencer.event(at, "…", fill): bus-attached,
// session-takeover …) and fails for one that is no row of the event
// catalogue, so that every event of the product is in the one table.
func TestEventKindsCatalogued(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			val := handWrittenKind(call)
			if val == nil {
				return true
			}
			found++
			name, _ := strconv.Unquote(val.Value)
			if _, ok := contract.EventNamed(name); !ok {
				t.Errorf("%s: the publisher writes events of kind %q, which the event catalogue (package contract) has no row for", f, name)
			}
			return true
		})
	}
	if found < 5 {
		t.Errorf("found %d kinds written by hand; the publisher writes more (bus-attached, bus-detached, bring-up-failed, …)", found)
	}
}

// handWrittenKind returns the literal kind of an event the call writes by
// hand — the sequencer's event(at, "kind", fill), or a JSON field
// o.string("kind", "…") — and nil for any other call.
func handWrittenKind(call *ast.CallExpr) *ast.BasicLit {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	var lit *ast.BasicLit
	switch {
	case sel.Sel.Name == "event" && len(call.Args) == 3:
		lit, _ = call.Args[1].(*ast.BasicLit)
	case sel.Sel.Name == "string" && len(call.Args) == 2:
		if key, ok := call.Args[0].(*ast.BasicLit); ok && key.Value == `"kind"` {
			lit, _ = call.Args[1].(*ast.BasicLit)
		}
	}
	if lit == nil || lit.Kind != token.STRING {
		return nil
	}
	return lit
}

// TestNodeStats checks the Sparkplug statistics metrics of a window: one
// per name, in order, the DC figures last.
func TestNodeStats(t *testing.T) {
	r := cyclestats.Report{Target: 1_000_000}
	r.Windows[cyclestats.QuantityJobDuration] = stats.Summary{Count: 1000, Mean: 100_000, Max: 400_000}
	r.Windows[cyclestats.QuantityDCTimeDifference] = stats.Summary{Count: 250, P99: 95}
	r.Windows[cyclestats.QuantityDCControllerError] = stats.Summary{Count: 1000, P99: 3_200}
	for c, n := range map[cyclestats.Counter]int64{cyclestats.CounterCycles: 1000, cyclestats.CounterOverruns: 2,
		cyclestats.CounterLateAnswers: 3, cyclestats.CounterAcyclicCycles: 40, cyclestats.CounterAcyclicOverruns: 1,
		cyclestats.CounterYieldLate: 5, cyclestats.CounterRingDrops: 6} {
		r.Counts[c] = n
	}
	got := nodeStats(nil, nodeStatMetrics(), &r)
	names := nodeStatNames()
	if len(got) != len(names) {
		t.Fatalf("%d metrics, %d names", len(got), len(names))
	}
	for i, m := range got {
		if m.Name != names[i] {
			t.Errorf("metric %d named %q, want %q", i, m.Name, names[i])
		}
	}
	want := map[string]any{
		"Stats/cycles": uint64(1000), "Stats/overruns": uint64(2), "Stats/cpu_load_mean": 0.1, "Stats/cpu_load_max": 0.4,
		"Stats/dc_difference_p99_ns": uint64(95), "Stats/dc_controller_error_p99_ns": uint64(3200),
		"Stats/late_answers": uint64(3), "Stats/acyclic_cycles": uint64(40), "Stats/acyclic_overruns": uint64(1), "Stats/yield_late": uint64(5),
		"Stats/ring_drops": uint64(6),
	}
	seen := 0
	for _, m := range got {
		w, ok := want[m.Name]
		if !ok {
			continue
		}
		seen++
		var v any = m.Int
		if m.DataType == sparkplug.Double {
			v = m.Float
		}
		if v != w {
			t.Errorf("%s = %v, want %v", m.Name, v, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d metrics looked for are there", seen, len(want))
	}
}
