package mqtt

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/ruleparse"
)

func TestModelNamesAndTypes(t *testing.T) {
	m, problems := NewModel(referenceBus(), Rules{Interval: 100 * time.Millisecond})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	var names []string
	for _, d := range m.Devices {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, " "); got != "EK1100-0 EL2004-1 EL2004-2 EL1014-3 EL1014-4 EL4132-5 EK1110-6 EL3204-7" {
		t.Errorf("device names: %s", got)
	}
	tests := []struct {
		dev, sig string
		typ      ValueType
		unit     string
		scale    float64
		bit      int
		output   bool
	}{
		{"EL2004-1", "channel_1.output", TypeBool, "", 1, 0, true},
		{"EL2004-2", "channel_4.output", TypeBool, "", 1, 7, true},
		{"EL1014-4", "channel_1.input", TypeBool, "", 1, 8*5 + 4, false},
		{"EL4132-5", "ao_output_channel_2.analog_output", TypeFloat, "V", 10.0 / 0x7FFF, 24, true},
		{"EL3204-7", "rtd_inputs_channel_1.value", TypeFloat, "°C", 0.1, 8*5 + 8 + 8, false},
		{"EL3204-7", "rtd_inputs_channel_2.limit_1", TypeUint, "", 1, 8*5 + 8 + 24 + 1, false},
		{"EL3204-7", "rtd_inputs_channel_4.underrange", TypeBool, "", 1, 8*5 + 8 + 72, false},
	}
	for _, tt := range tests {
		d := m.Device(tt.dev)
		if d == nil {
			t.Fatalf("no device %s", tt.dev)
		}
		s := d.Signal(tt.sig)
		if s == nil {
			t.Errorf("%s has no signal %s; it has %s", tt.dev, tt.sig, d.signalNames())
			continue
		}
		if s.Type != tt.typ || s.Unit != tt.unit || s.Scale != tt.scale || s.bit != tt.bit || s.Output != tt.output {
			t.Errorf("%s/%s = type %v unit %q scale %v bit %d output %v; want %v %q %v %d %v", tt.dev, tt.sig,
				s.Type, s.Unit, s.Scale, s.bit, s.Output, tt.typ, tt.unit, tt.scale, tt.bit, tt.output)
		}
	}
	if n := len(m.Device("EK1100-0").Signals); n != 0 {
		t.Errorf("the coupler has %d signals", n)
	}
	// Aliases are unique across the node.
	seen := map[uint64]bool{}
	for _, d := range m.Devices {
		for _, s := range d.Signals {
			if s.Alias == 0 || seen[s.Alias] {
				t.Errorf("alias %d of %s/%s is zero or repeated", s.Alias, d.Name, s.Name)
			}
			seen[s.Alias] = true
		}
	}
}

func mustRules(t *testing.T, slaves, signals, writes []string) Rules {
	t.Helper()
	r := Rules{Interval: 100 * time.Millisecond}
	for _, s := range slaves {
		x, err := ruleparse.ParseSlaveRule(s)
		if err != nil {
			t.Fatal(err)
		}
		r.Slaves = append(r.Slaves, x)
	}
	for _, s := range signals {
		x, err := ruleparse.ParseSignalRule(s)
		if err != nil {
			t.Fatal(err)
		}
		r.Signals = append(r.Signals, x)
	}
	for _, s := range writes {
		x, err := ruleparse.ParseWriteRule(s)
		if err != nil {
			t.Fatal(err)
		}
		r.Writes = append(r.Writes, x)
	}
	return r
}

func TestModelRules(t *testing.T) {
	rules := mustRules(t,
		[]string{"1 name=valves interval=1s onchange=true", "EL1014-3 name=buttons"},
		[]string{
			"valves/channel_1.output name=pump",
			"EL3204-7/rtd_inputs_channel_1.value name=oven unit=K scale=0.1 offset=273.15 deadband=0.5",
			"3/channel_2.input type=uint",
			"EL4132-5/ao_output_channel_1.analog_output name=setpoint",
		},
		[]string{"valves/*", "EL4132-5/setpoint -5..5", "EL4132-5/ao_output_channel_2.analog_output"})
	m, problems := NewModel(referenceBus(), rules)
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	valves := m.Device("valves")
	if valves == nil || valves.Interval != time.Second || !valves.OnChange || valves.DefaultName != "EL2004-1" {
		t.Fatalf("slave rule not applied: %+v", valves)
	}
	if m.Device("buttons") == nil {
		t.Error("slave rule by default name not applied")
	}
	pump := valves.Signal("pump")
	if pump == nil || !pump.Writable || pump.Min != 0 || pump.Max != 1 {
		t.Errorf("pump: %+v", pump)
	}
	for _, name := range []string{"channel_2.output", "channel_4.output"} {
		if s := valves.Signal(name); s == nil || !s.Writable {
			t.Errorf("the wildcard did not allow %s", name)
		}
	}
	oven := m.Device("EL3204-7").Signal("oven")
	if oven == nil || oven.Unit != "K" || oven.Offset != 273.15 || oven.Deadband != 0.5 || oven.Writable {
		t.Fatalf("oven: %+v", oven)
	}
	if got := oven.Float(uint64(uint16(250))); math.Abs(got-298.15) > 1e-9 {
		t.Errorf("oven at raw 250 = %v K, want 298.15", got)
	}
	if s := m.Device("buttons").Signal("channel_2.input"); s.Type != TypeUint || string(s.AppendJSON(nil, 1)) != "1" {
		t.Errorf("a 1-bit signal made uint: type %v, JSON %s", s.Type, s.AppendJSON(nil, 1))
	}
	sp := m.Device("EL4132-5").Signal("setpoint")
	if sp == nil || !sp.Writable || sp.Min != -5 || sp.Max != 5 {
		t.Errorf("setpoint: %+v", sp)
	}
	ch2 := m.Device("EL4132-5").Signal("ao_output_channel_2.analog_output")
	if lo, hi := ch2.Min, ch2.Max; math.Abs(lo+10*32768.0/32767) > 1e-9 || math.Abs(hi-10) > 1e-9 {
		t.Errorf("an unranged analog output is bounded by its raw range: %v..%v", lo, hi)
	}
}

func TestModelProblems(t *testing.T) {
	rules := mustRules(t,
		[]string{"42 name=x", "2 name=EL2004-1"},
		[]string{"EL2004-1/nope unit=V", "nobody/x unit=V", "EL2004-1/channel_1.output scale=2"},
		[]string{"EL1014-3/channel_1.input", "EL2004-9/*"})
	m, problems := NewModel(referenceBus(), rules)
	want := []string{
		`mqtt.slaves: no slave "42"`,
		`two slaves named "EL2004-1"`,
		`has no signal "nope"`,
		`mqtt.signals: no slave "nobody"`,
		`a bool cannot be scaled`,
		`slave EL1014-3 has no output "channel_1.input"`,
		`mqtt.writes.allow: no slave "EL2004-9"`,
	}
	if len(problems) != len(want) {
		t.Fatalf("problems = %v", problems)
	}
	for i, w := range want {
		if !strings.Contains(problems[i].Error(), w) {
			t.Errorf("problem %d = %q, want it to mention %q", i, problems[i], w)
		}
	}
	if m.Device("EL2004-2") == nil {
		t.Error("a clashing rename must keep the default name")
	}
	if m.Device("EL1014-3").Signal("channel_1.input").Writable {
		t.Error("an input became writable")
	}
}

func TestModelDedupesAndFallsBack(t *testing.T) {
	bus := Bus{OutputBytes: 2, InputBytes: 2, Slaves: []Slave{
		{Position: 0, OrderCode: "AKD", OutputBits: 16, InputBits: 12, Entries: []Entry{
			{Output: true, PDOName: "Outputs", Name: "Controlword", DataType: 6, Bits: 8},
			{Output: true, PDOName: "Outputs", Name: "Controlword", DataType: 6, Bits: 8, Offset: 8},
		}},
		{Position: 1, OrderCode: "X/Y Z", InputBits: 12, InputOffset: 0},
	}}
	m, problems := NewModel(bus, Rules{Interval: time.Second})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	akd := m.Devices[0]
	if akd.Signals[0].Name != "outputs.controlword" || akd.Signals[1].Name != "outputs.controlword_2" {
		t.Errorf("duplicate names: %s", akd.signalNames())
	}
	other := m.Devices[1]
	if other.Name != "X_Y_Z-1" {
		t.Errorf("an order code with '/' and spaces: name %q", other.Name)
	}
	if got := other.signalNames(); got != "input_byte_0, input_byte_1" || other.Signals[1].Bits != 4 {
		t.Errorf("byte fallback: %s (bits of the last %d)", got, other.Signals[1].Bits)
	}
}

func TestNormalize(t *testing.T) {
	tests := map[string]string{
		"Channel 1":            "channel_1",
		"AO Output Channel 1":  "ao_output_channel_1",
		"1st set-point":        "1st_set_point",
		"  --Weird__ Näme!! ":  "weird_n_me",
		"AIN.VALUE":            "ain_value",
		"":                     "",
		"µ":                    "",
		"Latch 1 pn":           "latch_1_pn",
		"Limit 1":              "limit_1",
		"TxPDO Toggle":         "txpdo_toggle",
		"Following error 2.0%": "following_error_2_0",
	}
	for in, want := range tests {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestModelRuleByObject names signals by their PDO entry's object, as a
// configuration written from an ENI does (its PDO names need not be the
// SII's): 0xINDEX:SUB in hex; an object no entry maps is a problem.
func TestModelRuleByObject(t *testing.T) {
	rules := mustRules(t, []string{"5 name=Term_6_(EL4132)"},
		[]string{"5/0x7000:01 name=AO_Outputs_Channel_1.Analog_output type=int", "3/0x6010:01 name=Channel_2.Input", "3/0x6099:01 name=nothing"}, nil)
	m, problems := NewModel(referenceBus(), rules)
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), `no signal "0x6099:01"`) {
		t.Errorf("problems %v, want the unmapped object's", problems)
	}
	if s := m.Device("Term_6_(EL4132)").Signal("AO_Outputs_Channel_1.Analog_output"); s == nil || s.Entry.Index != 0x7000 || s.Type != TypeInt {
		t.Errorf("EL4132 channel 1 by object: %+v", s)
	}
	if s := m.Device("EL1014-3").Signal("Channel_2.Input"); s == nil || s.Entry.Index != 0x6010 {
		t.Errorf("EL1014 channel 2 by object: %+v", s)
	}
}
