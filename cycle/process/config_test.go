package process

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
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
// from empty ones (assign none).
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
	if !strings.Contains(string(b), `"period": "250µs"`) {
		t.Errorf("durations are not written as text:\n%s", b)
	}
	mc := MasterConfig(got, quiet)
	if mc.DC == nil || mc.DC.DriftFrames != -1 || mc.DC.Sync0 != 250*time.Microsecond || len(mc.PDO) != 2 ||
		mc.PDO[0].TxPDOs != nil || mc.PDO[1].RxPDOs == nil || mc.PDO[0].RxPDOs[0].Entries[0] != (master.PDOEntryConfig{Index: 0x6040, Bits: 16}) {
		t.Errorf("master configuration %+v", mc)
	}
}

// TestConfigErrors: every problem is reported, with the key as the
// agent's configuration names it, the value and what is allowed.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       []string
	}{
		{"period", `{"cycle":{"period":"10us"}}`, []string{`cycle.period = 10µs: must be between 50µs and 1s`}},
		{"several", `{"cycle":{"priority":120,"shm":"rel.shm"},"log":{"level":"loud"}}`, []string{
			"cycle.priority = 120: must be between 1 and 99", `cycle.shm = "rel.shm": must be an absolute file path`,
			`log.level = "loud": must be debug, info, warn or error`}},
		{"busywait", `{"cycle":{"busywait":"2ms"}}`, []string{"cycle.busywait = 2ms: must be at least 0 and less than cycle.period (1ms)"}},
		{"not a duration", `{"bus":{"timeout":"10"}}`, []string{`"10" is not a duration`, `"1ms"`}},
		{"a number for a duration", `{"bus":{"timeout":10}}`, []string{"bus.timeout = a JSON number: must be a duration string"}},
		{"wrong type", `{"bus":{"expectedslaves":"7"}}`, []string{"bus.expectedslaves = a JSON string: must be an integer"}},
		{"unknown key", `{"cycle":{"perod":"1ms"}}`, []string{`unknown field "perod"`}},
		{"two values", `{} {}`, []string{"more than one JSON value"}},
		{"syntax", `{"cycle":`, []string{"unexpected EOF"}},
		{"interface", `{"bus":{"interface":"eth0:1"}}`, []string{`bus.interface = "eth0:1": must be empty`}},
		{"link", `{"bus":{"link":"dpdk"}}`, []string{`bus.link = "dpdk": must be one of auto, raw, mmap, xdp`}},
		{"dc", `{"bus":{"dc":{"sync0shift":"1ms","startdelay":"5s"}}}`, []string{
			"bus.dc.sync0shift = 1ms: must be at least 0 and less than cycle.period (1ms)", "bus.dc.startdelay = 5s: must be between 1ms and 2s"}},
		{"pdo", `{"bus":{"pdo":[{"slave":1,"rxpdos":[{"index":6656,"entries":[{"index":24640,"bits":0}]}]},{"slave":1}]}}`, []string{
			"bus.pdo[0].rxpdos[0].index = 0x1A00: must be a mapping object 0x1600..0x17FF",
			"bus.pdo[0].rxpdos[0].entries[0].bits = 0: an entry has 1..64 bits",
			"bus.pdo[1].slave = 1: slave 1 is already configured by bus.pdo[0]"}},
		{"drives", `{"drives":[{"slave":1,"mode":"pos","target":{"kind":"sine","period":"1ms"},"faultreset":"never"},
			{"slave":2,"mode":"cst","target":{"kind":"constant","value":40000},"faultreset":"auto"},
			{"slave":3,"mode":"csv","target":{"kind":"jump"},"faultreset":"auto"}]}`, []string{
			`drives[0].mode = "pos": must be csp, csv or cst`, `drives[0].faultreset = "never": must be manual or auto`,
			"drives[0].target.period = 1ms: a sine needs a period of at least two cycle periods (2ms)",
			"drives[0].target.amplitude = 0: a sine needs an amplitude other than 0",
			"drives[1].target.value = 40000: must be between -32768 and 32767",
			`drives[2].target.kind = "jump": must be constant, ramp or sine`}},
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

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.cycle.json")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"cycle":{"period":"2s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+": cycle.period = 2s") {
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

func TestDriveConfig(t *testing.T) {
	for _, d := range []Drive{
		{Mode: "csp", Target: Target{Kind: "constant", Value: 100}, FaultReset: "manual"},
		{Mode: "csv", Target: Target{Kind: "ramp", From: 0, To: 10, Duration: Duration(time.Second)}, FaultReset: "auto"},
		{Mode: "cst", Target: Target{Kind: "sine", Amplitude: 5, Period: Duration(time.Second)}, FaultReset: "manual"},
	} {
		if _, err := driveConfig(d); err != nil {
			t.Errorf("%+v: %v", d, err)
		}
	}
	if _, err := driveConfig(Drive{Mode: "csp", Target: Target{Kind: "step"}}); err == nil {
		t.Error("an unknown target kind translated")
	}
}
