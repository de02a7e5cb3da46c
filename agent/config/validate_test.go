package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
)

func TestDefault(t *testing.T) {
	t.Parallel()
	c := Default()
	if err := c.ValidateWithModels(testModels); err != nil {
		t.Fatalf("defaults are invalid: %v", err)
	}
	tests := []struct {
		key  string
		got  any
		want any
	}{
		{"bus.interface", c.Bus.Interface, ""},
		{"bus.devices", strings.Join(c.Bus.Devices, ","), "EK1100,EL2004,EL2004,EL1014,EL1014,EL4132,EK1110"},
		{"bus.expectedslaves", c.Bus.ExpectedSlaves, 0},
		{"bus.timeout", c.Bus.Timeout, contract.Duration(10 * time.Millisecond)},
		{"bus.statetimeout", c.Bus.StateTimeout, contract.Duration(5 * time.Second)},
		{"cycle.period", c.Cycle.Period, contract.Duration(time.Millisecond)},
		{"cycle.core", c.Cycle.Core, -1},
		{"cycle.priority", c.Cycle.Priority, 80},
		{"cycle.busywait", c.Cycle.BusyWait, contract.Duration(0)},
		{"cycle.lockmemory", c.Cycle.LockMemory, true},
		{"status.interval", c.Status.Interval, 5 * time.Second},
		{"metrics.listen", c.Metrics.Listen, ":9781"},
		{"metrics.webconfig", c.Metrics.WebConfig, ""},
		{"metrics.window", c.Metrics.Window, 10 * time.Second},
		{"log.level", c.Log.Level, "info"},
		{"log.format", c.Log.Format, "text"},
		{"simulated", c.Simulated(), true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("default %s = %v, want %v", tt.key, tt.got, tt.want)
		}
	}
	if c.Host == "" {
		t.Error("default host is empty")
	}
	// Default must hand out a fresh device list every time.
	c.Bus.Devices[0] = "changed"
	if Default().Bus.Devices[0] != "EK1100" {
		t.Error("Default shares its device list between calls")
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(*Config)
		wantKey string // "" means valid
	}{
		{"shortest period", func(c *Config) { c.Cycle.Period = contract.Duration(50 * time.Microsecond) }, ""},
		{"longest period", func(c *Config) { c.Cycle.Period = contract.Duration(time.Second) }, ""},
		{"period too short", func(c *Config) { c.Cycle.Period = contract.Duration(49 * time.Microsecond) }, "cycle.period"},
		{"period too long", func(c *Config) { c.Cycle.Period = contract.Duration(time.Second + 1) }, "cycle.period"},
		{"priority 0 keeps the normal scheduler", func(c *Config) { c.Cycle.Priority = 0 }, ""},
		{"priority 99", func(c *Config) { c.Cycle.Priority = 99 }, ""},
		{"priority 100", func(c *Config) { c.Cycle.Priority = 100 }, "cycle.priority"},
		{"priority -1", func(c *Config) { c.Cycle.Priority = -1 }, "cycle.priority"},
		{"core 0", func(c *Config) { c.Cycle.Core = 0 }, ""},
		{"core -2", func(c *Config) { c.Cycle.Core = -2 }, "cycle.core"},
		{"core 4096", func(c *Config) { c.Cycle.Core = 4096 }, "cycle.core"},
		{"busy wait just under the period", func(c *Config) { c.Cycle.BusyWait = c.Cycle.Period - 1 }, ""},
		{"busy wait equal to the period", func(c *Config) { c.Cycle.BusyWait = c.Cycle.Period }, "cycle.busywait"},
		{"negative busy wait", func(c *Config) { c.Cycle.BusyWait = -1 }, "cycle.busywait"},
		{"status disabled", func(c *Config) { c.Status.Interval = 0 }, ""},
		{"status too often", func(c *Config) { c.Status.Interval = 10 * time.Millisecond }, "status.interval"},
		{"negative status interval", func(c *Config) { c.Status.Interval = -time.Second }, "status.interval"},
		{"bus timeout zero", func(c *Config) { c.Bus.Timeout = 0 }, "bus.timeout"},
		{"state timeout too long", func(c *Config) { c.Bus.StateTimeout = contract.Duration(time.Hour) }, "bus.statetimeout"},
		{"negative expected slaves", func(c *Config) { c.Bus.ExpectedSlaves = -1 }, "bus.expectedslaves"},
		{"too many expected slaves", func(c *Config) { c.Bus.ExpectedSlaves = 70000 }, "bus.expectedslaves"},
		{"interface", func(c *Config) { c.Bus.Interface = "enp3s0f1" }, ""},
		{"interface with a slash", func(c *Config) { c.Bus.Interface = "a/b" }, "bus.interface"},
		{"interface too long", func(c *Config) { c.Bus.Interface = "abcdefghijklmnop" }, "bus.interface"},
		{"no devices on the simulated segment", func(c *Config) { c.Bus.Devices = nil }, "bus.devices"},
		{"no devices with a real interface", func(c *Config) { c.Bus.Interface = "eth1"; c.Bus.Devices = nil }, ""},
		{"device with a space", func(c *Config) { c.Bus.Devices = []string{"EK 1100"} }, "bus.devices[0]"},
		{"SII image path", func(c *Config) { c.Bus.Devices = []string{"EK1100", "dumps/EL2828.BIN"} }, ""},
		{"listen on loopback", func(c *Config) { c.Metrics.Listen = "127.0.0.1:9781" }, ""},
		{"listen on IPv6", func(c *Config) { c.Metrics.Listen = "[::1]:9781" }, ""},
		{"listen on a random port", func(c *Config) { c.Metrics.Listen = ":0" }, ""},
		{"metrics disabled", func(c *Config) { c.Metrics.Listen = "" }, ""},
		{"listen without a port", func(c *Config) { c.Metrics.Listen = "localhost" }, "metrics.listen"},
		{"listen on a named port", func(c *Config) { c.Metrics.Listen = ":http" }, "metrics.listen"},
		{"listen on port 70000", func(c *Config) { c.Metrics.Listen = ":70000" }, "metrics.listen"},
		{"window too short", func(c *Config) { c.Metrics.Window = 500 * time.Millisecond }, "metrics.window"},
		{"empty site", func(c *Config) { c.Site = "" }, "site"},
		{"line with a wildcard", func(c *Config) { c.Line = "l+1" }, "line"},
		{"host with a space", func(c *Config) { c.Host = "edge 1" }, "host"},
		{"level in capitals", func(c *Config) { c.Log.Level = "INFO" }, "log.level"},
		{"unknown format", func(c *Config) { c.Log.Format = "logfmt" }, "log.format"},
		{"otlp over http", func(c *Config) {
			c.OTLP = OTLP{Endpoint: "https://collector:4318", Protocol: "http/protobuf", Interval: time.Second, Timeout: time.Minute,
				Headers: []string{"authorization=Bearer x=y", "x-tenant = plant-1"}}
		}, ""},
		{"otlp over grpc", func(c *Config) { c.OTLP.Endpoint, c.OTLP.Protocol = "http://10.0.0.5:4317", "grpc" }, ""},
		{"otlp endpoint without a scheme", func(c *Config) { c.OTLP.Endpoint = "collector:4317" }, "otlp.endpoint"},
		{"otlp endpoint with another scheme", func(c *Config) { c.OTLP.Endpoint = "grpc://collector:4317" }, "otlp.endpoint"},
		{"otlp protocol http/json", func(c *Config) { c.OTLP.Protocol = "http/json" }, "otlp.protocol"},
		{"otlp interval too short", func(c *Config) { c.OTLP.Interval = 100 * time.Millisecond }, "otlp.interval"},
		{"otlp timeout too long", func(c *Config) { c.OTLP.Timeout = time.Hour }, "otlp.timeout"},
		{"otlp header without a value", func(c *Config) { c.OTLP.Headers = []string{"x-tenant"} }, "otlp.headers[0]"},
		{"otlp header with a colon", func(c *Config) { c.OTLP.Headers = []string{"a=b", "x-tenant: a=b"} }, "otlp.headers[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tt.change(&c)
			err := c.Validate()
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
			if fe.Key != tt.wantKey {
				t.Errorf("error key = %q, want %q (%v)", fe.Key, tt.wantKey, err)
			}
			if fe.Problem == "" {
				t.Errorf("error %v says nothing about what is allowed", err)
			}
		})
	}
}

func TestValidateErrorText(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Cycle.Period = contract.Duration(10 * time.Microsecond)
	err := c.Validate()
	const want = `config: cycle.period = "10us": must be between 50us and 1s`
	if err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %s", err, want)
	}
}

func TestValidateWithModels(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Bus.Devices = []string{"EK1100", "EL9999", "el1014", "x.bin"}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate checks models it was not given: %v", err)
	}
	err := c.ValidateWithModels(testModels)
	if err == nil {
		t.Fatal("ValidateWithModels accepted EL9999")
	}
	for _, want := range []string{
		`bus.devices[1] = "EL9999": unknown model; must be one of EK1100, EK1110, EL1014, EL2004, EL4132, a path to an SII image ending in .bin or an ESI device, FILE.xml[:DEVICE][@REVISION]`,
		`bus.devices[2] = "el1014": unknown model; did you mean "EL1014"?`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "x.bin") {
		t.Errorf("an SII image path was checked against the models: %v", err)
	}
}

func TestParseCPUList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"0", []int{0}, false},
		{"0-3\n", []int{0, 1, 2, 3}, false},
		{"0-1,4,6-7", []int{0, 1, 4, 6, 7}, false},
		{"", nil, false},
		{"a", nil, true},
		{"3-1", nil, true},
		{"-1", nil, true},
	}
	for _, tt := range tests {
		set, err := parseCPUList(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseCPUList(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if len(set.cpus) != len(tt.want) {
			t.Errorf("parseCPUList(%q) = %v, want %v", tt.in, set.cpus, tt.want)
		}
		for _, cpu := range tt.want {
			if !set.contains(cpu) {
				t.Errorf("parseCPUList(%q) lacks %d", tt.in, cpu)
			}
		}
	}
}

func TestHostCPUsIncludesCPU0(t *testing.T) {
	t.Parallel()
	set := hostCPUs()
	if !set.contains(0) || set.text == "" {
		t.Errorf("hostCPUs() = %+v, want at least CPU 0 and a text", set)
	}
}

func TestIsSIIImage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"EK1100", false}, {"ek1100.bin", true}, {"/var/lib/x.BIN", true}, {"x.bin.txt", false}, {"bin", false},
	}
	for _, tt := range tests {
		if got := IsSIIImage(tt.in); got != tt.want {
			t.Errorf("IsSIIImage(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestOTLPHeaderMap(t *testing.T) {
	t.Parallel()
	if m := (OTLP{}).HeaderMap(); m != nil {
		t.Errorf("no headers give %v, want nil (OTEL_EXPORTER_OTLP_HEADERS applies)", m)
	}
	m := OTLP{Headers: []string{"authorization=Bearer a=b", " x-tenant = plant-1 "}}.HeaderMap()
	if len(m) != 2 || m["authorization"] != "Bearer a=b" || m["x-tenant"] != "plant-1" {
		t.Errorf("HeaderMap = %v", m)
	}
}
