package contract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte(`{}`))
	if err != nil || !reflect.DeepEqual(c, Default()) {
		t.Errorf("an empty object: %+v, %v; want the defaults", c, err)
	}
}

// TestConfigRoundTrip: what the agent writes (json.Marshal of a Config)
// reads back the same, nil PDO lists (keep the slave's assignment) apart
// from empty ones (assign none); the keys only the agent reads stay out.
func TestConfigRoundTrip(t *testing.T) {
	c := Default()
	c.Bus.Interface = "eth1"
	c.Bus.ExpectedSlaves = 3
	c.Bus.DC = DC{Enabled: true, Sync0Shift: Duration(100 * time.Microsecond), Sync1: Duration(200 * time.Microsecond),
		DriftFrames: 0, StartDelay: Duration(50 * time.Millisecond)}
	c.Bus.PDO = []SlavePDOs{
		{Slave: 1, RxPDOs: []PDO{{Index: 0x1600, Entries: []PDOEntry{{Index: 0x6040, SubIndex: 0, Bits: 16}, {Bits: 8}}}}},
		{Slave: 2, RxPDOs: []PDO{}, TxPDOs: []PDO{{Index: 0x1A00}}},
	}
	c.Cycle = Cycle{Period: Duration(250 * time.Microsecond), Core: 3, Priority: 90, BusyWait: Duration(20 * time.Microsecond), Exchange: ExchangeWait,
		SHM: "/run/ecagent/ecagent.shm"}
	c.Log = Log{Level: "debug", Format: "json"}
	c.Drives = []Drive{
		{Slave: 1, Mode: "csv", Target: Target{Kind: "sine", Offset: 10, Amplitude: 1000, Period: Duration(2 * time.Second)}, FaultReset: "auto", SettleCycles: 5},
		{Slave: 2, Mode: "csp", Target: Target{Kind: "ramp", From: -5, To: 5000, Duration: Duration(time.Second)}, FaultReset: "manual"},
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("read back\n%+v\nwrote\n%+v\n%s", got, c, b)
	}
	if got.Bus.PDO[0].TxPDOs != nil || got.Bus.PDO[1].RxPDOs == nil {
		t.Errorf("nil and empty PDO lists not kept apart: %+v", got.Bus.PDO)
	}
	for _, want := range []string{`"period": "250us"`, `"entries": [
              "0x6040:00/16",`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("not written as text: %s\n%s", want, b)
		}
	}
	c.Bus.Devices, c.Cycle.Program = []string{"EK1100"}, "/opt/ecagent-cycle"
	if b, _ := json.Marshal(c); strings.Contains(string(b), "EK1100") || strings.Contains(string(b), "/opt") {
		t.Errorf("the agent's own keys reach the cycle process: %s", b)
	}
}

// TestConfigErrors: every problem is reported, with the key as the
// agent's configuration names it, the value and what is allowed.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       []string
	}{
		{"period", `{"cycle":{"period":"10us"}}`, []string{`cycle.period = "10us": must be between 50us and 1s`}},
		{"several", `{"cycle":{"priority":120,"shm":"rel.shm"},"log":{"level":"loud"}}`, []string{
			`cycle.priority = "120": must be between 1 and 99`, `cycle.shm = "rel.shm": must be an absolute file path`,
			`log.level = "loud": must be debug, info, warn or error`}},
		{"busywait", `{"cycle":{"busywait":"2ms"}}`, []string{`cycle.busywait = "2ms": must be at least 0 and less than cycle.period (1ms)`}},
		{"recvspin", `{"cycle":{"recvspin":"2s"}}`, []string{`cycle.recvspin = "2s": must be between 0 (no spinning) and 1s`}},
		{"core", `{"cycle":{"core":-2}}`, []string{`cycle.core = "-2": must be -1 (no pinning) or a CPU number`}},
		{"exchange", `{"cycle":{"exchange":"fast"}}`, []string{`cycle.exchange = "fast": must be "pipelined" or "wait"`}},
		{"not a duration", `{"bus":{"timeout":"10"}}`, []string{`"10" is not a duration`, `"1ms"`}},
		{"a number for a duration", `{"bus":{"timeout":10}}`, []string{`bus.timeout = "a JSON number": must be a duration string`}},
		{"wrong type", `{"bus":{"expectedslaves":"7"}}`, []string{`bus.expectedslaves = "a JSON string": must be an integer`}},
		{"an object for an entry", `{"bus":{"pdo":[{"slave":1,"rxpdos":[{"index":5632,"entries":[{"index":24640}]}]}]}}`,
			[]string{`bus.pdo.rxpdos.entries = "a JSON object": must be a PDO entry string such as "0x6040:00/16"`}},
		{"unknown key", `{"cycle":{"perod":"1ms"}}`, []string{`unknown field "perod"`}},
		{"an agent's key", `{"cycle":{"program":"x"}}`, []string{`unknown field "program"`}},
		{"two values", `{} {}`, []string{"more than one JSON value"}},
		{"syntax", `{"cycle":`, []string{"unexpected EOF"}},
		{"interface", `{"bus":{"interface":"eth0:1"}}`, []string{`bus.interface = "eth0:1": must be empty`}},
		{"bus", `{"bus":{"expectedslaves":-1,"statetimeout":"1h","alarmcycles":-1}}`, []string{
			`bus.expectedslaves = "-1": must be between 0 (accept what is found) and 65535`,
			`bus.statetimeout = "1h": must be between 100ms and 5m`,
			`bus.alarmcycles = "-1": must be between 0 (no alarm) and 1000000`}},
		{"dc", `{"bus":{"dc":{"sync0shift":"1ms","sync1":"-1ms","driftframes":-1,"startdelay":"5s"}}}`, []string{
			`bus.dc.sync0shift = "1ms": must be at least 0 and less than cycle.period (1ms)`,
			`bus.dc.sync1 = "-1ms": must be 0 (SYNC1 off) or an offset after SYNC0 less than cycle.period (1ms)`,
			`bus.dc.driftframes = "-1": must be between 0 and 1000000`,
			`bus.dc.startdelay = "5s": must be between 1ms and 2s`}},
		{"pdo", `{"bus":{"pdo":[{"slave":1,"rxpdos":[{"index":6656,"entries":["0x6040:00/16"]},{"index":5632},{"index":5632}]},{"slave":1},{"slave":70000}]}}`, []string{
			`bus.pdo[0].rxpdos[0].index = "0x1A00": must be an RxPDO mapping object, 0x1600..0x17FF`,
			`bus.pdo[0].rxpdos[2].index = "0x1600": is already assigned by bus.pdo[0].rxpdos[1]`,
			`bus.pdo[1].slave = "1": slave 1 is already configured by bus.pdo[0]`,
			`bus.pdo[2].slave = "70000": must be a ring position between 0 and 65534`}},
		{"entry bits", `{"bus":{"pdo":[{"slave":1,"rxpdos":[{"index":5632,"entries":["0x6040:00/65"]}]}]}}`, []string{"65 bits: an entry has 1..64 bits"}},
		{"expected slaves", `{"bus":{"expectedslaves":2},"drives":[{"slave":2,"mode":"csp","target":{"kind":"constant"},"faultreset":"auto"}]}`, []string{
			`drives[0].slave = "2": no such slave: bus.expectedslaves is 2, so ring positions are 0..1`}},
		{"drives", `{"drives":[{"slave":1,"mode":"pos","target":{"kind":"sine","period":"1ms"},"faultreset":"never","settlecycles":-1},
			{"slave":2,"mode":"cst","target":{"kind":"constant","value":40000},"faultreset":"auto"},
			{"slave":3,"mode":"csv","target":{"kind":"jump"},"faultreset":"auto"},
			{"slave":3,"mode":"csv","target":{"kind":"ramp","to":1,"period":"1s"},"faultreset":"auto"}]}`, []string{
			`drives[0].mode = "pos": must be csp, csv or cst`, `drives[0].faultreset = "never": must be manual or auto`,
			`drives[0].settlecycles = "-1": must be between 0 and 1000000`,
			`drives[0].target.period = "1ms": a sine needs a period of at least two cycle periods (2ms)`,
			`drives[0].target.amplitude = "0": a sine needs an amplitude other than 0`,
			`drives[1].target.value = "40000": must be between -32768 and 32767 (the cst target 0x6071 is 16 bits)`,
			`drives[2].target.kind = "jump": must be constant, ramp or sine`,
			`drives[3].slave = "3": slave 3 is already configured by drives[2]`,
			`drives[3].target.period = "1s": a ramp target does not use period; it uses from, to and duration`,
			`drives[3].target.duration = "0s": a ramp needs a duration of more than 0`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.json))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestSimulatedDevicesBoundSlaves: on the simulated segment a slave
// beyond bus.devices is refused; the cycle process, which never sees
// bus.devices, takes it.
func TestSimulatedDevicesBoundSlaves(t *testing.T) {
	c := Default()
	c.Bus.Devices = []string{"EK1100", "EL2004"}
	c.Drives = []Drive{{Slave: 2, Mode: "csp", Target: Target{Kind: "constant"}, FaultReset: "auto"}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "the simulated segment (bus.devices) has 2 devices") {
		t.Errorf("slave 2 of 2 devices: %v", err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(b); err != nil {
		t.Errorf("the cycle process's view: %v", err)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.cycle.json")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"cycle":{"period":"2s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+`: cycle.period = "2s"`) {
		t.Errorf("invalid file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"cycle":{"period":"2ms"},"bus":{"interface":"eth1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil || c.Cycle.Period != Duration(2*time.Millisecond) || c.Bus.Interface != "eth1" || c.Cycle.Priority != 80 {
		t.Errorf("valid file: %+v, %v", c, err)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 250 * time.Microsecond: "250us", 10 * time.Millisecond: "10ms", 90 * time.Second: "90s",
		5 * time.Minute: "5m", 2 * time.Hour: "2h", -time.Millisecond: "-1ms", 1500 * time.Nanosecond: "1500ns",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		var back Duration
		if err := back.UnmarshalText([]byte(want)); err != nil || time.Duration(back) != d {
			t.Errorf("%q reads back as %v, %v", want, back, err)
		}
	}
}

func TestParsePDOEntry(t *testing.T) {
	for text, want := range map[string]PDOEntry{
		"0x6040:00/16": {0x6040, 0, 16}, "60FF:0/32": {0x60FF, 0, 32}, " 0X1A00:1f/1 ": {0x1A00, 0x1F, 1}, "0x0000:00/8": {0, 0, 8},
	} {
		if got, err := ParsePDOEntry(text); err != nil || got != want {
			t.Errorf("ParsePDOEntry(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
	for _, bad := range []string{"", "0x6040", "0x6040:00", "6040/16", "0x6040:100/8", "0x16040:00/8", "0x6040:00/0", "0x6040:00/x", "0x:00/8"} {
		if _, err := ParsePDOEntry(bad); err == nil {
			t.Errorf("ParsePDOEntry(%q) took it", bad)
		}
	}
}

func TestValidInterfaceName(t *testing.T) {
	for name, want := range map[string]bool{
		"eth0": true, "enp3s0f1": true, "veth-ec.1": true, "abcdefghijklmno": true,
		"": false, ".": false, "..": false, "abcdefghijklmnop": false, "eth 0": false,
		"eth/0": false, "eth:0": false, "eth\x00": false,
	} {
		if got := ValidInterfaceName(name); got != want {
			t.Errorf("ValidInterfaceName(%q) = %v, want %v", name, got, want)
		}
	}
}
