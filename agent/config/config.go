package config

import (
	"log/slog"
	"os"
	"strings"
	"time"
)

// Config is the agent's whole configuration. The koanf tags are the key names;
// the help tags are the text shown by --help and written as comments by
// [Config.YAML]. Key names must not contain underscores (see the package doc).
type Config struct {
	// Site, Line and Host label everything the agent exports (fleet view).
	Site string `koanf:"site" help:"fleet label: the site (plant) this host belongs to; a Prometheus label and an MQTT topic level"`
	Line string `koanf:"line" help:"fleet label: the production line or cell within the site"`
	Host string `koanf:"host" help:"fleet label: this host's name (default: the operating system's host name)"`
	// Bus is the EtherCAT segment.
	Bus Bus `koanf:"bus" help:"the EtherCAT segment"`
	// Cycle is the real-time cycle.
	Cycle Cycle `koanf:"cycle" help:"the real-time cycle"`
	// Status is the periodic status line.
	Status Status `koanf:"status" help:"the status line printed by ecagent run"`
	// Metrics is the Prometheus endpoint.
	Metrics Metrics `koanf:"metrics" help:"the Prometheus endpoint and cycle statistics"`
	// Log is the agent's own log.
	Log Log `koanf:"log" help:"the agent's own log"`
	// MQTT is the process-data publisher (see mqtt.go).
	MQTT MQTT `koanf:"mqtt" help:"process data, statistics and events to an MQTT broker (JSON or Sparkplug B)"`
	// OTLP is the OpenTelemetry metrics export.
	OTLP OTLP `koanf:"otlp" help:"OpenTelemetry metrics export over OTLP; off unless an endpoint is set here or in OTEL_EXPORTER_OTLP_ENDPOINT"`
	// Drives are the CiA 402 servo drives the cycle runs (see drives.go).
	// A list of mappings: only the YAML file can set it.
	Drives []Drive `koanf:"drives" help:"CiA 402 servo drives the cycle brings to operation enabled and gives a target (YAML file only): slave, mode, target, faultreset, settlecycles"`
}

// Bus configures the EtherCAT segment the master drives.
type Bus struct {
	// Interface is the network interface of the segment; "" selects the
	// built-in simulated segment made of Devices.
	Interface string `koanf:"interface" help:"network interface of the EtherCAT segment, e.g. eth1; empty runs the built-in simulated segment (in a process of its own)"`
	// Devices lists the simulated segment's devices in bus order: model names,
	// paths of SII EEPROM images ending in .bin (see [IsSIIImage]) or
	// devices of ESI files, FILE.xml[:DEVICE][@REVISION] (see
	// [IsESIDevice]). Only used, and only checked, when Interface is "".
	Devices []string `koanf:"devices" help:"devices of the simulated segment in bus order: model names, paths of SII EEPROM images (*.bin) or devices of ESI files (FILE.xml[:DEVICE][@REVISION]); used only when bus.interface is empty"`
	// ESI lists directories (or files) of ESI device descriptions whose
	// PDO entry names, units and data types the agent gives the process
	// data of the devices found on the bus.
	ESI []string `koanf:"esi" help:"directories or files of ESI device descriptions (ETG.2000 XML, e.g. TwinCAT's ESI folder): PDO entry names, units and data types for MQTT, metrics and the toolbox, for any device found whose identity they describe"`
	// ExpectedSlaves is the number of slaves the segment must have; 0 accepts
	// whatever is found.
	ExpectedSlaves int `koanf:"expectedslaves" help:"number of slaves the segment must have; 0 accepts what is found"`
	// Timeout bounds the wait for a non-cyclic frame (scan, configuration,
	// mailbox). It is not tied to the cycle period: slow links and slaves that
	// answer late during bring-up need more than one period.
	Timeout time.Duration `koanf:"timeout" help:"how long to wait for a non-cyclic frame (scan, configuration, mailbox) to come back"`
	// StateTimeout bounds one EtherCAT state transition (INIT, PREOP, SAFEOP,
	// OP).
	StateTimeout time.Duration `koanf:"statetimeout" help:"how long one state transition (INIT, PREOP, SAFEOP, OP) may take"`
	// AlarmCycles raises the bus alarm after this many consecutive cycles
	// with a lost frame or a wrong working counter (and clears it after as
	// many clean ones); 0 disables the alarm.
	AlarmCycles int `koanf:"alarmcycles" help:"consecutive cycles with a lost frame or a wrong working counter that raise the bus alarm (event, metric, /readyz not ready); as many clean cycles clear it; 0 disables; 0..1000000"`
	// DC configures distributed clocks (see drives.go).
	DC DC `koanf:"dc" help:"distributed clocks: SYNC0/SYNC1 in every slave that supports them, locked to the cycle"`
	// PDO remaps and reassigns PDOs of chosen slaves before SAFEOP (see
	// drives.go). A list of mappings: only the YAML file can set it.
	PDO []SlavePDOs `koanf:"pdo" help:"PDO assignment and mapping per slave, written in PREOP (YAML file only): slave, rxpdos, txpdos"`
}

// Cycle configures the real-time cycle and the host resources it asks for.
type Cycle struct {
	// Period is the cycle period.
	Period time.Duration `koanf:"period" help:"cycle period, 50us..1s"`
	// Core is the CPU the cycle thread is pinned to; -1 leaves it unpinned.
	// The built-in simulated segment keeps off it.
	Core int `koanf:"core" help:"CPU to pin the cycle thread to (the built-in simulated segment keeps off it); -1 leaves it unpinned"`
	// Priority is the SCHED_FIFO priority (1..99); 0 keeps the normal
	// scheduler.
	Priority int `koanf:"priority" help:"SCHED_FIFO priority of the cycle thread, 1..99; 0 keeps the normal scheduler"`
	// BusyWait is the tail before each deadline that the cycle thread spins
	// instead of sleeping; 0 disables spinning.
	BusyWait time.Duration `koanf:"busywait" help:"spin this long before each deadline instead of sleeping (lower wake-up latency, burns the core); less than cycle.period; 0 disables"`
	// RecvSpin is how long the cycle thread reads its frames' answers
	// without waiting before it blocks for them.
	RecvSpin time.Duration `koanf:"recvspin" help:"read the frames' answers without waiting this long before blocking (no context switch when they come back within it; burns the core meanwhile); at most half of cycle.period is used; 0..1s, 0 disables"`
	// Exchange is how a cycle meets its frames: "pipelined" collects the
	// answers to the frames the previous cycle sent and sends its own
	// without waiting; "wait" sends and waits for the answers.
	Exchange string `koanf:"exchange" help:"pipelined: collect the answers to the previous cycle's frames, send without waiting (one context switch a cycle; inputs one period old, as IgH and TwinCAT); wait: send, then wait for the answers"`
	// LockMemory asks the cycle process to lock its memory so the cycle
	// never takes a page fault (cycle/rt Options.LockMemory).
	LockMemory bool `koanf:"lockmemory" help:"lock the cycle process's memory so the cycle never waits for a page fault: the pages touched at start, and those touched later when CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK allows it"`
	// SHM is the shared-memory file through which the cycle process and
	// the agent process exchange samples, the process image, commands and
	// events. A restarted agent finds a running cycle there.
	SHM string `koanf:"shm" help:"shared-memory file between the cycle process and the agent (an absolute path, normally under /dev/shm); one per agent instance"`
	// Program is the cycle program the agent starts (cmd/ecagent-cycle):
	// a path, or a name looked up in $PATH; "" is ecagent-cycle in the
	// directory of the running ecagent, else in $PATH.
	Program string `koanf:"program" help:"the cycle program the agent starts: a path, or a name looked up in $PATH; empty: ecagent-cycle in the directory of the ecagent executable, else in $PATH"`
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

// Log configures the agent's own log output.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `koanf:"level" help:"log level: debug, info, warn or error"`
	// Format is text or json.
	Format string `koanf:"format" help:"log format: text or json"`
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

// Bounds enforced by [Config.Validate].
const (
	MinPeriod       = 50 * time.Microsecond  // shortest cycle.period
	MaxPeriod       = time.Second            // longest cycle.period
	MaxPriority     = 99                     // highest cycle.priority (SCHED_FIFO)
	MinBusTimeout   = 50 * time.Microsecond  // shortest bus.timeout
	MaxBusTimeout   = 10 * time.Second       // longest bus.timeout
	MinStateTimeout = 100 * time.Millisecond // shortest bus.statetimeout
	MaxStateTimeout = 5 * time.Minute        // longest bus.statetimeout
	MinStatus       = 100 * time.Millisecond // shortest non-zero status.interval
	MaxStatus       = time.Hour              // longest status.interval
	MinWindow       = time.Second            // shortest metrics.window
	MaxWindow       = time.Hour              // longest metrics.window
	MaxSlaves       = 65535                  // largest bus.expectedslaves
	// DefaultAlarmCycles is bus.alarmcycles when not set: 10 bad cycles in
	// a row are a persistent fault, a single lost frame is not.
	DefaultAlarmCycles = 10
	MaxAlarmCycles     = 1_000_000
	MinOTLPInterval    = time.Second            // shortest non-zero otlp.interval
	MaxOTLPInterval    = time.Hour              // longest otlp.interval
	MinOTLPTimeout     = 100 * time.Millisecond // shortest non-zero otlp.timeout
	MaxOTLPTimeout     = time.Minute            // longest otlp.timeout
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
	return Config{
		Site: "default",
		Line: "default",
		Host: host,
		Bus: Bus{
			Devices: ReferenceDevices(),
			// Bring-up frames cross slow links and wait on slaves that are
			// still booting: one cycle period would be far too short.
			Timeout:      10 * time.Millisecond,
			StateTimeout: 5 * time.Second,
			AlarmCycles:  DefaultAlarmCycles,
			DC:           defaultDC(),
		},
		Cycle: Cycle{
			Period:     time.Millisecond,
			Core:       -1,
			Priority:   80,
			RecvSpin:   DefaultRecvSpin,
			Exchange:   ExchangePipelined,
			LockMemory: true,
			SHM:        DefaultSHM,
		},
		Status:  Status{Interval: 5 * time.Second},
		Metrics: Metrics{Listen: DefaultMetricsListen, Window: 10 * time.Second, Detail: "standard"},
		Log:     Log{Level: "info", Format: "text"},
		MQTT:    defaultMQTT(),
	}
}

// The values of cycle.exchange.
const (
	ExchangePipelined = "pipelined"
	ExchangeWait      = "wait"
)

// DefaultRecvSpin is the default cycle.recvspin: long enough for the
// answers of a small segment (a 1 ms cycle over a veth or socket pair:
// 2.55 → 1.39 context switches per cycle at the same CPU, docs/performance.md).
const DefaultRecvSpin = 100 * time.Microsecond

// DefaultSHM is the default cycle.shm: tmpfs, so the segment never touches
// a disk, in a directory of the agent's own (the systemd unit's
// RuntimeDirectory, the Helm chart's volume), where no other user can make
// names: the maintenance commands find the agent there without being told.
// The agent creates the directory when it is missing (DefaultSHMDir).
const DefaultSHM = "/run/ecagent/ecagent.shm"

// DefaultSHMDir is the directory of DefaultSHM, which the agent creates
// (mode 0750) when it is missing.
const DefaultSHMDir = "/run/ecagent"

// Simulated reports whether the agent runs the built-in simulated segment
// (bus.interface is empty).
func (c Config) Simulated() bool { return c.Bus.Interface == "" }

// IsSIIImage reports whether a bus.devices entry names an SII EEPROM image
// file (it ends in .bin, in any case) rather than a device model.
func IsSIIImage(device string) bool {
	return strings.HasSuffix(strings.ToLower(device), ".bin")
}

// SlogLevel returns log.level as a slog level; an unknown level gives
// slog.LevelInfo.
func (l Log) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
