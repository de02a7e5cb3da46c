package mqtt

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/cyclestats/stats"
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
			name: "a note keeps its text",
			ev:   event(shm.EventNote, 0, 0, "hello"),
			want: `{"kind":"note","cycle":42,"slave":0,"slave_name":"EK1100-0","text":"hello"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := model
			if tt.name == "error reset, no bus model" {
				m = nil
			}
			o := beginObject(nil)
			appendShmEvent(&o, &tt.ev, m)
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

// TestEmergencyMeaning checks exact codes, narrow and wide classes, and
// codes outside every class.
func TestEmergencyMeaning(t *testing.T) {
	tests := []struct {
		code uint16
		want string
	}{
		{0x0000, "error reset or no error"},
		{0x0010, "error reset or no error"},
		{0x1000, "generic error"},
		{0x2310, "continuous over current (device output side)"},
		{0x2311, "current, device output side"},
		{0x2100, "current, device input side"},
		{0x2400, "current"},
		{0x3220, "DC link under-voltage"},
		{0x3110, "mains voltage"},
		{0x4310, "temperature"},
		{0x5001, "device hardware"},
		{0x6320, "parameter error"},
		{0x6100, "internal software"},
		{0x7305, "incremental sensor 1 fault"},
		{0x7001, "additional modules"},
		{0x8110, "CAN overrun (objects lost)"},
		{0x8181, "communication"},
		{0x8250, "protocol error"},
		{0x8611, "following error"},
		{0x8620, "monitoring"},
		{0x8700, "sync controller error"},
		{0x9000, "external error"},
		{0xA000, "transition from PREOP to SAFEOP failed"},
		{0xA001, "transition from SAFEOP to OP failed"},
		{0xA002, "unknown class 0xA0"},
		{0xF001, "additional functions"},
		{0xFF01, "device specific"},
		{0xB123, "unknown class 0xB1"},
	}
	for _, tt := range tests {
		if got := EmergencyMeaning(tt.code); got != tt.want {
			t.Errorf("EmergencyMeaning(%#04x) = %q, want %q", tt.code, got, tt.want)
		}
	}
	// No exact code is listed twice.
	seen := map[uint16]bool{}
	for _, c := range emergencyCodes() {
		if seen[c.code] {
			t.Errorf("%#04x listed twice", c.code)
		}
		seen[c.code] = true
	}
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
