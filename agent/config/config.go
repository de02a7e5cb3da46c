package config

import (
	"os"
	"strings"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// Config is the agent's whole configuration. The koanf tags are the key names;
// the help tags are the text shown by --help and written as comments by
// [Config.YAML]. Key names must not contain underscores (see the package doc).
type Config struct {
	// Site, Line and Host label everything the agent exports (fleet view).
	Site string `koanf:"site" help:"fleet label: the site (plant) this host belongs to; a Prometheus label and an MQTT topic level"`
	Line string `koanf:"line" help:"fleet label: the production line or cell within the site"`
	Host string `koanf:"host" help:"fleet label: this host's name (default: the operating system's host name)"`
	// Bus is the EtherCAT segment; the cycle process reads it (but
	// bus.devices).
	Bus contract.Bus `koanf:"bus" help:"the EtherCAT segment"`
	// Cycle is the real-time cycle; the cycle process reads it (but
	// cycle.program).
	Cycle contract.Cycle `koanf:"cycle" help:"the real-time cycle"`
	// Status is the periodic status line.
	Status Status `koanf:"status" help:"the status line printed by ecagent run"`
	// Metrics is the Prometheus endpoint.
	Metrics Metrics `koanf:"metrics" help:"the Prometheus endpoint and cycle statistics"`
	// Log is the agent's own log, and the cycle process's.
	Log contract.Log `koanf:"log" help:"the agent's own log"`
	// MQTT is the process-data publisher (see mqtt.go).
	MQTT MQTT `koanf:"mqtt" help:"process data, statistics and events to an MQTT broker (JSON or Sparkplug B)"`
	// OTLP is the OpenTelemetry metrics export.
	OTLP OTLP `koanf:"otlp" help:"OpenTelemetry metrics export over OTLP; off unless an endpoint is set here or in OTEL_EXPORTER_OTLP_ENDPOINT"`
	// Drives are the CiA 402 servo drives the cycle runs. A list of
	// mappings: only the YAML file can set it.
	Drives []contract.Drive `koanf:"drives" help:"CiA 402 servo drives the cycle brings to operation enabled and gives a target (YAML file only): slave, mode, target, faultreset, settlecycles"`
}

// Status configures the one-line status that `ecagent run` prints.
type Status struct {
	// Interval is how often the status line is printed; 0 disables it.
	Interval time.Duration `koanf:"interval" help:"how often ecagent run prints its one-line status; 0 disables it"`
}

// Metrics configures the Prometheus endpoint and the statistics window.
type Metrics struct {
	// Listen is the host:port of the /metrics endpoint; "" disables it.
	Listen string `koanf:"listen" help:"address (host:port) of the Prometheus /metrics endpoint; empty disables it"`
	// WebConfig is the path of a Prometheus exporter-toolkit web
	// configuration file (TLS, basic auth); "" serves plain HTTP.
	WebConfig string `koanf:"webconfig" help:"Prometheus exporter-toolkit web configuration file (TLS, basic auth); empty serves plain HTTP"`
	// Window is the length of the window over which exact cycle statistics
	// are computed.
	Window time.Duration `koanf:"window" help:"window over which exact cycle statistics (percentiles, maximum) are computed"`
	// Detail is standard (a fleet's series budget: state sets show their
	// current value, error counters appear once non-zero) or full.
	Detail string `koanf:"detail" help:"series per scrape: standard (state sets show their current value, error counters appear once non-zero) or full (every value, zeros included)"`
}

// OTLP configures the OpenTelemetry metrics export. Empty values defer to
// the standard OTEL_EXPORTER_OTLP_* environment variables.
type OTLP struct {
	// Endpoint is the collector's base URL; "" uses
	// OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT, and without either the export
	// is off.
	Endpoint string `koanf:"endpoint" help:"collector base URL, e.g. http://collector:4318 (http/protobuf) or http://collector:4317 (grpc); https:// uses TLS; empty uses OTEL_EXPORTER_OTLP_ENDPOINT, and without either the export is off"`
	// Protocol is grpc or http/protobuf; "" uses
	// OTEL_EXPORTER_OTLP_[METRICS_]PROTOCOL, else http/protobuf.
	Protocol string `koanf:"protocol" help:"grpc or http/protobuf; empty uses OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf"`
	// Interval is the export interval; 0 uses OTEL_METRIC_EXPORT_INTERVAL,
	// else 10s.
	Interval time.Duration `koanf:"interval" help:"how often to export; 0 uses OTEL_METRIC_EXPORT_INTERVAL, else 10s"`
	// Timeout bounds one export; 0 uses OTEL_EXPORTER_OTLP_TIMEOUT, else
	// 10s.
	Timeout time.Duration `koanf:"timeout" help:"how long one export may take; 0 uses OTEL_EXPORTER_OTLP_TIMEOUT, else 10s"`
	// Headers are "name=value" pairs sent with every export; empty uses
	// OTEL_EXPORTER_OTLP_HEADERS.
	Headers []string `koanf:"headers" help:"headers sent with every export, as name=value (authentication, tenant); empty uses OTEL_EXPORTER_OTLP_HEADERS"`
}

// HeaderMap returns Headers as a map, nil when there are none (so that
// OTEL_EXPORTER_OTLP_HEADERS applies). Validate has checked their shape.
func (o OTLP) HeaderMap() map[string]string {
	if len(o.Headers) == 0 {
		return nil
	}
	m := make(map[string]string, len(o.Headers))
	for _, h := range o.Headers {
		name, value, _ := strings.Cut(h, "=")
		m[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return m
}

// Bounds of the agent's own keys enforced by [Config.Validate]; those of
// the keys the cycle process reads are package contract's.
const (
	MinStatus       = 100 * time.Millisecond // shortest non-zero status.interval
	MaxStatus       = time.Hour              // longest status.interval
	MinWindow       = time.Second            // shortest metrics.window
	MaxWindow       = time.Hour              // longest metrics.window
	MinOTLPInterval = time.Second            // shortest non-zero otlp.interval
	MaxOTLPInterval = time.Hour              // longest otlp.interval
	MinOTLPTimeout  = 100 * time.Millisecond // shortest non-zero otlp.timeout
	MaxOTLPTimeout  = time.Minute            // longest otlp.timeout
)

// DefaultMetricsListen is the default metrics.listen. Prometheus's register
// of default exporter ports (9100–9999) is fully allocated, so no port there
// is free of every other exporter; 9781 collides with nothing that runs beside
// ecagent on an edge host (Prometheus 9090, node_exporter 9100, MQTT 1883 and
// 8883, OTLP 4317/4318). Change it where it does collide.
const DefaultMetricsListen = ":9781"

// ReferenceDevices returns the default simulated segment: the acontis
// reference set, in bus order.
func ReferenceDevices() []string {
	return []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}
}

// Default returns the built-in configuration: a simulated reference segment
// cycling at 1 ms. Host is the operating system's host name ("localhost" if
// that cannot be read).
func Default() Config {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	def := contract.Default()
	def.Bus.Devices = ReferenceDevices()
	return Config{
		Site:    "default",
		Line:    "default",
		Host:    host,
		Bus:     def.Bus,
		Cycle:   def.Cycle,
		Status:  Status{Interval: 5 * time.Second},
		Metrics: Metrics{Listen: DefaultMetricsListen, Window: 10 * time.Second, Detail: "standard"},
		Log:     def.Log,
		MQTT:    defaultMQTT(),
	}
}

// Simulated reports whether the agent runs the built-in simulated segment
// (bus.interface is empty).
func (c Config) Simulated() bool { return c.Bus.Simulated() }

// IsSIIImage reports whether a bus.devices entry names an SII EEPROM image
// file (it ends in .bin, in any case) rather than a device model.
func IsSIIImage(device string) bool {
	return strings.HasSuffix(strings.ToLower(device), ".bin")
}

// simulatedFrameTimeout is the least bus.timeout for the built-in
// simulated segment. It is a process on the same host whose answers wait
// for the scheduler: without real-time priority (a container without an
// RT budget) on a loaded host an answer took longer than 4 tries of the
// default 10 ms, and bring-up failed. The cyclic exchange does not use
// this timeout.
const simulatedFrameTimeout = 100 * time.Millisecond

// CycleConfig is the part of c the cycle process reads (bus.*, cycle.*,
// log.*, drives): the same types, the keys only the agent reads left out
// of its JSON. The built-in simulated segment's bus.timeout is raised to
// simulatedFrameTimeout.
func (c Config) CycleConfig() contract.Config {
	cc := contract.Config{Bus: c.Bus, Cycle: c.Cycle, Log: c.Log, Drives: c.Drives}
	if c.Simulated() && time.Duration(cc.Bus.Timeout) < simulatedFrameTimeout {
		cc.Bus.Timeout = contract.Duration(simulatedFrameTimeout)
	}
	return cc
}
