package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// withMotion returns a valid configuration with one drive of each mode
// and a PDO assignment, on a simulated segment of four slaves.
func withMotion() Config {
	c := Default()
	c.Bus.Devices = []string{"EK1100", "AKD", "AKD", "AKD"}
	c.Bus.DC.Enabled = true
	c.Bus.PDO = []contract.SlavePDOs{{Slave: 1,
		RxPDOs: []contract.PDO{{Index: 0x1601, Entries: []contract.PDOEntry{{Index: 0x6040, Bits: 16}, {Index: 0x60FF, Bits: 32}}}},
		TxPDOs: []contract.PDO{{Index: 0x1A01}},
	}}
	c.Drives = []contract.Drive{
		{Slave: 1, Mode: "csv", FaultReset: "manual", Target: contract.Target{Kind: "sine", Amplitude: 1000, Period: contract.Duration(time.Second)}},
		{Slave: 2, Mode: "cst", FaultReset: "auto", SettleCycles: 8, Target: contract.Target{Kind: "ramp", From: -10, To: 100, Duration: contract.Duration(time.Second)}},
		{Slave: 3, Mode: "csp", FaultReset: "manual", Target: contract.Target{Kind: "constant", Value: 5000}},
	}
	return c
}

func TestValidateMotion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(*Config)
		wantKey string // "" means valid
		want    string // the problem, exactly
	}{
		{"valid", func(c *Config) {}, "", ""},
		{"sync0 shift just under the period", func(c *Config) { c.Bus.DC.Sync0Shift = c.Cycle.Period - 1 }, "", ""},
		{"sync0 shift equal to the period", func(c *Config) { c.Bus.DC.Sync0Shift = contract.Duration(time.Millisecond) }, "bus.dc.sync0shift",
			"must be at least 0 and less than cycle.period (1ms)"},
		{"negative sync0 shift", func(c *Config) { c.Bus.DC.Sync0Shift = contract.Duration(-time.Microsecond) }, "bus.dc.sync0shift",
			"must be at least 0 and less than cycle.period (1ms)"},
		{"sync1 beyond the period", func(c *Config) {
			c.Cycle.Period = contract.Duration(125 * time.Microsecond)
			c.Bus.DC.Sync1 = contract.Duration(200 * time.Microsecond)
		},
			"bus.dc.sync1", "must be 0 (SYNC1 off) or an offset after SYNC0 less than cycle.period (125us)"},
		{"no drift frames", func(c *Config) { c.Bus.DC.DriftFrames = 0 }, "", ""},
		{"too many drift frames", func(c *Config) { c.Bus.DC.DriftFrames = 1_000_001 }, "bus.dc.driftframes",
			"must be between 0 and 1000000"},
		{"start delay too long for 32-bit clocks", func(c *Config) { c.Bus.DC.StartDelay = contract.Duration(3 * time.Second) }, "bus.dc.startdelay",
			"must be between 1ms and 2s"},
		{"drive beyond the simulated segment", func(c *Config) { c.Drives[0].Slave = 4 }, "drives[0].slave",
			"no such slave: the simulated segment (bus.devices) has 4 devices, at ring positions 0..3"},
		{"drive beyond the expected slaves", func(c *Config) { c.Bus.Interface = "eth1"; c.Bus.ExpectedSlaves = 2; c.Drives[1].Slave = 2 },
			"drives[1].slave", "no such slave: bus.expectedslaves is 2, so ring positions are 0..1"},
		{"any slave on a real bus", func(c *Config) { c.Bus.Interface = "eth1"; c.Drives[0].Slave = 100 }, "", ""},
		{"negative slave", func(c *Config) { c.Drives[2].Slave = -1 }, "drives[2].slave", "must be a ring position between 0 and 65534"},
		{"two drives on one slave", func(c *Config) { c.Drives[2].Slave = 1 }, "drives[2].slave",
			"slave 1 is already configured by drives[0]"},
		{"unknown mode", func(c *Config) { c.Drives[0].Mode = "pp" }, "drives[0].mode", "must be csp, csv or cst"},
		{"unknown fault reset", func(c *Config) { c.Drives[0].FaultReset = "" }, "drives[0].faultreset", "must be manual or auto"},
		{"negative settle cycles", func(c *Config) { c.Drives[1].SettleCycles = -1 }, "drives[1].settlecycles", "must be between 0 and 1000000"},
		{"unknown target kind", func(c *Config) { c.Drives[0].Target.Kind = "square" }, "drives[0].target.kind", "must be constant, ramp or sine"},
		{"sine without a period", func(c *Config) { c.Drives[0].Target.Period = 0 }, "drives[0].target.period",
			"a sine needs a period of at least two cycle periods (2ms)"},
		{"sine at two cycles", func(c *Config) { c.Drives[0].Target.Period = contract.Duration(2 * time.Millisecond) }, "", ""},
		{"sine without an amplitude", func(c *Config) { c.Drives[0].Target.Amplitude = 0 }, "drives[0].target.amplitude",
			"a sine needs an amplitude other than 0 (use kind constant for a fixed target)"},
		{"sine with a value", func(c *Config) { c.Drives[0].Target.Value = 3 }, "drives[0].target.value",
			"a sine target does not use value; it uses offset, amplitude and period"},
		{"ramp with a period", func(c *Config) { c.Drives[1].Target.Period = contract.Duration(time.Second) }, "drives[1].target.period",
			"a ramp target does not use period; it uses from, to and duration"},
		{"constant with a from", func(c *Config) { c.Drives[2].Target.From = 1 }, "drives[2].target.from",
			"a constant target does not use from; it uses value"},
		{"ramp without a duration", func(c *Config) { c.Drives[1].Target.Duration = 0 }, "drives[1].target.duration",
			"a ramp needs a duration of more than 0"},
		{"torque beyond 16 bits", func(c *Config) { c.Drives[1].Target.To = 40000 }, "drives[1].target.to",
			"must be between -32768 and 32767 (the cst target 0x6071 is 16 bits)"},
		{"sine leaving 32 bits", func(c *Config) { c.Drives[0].Target.Offset = 2147483000 }, "drives[0].target.amplitude",
			"offset ± amplitude must stay between -2147483648 and 2147483647 (the csv target 0x60FF is 32 bits)"},
		{"position beyond 32 bits", func(c *Config) { c.Drives[2].Target.Value = -3_000_000_000 }, "drives[2].target.value",
			"must be between -2147483648 and 2147483647 (the csp target 0x607A is 32 bits)"},
		{"pdo slave twice", func(c *Config) { c.Bus.PDO = append(c.Bus.PDO, contract.SlavePDOs{Slave: 1}) }, "bus.pdo[1].slave",
			"slave 1 is already configured by bus.pdo[0]"},
		{"a TxPDO as an RxPDO", func(c *Config) { c.Bus.PDO[0].RxPDOs[0].Index = 0x1A00 }, "bus.pdo[0].rxpdos[0].index",
			"must be an RxPDO mapping object, 0x1600..0x17FF"},
		{"an RxPDO as a TxPDO", func(c *Config) { c.Bus.PDO[0].TxPDOs[0].Index = 0x1600 }, "bus.pdo[0].txpdos[0].index",
			"must be a TxPDO mapping object, 0x1A00..0x1BFF"},
		{"a PDO assigned twice", func(c *Config) { c.Bus.PDO[0].TxPDOs = append(c.Bus.PDO[0].TxPDOs, contract.PDO{Index: 0x1A01}) },
			"bus.pdo[0].txpdos[1].index", "is already assigned by bus.pdo[0].txpdos[0]"},
		{"an entry of 0 bits", func(c *Config) { c.Bus.PDO[0].RxPDOs[0].Entries[1].Bits = 0 }, "bus.pdo[0].rxpdos[0].entries[1]",
			"an entry has 1..64 bits"},
		{"too many entries", func(c *Config) { c.Bus.PDO[0].RxPDOs[0].Entries = make([]contract.PDOEntry, 255) }, "bus.pdo[0].rxpdos[0].entries",
			"a PDO maps at most 254 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := withMotion()
			tt.change(&c)
			err := c.ValidateWithModels(deployModels)
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want a *FieldError for %s", err, tt.wantKey)
			}
			if fe.Key != tt.wantKey || fe.Problem != tt.want {
				t.Errorf("error %q: %q\nwant      %q: %q\n(%v)", fe.Key, fe.Problem, tt.wantKey, tt.want, err)
			}
		})
	}
}

func TestLoadMotion(t *testing.T) {
	t.Parallel()
	const file = `bus:
  devices: [EK1100, AKD, AKD]
  dc:
    enabled: true
    sync0shift: 100us
  pdo:
    - slave: 2
      rxpdos:
        - index: 0x1601
          entries: ["0x6040:00/16", "0x6071:00/16"]
      txpdos:
        - {index: "0x1A01", entries: []}
cycle:
  period: 125us
drives:
  - slave: 1
    mode: CSV
    target: {kind: Sine, amplitude: -500, period: 1s}
  - slave: 2
    mode: cst
    faultreset: auto
    settlecycles: 0
    target:
      kind: ramp
      from: 0
      to: 300
      duration: 250ms
`
	r := loadCase{file: file, env: []string{"ECAGENT_BUS_DC_DRIFTFRAMES=0"}, args: []string{"--bus.dc.sync1=50us"}}.loadWith(t, deployModels)
	if r.err != nil {
		t.Fatal(r.err)
	}
	c := r.cfg
	wantDC := contract.DC{Enabled: true, Sync0Shift: contract.Duration(100 * time.Microsecond), Sync1: contract.Duration(50 * time.Microsecond), DriftFrames: 0, StartDelay: contract.Duration(contract.DefaultDCStartDelay)}
	if c.Bus.DC != wantDC {
		t.Errorf("dc = %+v, want %+v", c.Bus.DC, wantDC)
	}
	wantPDO := []contract.SlavePDOs{{Slave: 2,
		RxPDOs: []contract.PDO{{Index: 0x1601, Entries: []contract.PDOEntry{{Index: 0x6040, Bits: 16}, {Index: 0x6071, Bits: 16}}}},
		TxPDOs: []contract.PDO{{Index: 0x1A01}},
	}}
	if !reflect.DeepEqual(c.Bus.PDO, wantPDO) {
		t.Errorf("pdo = %+v, want %+v", c.Bus.PDO, wantPDO)
	}
	wantDrives := []contract.Drive{
		{Slave: 1, Mode: "csv", FaultReset: "manual", SettleCycles: contract.DefaultSettleCycles,
			Target: contract.Target{Kind: "sine", Amplitude: -500, Period: contract.Duration(time.Second)}},
		{Slave: 2, Mode: "cst", FaultReset: "auto", SettleCycles: 0,
			Target: contract.Target{Kind: "ramp", To: 300, Duration: contract.Duration(250 * time.Millisecond)}},
	}
	if !reflect.DeepEqual(c.Drives, wantDrives) {
		t.Errorf("drives = %+v\nwant %+v", c.Drives, wantDrives)
	}
}

func TestLoadMotionErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   loadCase
		want []string // each must be a line of the error; "$FILE" is the YAML path
	}{
		{"sine without a period names the nearest line", loadCase{file: "drives:\n  - slave: 1\n    mode: csv\n    target:\n      kind: sine\n      amplitude: 5\n"},
			[]string{`config: drives[0].target.period = "0s" ($FILE:4): a sine needs a period of at least two cycle periods (2ms)`}},
		{"unknown key in an item", loadCase{file: "drives:\n  - slave: 1\n    mode: csv\n    targt: {kind: constant}\n"},
			[]string{`config: unknown key "drives[0].targt" ($FILE:4); did you mean "drives[0].target"?`,
				`config: drives[0].target.kind = "" ($FILE:2): must be constant, ramp or sine`}},
		{"bad values in items", loadCase{file: "drives:\n  - slave: one\n    mode: pp\n    settlecycles: 1.5\n    target:\n      kind: ramp\n      to: 5\n      duration: 5\n      period: 1s\n"},
			[]string{`config: drives[0].slave = "one" ($FILE:2): must be an integer`,
				`config: drives[0].mode = "pp" ($FILE:3): must be csp, csv or cst`,
				`config: drives[0].settlecycles = "1.5" ($FILE:4): must be an integer`,
				`config: drives[0].target.duration = "5" ($FILE:8): must be a duration with a unit, e.g. "1ms", "250us" or "5s" (a bare number has no unit)`,
				`config: drives[0].target.period = "1s" ($FILE:9): a ramp target does not use period; it uses from, to and duration`}},
		{"an item that is not a mapping", loadCase{file: "drives:\n  - 1\n"},
			[]string{`config: drives[0] = "1" ($FILE:2): must be a mapping of slave, mode, target, faultreset, settlecycles`}},
		{"a mapping where the list belongs", loadCase{file: "drives:\n  slave: 1\n"},
			[]string{`config: drives = "{…}" ($FILE:2): must be a list of mappings (YAML file only), not a mapping`}},
		{"a list of mappings from the environment", loadCase{env: []string{"ECAGENT_DRIVES=1:csv"}},
			[]string{`config: drives = "1:csv" (ECAGENT_DRIVES): must be a list of mappings; only the YAML file can set it (not the environment or a flag)`}},
		{"bad PDO entries and indexes", loadCase{file: "bus:\n  pdo:\n    - slave: 1\n      rxpdos:\n        - index: 0x1A00\n          entries:\n            - 0x6040:00/16\n            - 0x60FF/32\n            - 7\n      txpdos:\n        - index: 0x10000\n"},
			[]string{`config: bus.pdo[0].rxpdos[0].entries[1] = "0x60FF/32" ($FILE:8): must be INDEX:SUB/BITS with a hex index and sub-index and 1..64 bits, e.g. "0x6040:00/16"`,
				`config: bus.pdo[0].rxpdos[0].entries[2] = "7" ($FILE:9): must be a string`,
				`config: bus.pdo[0].txpdos[0].index = "65536" ($FILE:11): must be an integer between 0 and 0xFFFF, e.g. 0x1600`,
				`config: bus.pdo[0].rxpdos[0].index = "0x1A00" ($FILE:5): must be an RxPDO mapping object, 0x1600..0x17FF`}},
		{"a drive on a slave the segment lacks", loadCase{file: "bus:\n  devices: [EK1100, AKD]\ndrives:\n  - slave: 2\n    mode: csv\n    target: {kind: constant, value: 0}\n"},
			[]string{`config: drives[0].slave = "2" ($FILE:4): no such slave: the simulated segment (bus.devices) has 2 devices, at ring positions 0..1`}},
		{"sync0 shift from the environment", loadCase{env: []string{"ECAGENT_BUS_DC_SYNC0SHIFT=2ms"}},
			[]string{`config: bus.dc.sync0shift = "2ms" (ECAGENT_BUS_DC_SYNC0SHIFT): must be at least 0 and less than cycle.period (1ms)`}},
		{"misspelt DC key", loadCase{file: "bus:\n  dc:\n    sync0shfit: 10us\n"},
			[]string{`config: unknown key "bus.dc.sync0shfit" ($FILE:3); did you mean "bus.dc.sync0shift"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.in.loadWith(t, deployModels)
			if r.err == nil {
				t.Fatalf("Load succeeded, want an error; got %+v", r.cfg)
			}
			lines := strings.Split(r.err.Error(), "\n")
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "$FILE", r.path)
				found := false
				for _, l := range lines {
					found = found || l == w
				}
				if !found {
					t.Errorf("error lacks the line\n%s\ngot:\n%s", w, r.err)
				}
			}
			if len(lines) != len(tt.want) {
				t.Errorf("%d problems, want %d:\n%s", len(lines), len(tt.want), r.err)
			}
		})
	}
}

func TestYAMLRoundTripMotion(t *testing.T) {
	t.Parallel()
	c := withMotion()
	c.Bus.DC = contract.DC{Enabled: true, Sync0Shift: contract.Duration(20 * time.Microsecond), Sync1: contract.Duration(30 * time.Microsecond), DriftFrames: 7, StartDelay: contract.Duration(time.Second)}
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- index: 0x1601", "entries: ['0x6040:00/16', '0x60FF:00/32']", "kind: ramp", "duration: 1s"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("printed config lacks %q:\n%s", want, out)
		}
	}
	// Only the fields of each target's kind are printed.
	if strings.Count(string(out), "period: 1s") != 1 || strings.Contains(string(out), "value: 0") {
		t.Errorf("printed targets carry other kinds' fields:\n%s", out)
	}
	r := loadCase{file: string(out)}.loadWith(t, deployModels)
	if r.err != nil {
		t.Fatalf("printed config does not load: %v\n%s", r.err, out)
	}
	if back := emptyListsNil(r.cfg); !reflect.DeepEqual(back, emptyListsNil(c)) {
		t.Errorf("round trip changed the config:\n got %+v\nwant %+v", back, emptyListsNil(c))
	}
}
