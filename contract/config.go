package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is what the cycle process runs with: the bus.*, cycle.* and log.*
// keys and the drives of the agent's configuration, under the same names.
// The agent passes it to the cycle process as JSON through a pipe
// (ecagent-cycle --config-fd), never a file; [Read] and [Load] read and
// validate it. Durations are written as text ("1ms", "250us"), PDO entries
// as in the agent's file ("0x6040:00/16").
//
// The types carry three tags: json is the cycle process's name of a key,
// koanf the agent's (agent/config builds its schema, flags, environment
// variables and documentation from these types), help the text shown for
// it. A key only the agent reads (bus.devices, cycle.program) has json:"-".
type Config struct {
	Bus   Bus   `json:"bus"`
	Cycle Cycle `json:"cycle"`
	Log   Log   `json:"log"`
	// Drives are the CiA 402 drives the cycle runs.
	Drives []Drive `json:"drives,omitempty"`
}

// Bus configures the EtherCAT segment the master drives.
type Bus struct {
	// Interface is the network interface of the segment; "" selects the
	// built-in simulated segment made of Devices (the cycle process then
	// needs an inherited link: ecagent-cycle --link-fd).
	Interface string `json:"interface" koanf:"interface" help:"network interface of the EtherCAT segment, e.g. eth1; empty runs the built-in simulated segment (in a process of its own)"`
	// Devices lists the simulated segment's devices in bus order: model
	// names or paths of SII EEPROM images ending in .bin. Only the agent
	// reads it (it starts the simulator), and only when Interface is "".
	Devices []string `json:"-" koanf:"devices" help:"devices of the simulated segment in bus order: model names or paths of SII EEPROM images (*.bin); used only when bus.interface is empty"`
	// ExpectedSlaves is the number of slaves the segment must have; 0
	// accepts whatever is found.
	ExpectedSlaves int `json:"expectedslaves" koanf:"expectedslaves" help:"number of slaves the segment must have; 0 accepts what is found"`
	// Timeout bounds the wait for a non-cyclic frame (scan, configuration,
	// mailbox). It is not tied to the cycle period: slow links and slaves
	// that answer late during bring-up need more than one period.
	Timeout Duration `json:"timeout" koanf:"timeout" help:"how long to wait for a non-cyclic frame (scan, configuration, mailbox) to come back"`
	// StateTimeout bounds one EtherCAT state transition (INIT, PREOP,
	// SAFEOP, OP).
	StateTimeout Duration `json:"statetimeout" koanf:"statetimeout" help:"how long one state transition (INIT, PREOP, SAFEOP, OP) may take"`
	// AlarmCycles raises the bus alarm after this many consecutive cycles
	// with a lost frame or a wrong working counter (and clears it after as
	// many clean ones); 0 disables the alarm.
	AlarmCycles int `json:"alarmcycles" koanf:"alarmcycles" help:"consecutive cycles with a lost frame or a wrong working counter that raise the bus alarm (event, metric, /readyz not ready); as many clean cycles clear it; 0 disables; 0..1000000"`
	// DC configures distributed clocks.
	DC DC `json:"dc" koanf:"dc" help:"distributed clocks: SYNC0/SYNC1 in every slave that supports them, locked to the cycle"`
	// PDO remaps and reassigns PDOs of chosen slaves before SAFEOP. A list
	// of mappings: only the agent's YAML file can set it.
	PDO []SlavePDOs `json:"pdo,omitempty" koanf:"pdo" help:"PDO assignment and mapping per slave, written in PREOP (YAML file only): slave, rxpdos, txpdos"`
}

// Simulated reports whether b is the built-in simulated segment
// (Interface is empty).
func (b Bus) Simulated() bool { return b.Interface == "" }

// DC configures distributed clocks (bus.dc). The master measures the
// propagation delays, picks the first DC-capable slave as the reference
// clock, and steers its own cycle so that its cyclic frame passes the
// reference clock at the start of each DC cycle (one cycle.period long).
// SYNC0 fires Sync0Shift after that instant in every DC slave, and SYNC1,
// if enabled, Sync1 after SYNC0.
type DC struct {
	// Enabled configures distributed clocks at bring-up.
	Enabled bool `json:"enabled" koanf:"enabled" help:"configure distributed clocks: measure propagation delays, pick the first DC slave as reference clock, start SYNC0 in every DC slave"`
	// Sync0Shift is the time from the start of a DC cycle (when the
	// master's frame passes the reference clock) to SYNC0; 0 fires SYNC0
	// as the frame passes.
	Sync0Shift Duration `json:"sync0shift" koanf:"sync0shift" help:"time from the start of each DC cycle (the master steers its cycle so that its frame passes the reference clock then) to SYNC0; at least 0 and less than cycle.period"`
	// Sync1 is the SYNC1 offset after SYNC0; 0 leaves SYNC1 off.
	Sync1 Duration `json:"sync1" koanf:"sync1" help:"SYNC1 fires this long after SYNC0; 0 leaves SYNC1 off; less than cycle.period"`
	// DriftFrames is how many static drift compensation frames (FRMW of
	// the reference clock's system time) are sent before SYNC0 starts; 0
	// sends none (the master's DCConfig.DriftFrames takes -1 for that).
	DriftFrames int `json:"driftframes" koanf:"driftframes" help:"frames that distribute the reference clock's time before SYNC0 starts, so the slaves' clocks converge (static drift compensation); 0 sends none; up to 1000000"`
	// StartDelay is how far in the future the first SYNC0 is placed.
	StartDelay Duration `json:"startdelay" koanf:"startdelay" help:"how far after the configuration the first SYNC0 fires, leaving time to write the start time to every slave; 1ms..2s"`
}

// SlavePDOs is the PDO configuration of one slave (an item of bus.pdo).
type SlavePDOs struct {
	// Slave is the ring position.
	Slave int `json:"slave" koanf:"slave" help:"ring position of the slave, 0 for the first"`
	// RxPDOs are the output PDOs (master to slave), assigned to SM2 in
	// this order; nil keeps the slave's assignment.
	RxPDOs []PDO `json:"rxpdos" koanf:"rxpdos" help:"RxPDOs (outputs) assigned to sync manager 2, in order"`
	// TxPDOs are the input PDOs (slave to master), assigned to SM3 in
	// this order; nil keeps the slave's assignment.
	TxPDOs []PDO `json:"txpdos" koanf:"txpdos" help:"TxPDOs (inputs) assigned to sync manager 3, in order"`
}

// PDO is one PDO: its mapping object and, optionally, its new mapping.
type PDO struct {
	// Index is the PDO's mapping object: 0x1600..0x17FF for an RxPDO,
	// 0x1A00..0x1BFF for a TxPDO.
	Index uint16 `json:"index" koanf:"index" help:"the PDO mapping object, 0x1600..0x17FF (RxPDO) or 0x1A00..0x1BFF (TxPDO)"`
	// Entries is the new mapping; empty assigns the PDO with the mapping
	// the slave has.
	Entries []PDOEntry `json:"entries,omitempty" koanf:"entries" help:"the mapped objects as \"INDEX:SUB/BITS\" in hex, e.g. \"0x6040:00/16\" (\"0x0000:00/8\" is a gap); empty keeps the slave's mapping and only assigns the PDO"`
}

// PDOEntry is one mapped object, written "0x6040:00/16" (in the agent's
// YAML file and in the cycle's JSON alike).
type PDOEntry struct {
	Index    uint16
	SubIndex uint8
	Bits     int
}

// String writes the entry as it is configured: 0x6040:00/16.
func (e PDOEntry) String() string {
	return fmt.Sprintf("0x%04X:%02X/%d", e.Index, e.SubIndex, e.Bits)
}

// MarshalText writes the entry as [PDOEntry.String] does.
func (e PDOEntry) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText parses "INDEX:SUB/BITS": a hex index and sub-index (the
// 0x prefix is optional) and 1 to 64 bits in decimal.
func (e *PDOEntry) UnmarshalText(text []byte) error {
	p, err := ParsePDOEntry(string(text))
	if err != nil {
		return err
	}
	*e = p
	return nil
}

// ParsePDOEntry parses "INDEX:SUB/BITS", e.g. "0x6040:00/16" or
// "60FF:0/32".
func ParsePDOEntry(s string) (PDOEntry, error) {
	const want = `must be INDEX:SUB/BITS with a hex index and sub-index and 1..64 bits, e.g. "0x6040:00/16"`
	obj, bitsText, ok := strings.Cut(strings.TrimSpace(s), "/")
	indexText, subText, ok2 := strings.Cut(obj, ":")
	if !ok || !ok2 {
		return PDOEntry{}, errors.New(want)
	}
	hex := func(t string, size int) (uint64, bool) {
		t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
		v, err := strconv.ParseUint(t, 16, size)
		return v, err == nil && t != ""
	}
	index, okIndex := hex(indexText, 16)
	sub, okSub := hex(subText, 8)
	bits, err := strconv.Atoi(bitsText)
	if !okIndex || !okSub || err != nil {
		return PDOEntry{}, errors.New(want)
	}
	if bits < 1 || bits > 64 {
		return PDOEntry{}, fmt.Errorf("%d bits: an entry has 1..64 bits", bits)
	}
	return PDOEntry{Index: uint16(index), SubIndex: uint8(sub), Bits: bits}, nil
}

// Cycle configures the real-time cycle and the host resources it asks for.
type Cycle struct {
	// Period is the cycle period.
	Period Duration `json:"period" koanf:"period" help:"cycle period, 50us..1s"`
	// Core is the CPU the cycle thread is pinned to; -1 leaves it
	// unpinned. The built-in simulated segment keeps off it.
	Core int `json:"core" koanf:"core" help:"CPU to pin the cycle thread to (the built-in simulated segment keeps off it); -1 leaves it unpinned"`
	// Priority is the SCHED_FIFO priority (1..99); 0 keeps the normal
	// scheduler.
	Priority int `json:"priority" koanf:"priority" help:"SCHED_FIFO priority of the cycle thread, 1..99; 0 keeps the normal scheduler"`
	// BusyWait is the tail before each deadline that the cycle thread
	// spins instead of sleeping; 0 disables spinning.
	BusyWait Duration `json:"busywait" koanf:"busywait" help:"spin this long before each deadline instead of sleeping (lower wake-up latency, burns the core); less than cycle.period; 0 disables"`
	// RecvSpin is how long the cycle thread reads its frames' answers
	// without waiting before it blocks for them; at most half the period
	// is used.
	RecvSpin Duration `json:"recvspin" koanf:"recvspin" help:"read the frames' answers without waiting this long before blocking (no context switch when they come back within it; burns the core meanwhile); at most half of cycle.period is used; 0..1s, 0 disables"`
	// Exchange is how a cycle meets its frames: ExchangePipelined or
	// ExchangeWait.
	Exchange string `json:"exchange" koanf:"exchange" help:"pipelined: collect the answers to the previous cycle's frames, send without waiting (one context switch a cycle; inputs one period old, as IgH and TwinCAT); wait: send, then wait for the answers"`
	// LockMemory asks the cycle process to lock its memory so the cycle
	// never takes a page fault (cycle/rt Options.LockMemory).
	LockMemory bool `json:"lockmemory" koanf:"lockmemory" help:"lock the cycle process's memory so the cycle never waits for a page fault: the pages touched at start, and those touched later when CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK allows it"`
	// SHM is the shared-memory file through which the cycle process and
	// the agent process exchange samples, the process image, commands and
	// events. A restarted agent finds a running cycle there.
	SHM string `json:"shm" koanf:"shm" help:"shared-memory file between the cycle process and the agent (an absolute path, normally under /dev/shm); one per agent instance"`
	// Program is the cycle program the agent starts (cmd/ecagent-cycle):
	// a path, or a name looked up in $PATH; "" is ecagent-cycle in the
	// directory of the running ecagent, else in $PATH, else the ecagent
	// executable itself in its hidden cycle mode. Only the agent reads it.
	Program string `json:"-" koanf:"program" help:"the cycle program the agent starts: a path, or a name looked up in $PATH; empty: ecagent-cycle in the directory of the ecagent executable, else in $PATH"`
}

// The values of cycle.exchange (Cycle.Exchange).
const (
	// ExchangePipelined: each cycle collects the answers to the frames the
	// previous one sent and sends its own without waiting.
	ExchangePipelined = "pipelined"
	// ExchangeWait: each cycle sends its frames and waits for the answers.
	ExchangeWait = "wait"
)

// Log configures a process's log (the agent's on its stderr, the cycle
// process's on its own).
type Log struct {
	// Level is debug, info, warn or error.
	Level string `json:"level" koanf:"level" help:"log level: debug, info, warn or error"`
	// Format is text or json.
	Format string `json:"format" koanf:"format" help:"log format: text or json"`
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

// NewLogger returns the logger l configures, writing to w.
func (l Log) NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: l.SlogLevel()}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Drive is one CiA 402 drive (an item of drives). In the cycle's JSON
// every key of an item must be given: items have no defaults there (the
// agent starts an item from [DefaultDrive]).
type Drive struct {
	// Slave is the drive's ring position (0 is the first slave).
	Slave int `json:"slave" koanf:"slave" help:"ring position of the drive, 0 for the first slave"`
	// Mode is csp, csv or cst (cyclic synchronous position, velocity,
	// torque).
	Mode string `json:"mode" koanf:"mode" help:"csp, csv or cst: cyclic synchronous position, velocity or torque"`
	// Target is what the drive is commanded once operation is enabled.
	Target Target `json:"target" koanf:"target" help:"the target once the drive is enabled, in the mode's units: counts (csp, added to the position at enable), counts/s (csv), per mille of rated torque (cst)"`
	// FaultReset is manual (reset on request only) or auto.
	FaultReset string `json:"faultreset" koanf:"faultreset" help:"manual (reset a fault only on request) or auto (reset every fault, retrying while it persists); default manual"`
	// SettleCycles is how many cycles the target is held after the drive
	// reaches operation enabled.
	SettleCycles int `json:"settlecycles" koanf:"settlecycles" help:"cycles the target is held (at 0, or at the position at enable for csp) after operation enabled before it follows the profile; default 10"`
}

// DefaultDrive is a drives item before its keys are read.
func DefaultDrive() Drive {
	return Drive{FaultReset: "manual", SettleCycles: DefaultSettleCycles}
}

// Target is a drive's set-point profile, a function of the time since the
// drive became operational: constant (Value), ramp (From, To, Duration) or
// sine (Offset, Amplitude, Period). Each field serves the kinds named in
// its use tag; a field another kind uses must be left out (or 0).
type Target struct {
	// Kind is constant, ramp or sine.
	Kind string `json:"kind" koanf:"kind" help:"constant (value), ramp (from, to, duration, then holds to) or sine (offset + amplitude·sin(2π·t/period))"`
	// Value is the constant target.
	Value int `json:"value,omitempty" koanf:"value" use:"constant" help:"the target of a constant"`
	// From, To and Duration make a ramp.
	From     int      `json:"from,omitempty" koanf:"from" use:"ramp" help:"where a ramp starts"`
	To       int      `json:"to,omitempty" koanf:"to" use:"ramp" help:"where a ramp ends and then stays"`
	Duration Duration `json:"duration,omitempty" koanf:"duration" use:"ramp" help:"how long a ramp takes, more than 0"`
	// Offset, Amplitude and Period make a sine.
	Offset    int      `json:"offset,omitempty" koanf:"offset" use:"sine" help:"centre of a sine"`
	Amplitude int      `json:"amplitude,omitempty" koanf:"amplitude" use:"sine" help:"amplitude of a sine, not 0"`
	Period    Duration `json:"period,omitempty" koanf:"period" use:"sine" help:"period of a sine, at least two cycle periods"`
}

// Duration is a time.Duration written as text ("1ms", "250us") in JSON
// and YAML alike.
type Duration time.Duration

// MarshalText writes d as [FormatDuration] does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(FormatDuration(time.Duration(d))), nil }

// UnmarshalText parses a duration with a unit, as time.ParseDuration.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("%q is not a duration: want a number with a unit, such as \"1ms\" or \"250us\"", text)
	}
	*d = Duration(v)
	return nil
}

// String formats d as [FormatDuration] does.
func (d Duration) String() string { return FormatDuration(time.Duration(d)) }

// FormatDuration writes d in the largest unit that divides it exactly, in
// ASCII ("250us", "10ms", "90s", "5m"), so that what a process prints can
// be pasted back into a file, the environment or a flag.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	units := []struct {
		size time.Duration
		name string
	}{
		{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"},
		{time.Millisecond, "ms"}, {time.Microsecond, "us"}, {time.Nanosecond, "ns"},
	}
	for _, u := range units {
		if d%u.size == 0 {
			return strconv.FormatInt(int64(d/u.size), 10) + u.name
		}
	}
	return d.String()
}

// DefaultSHM is the default cycle.shm: tmpfs, so the segment never touches
// a disk.
const DefaultSHM = "/dev/shm/ecagent.shm"

// DefaultRecvSpin is the default cycle.recvspin: long enough for the
// answers of a small segment (a 1 ms cycle over a veth or socket pair:
// 2.55 → 1.39 context switches per cycle at the same CPU,
// docs/performance.md).
const DefaultRecvSpin = 100 * time.Microsecond

// Default returns the configuration the keys not given take: the
// defaults of the agent and of the cycle process alike. Bus.Devices is
// left empty: the agent's default segment (agent/config) names it.
func Default() Config {
	return Config{
		Bus: Bus{
			// Bring-up frames cross slow links and wait on slaves that
			// are still booting: one cycle period would be far too short.
			Timeout:      Duration(10 * time.Millisecond),
			StateTimeout: Duration(5 * time.Second),
			AlarmCycles:  DefaultAlarmCycles,
			DC:           DC{DriftFrames: DefaultDCDriftFrames, StartDelay: Duration(DefaultDCStartDelay)},
		},
		Cycle: Cycle{
			Period:     Duration(time.Millisecond),
			Core:       -1,
			Priority:   80,
			RecvSpin:   Duration(DefaultRecvSpin),
			Exchange:   ExchangePipelined,
			LockMemory: true,
			SHM:        DefaultSHM,
		},
		Log: Log{Level: "info", Format: "text"},
	}
}

// MaxConfigSize bounds a cycle configuration: the largest an agent writes
// (every slave remapped, every drive) is a few tens of kilobytes.
const MaxConfigSize = 1 << 20

// Load reads the configuration file at path onto [Default] and validates
// it; the error names the file and every problem.
func Load(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("cycle configuration: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads a configuration of at most [MaxConfigSize] bytes from r — a
// file, or the pipe an agent passes the cycle process (ecagent-cycle
// --config-fd) — onto [Default] and validates it; name says where it came
// from in errors.
func Read(r io.Reader, name string) (Config, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxConfigSize+1))
	if err != nil {
		return Config{}, fmt.Errorf("cycle configuration %s: %w", name, err)
	}
	if len(b) > MaxConfigSize {
		return Config{}, fmt.Errorf("cycle configuration %s: larger than %d bytes: is it a cycle configuration?", name, MaxConfigSize)
	}
	c, err := Parse(b)
	if err != nil {
		return Config{}, fmt.Errorf("cycle configuration %s: %w", name, err)
	}
	return c, nil
}

// Parse decodes a configuration's JSON onto [Default] and validates it.
// Keys it does not know, values of the wrong type and anything after the
// object are errors.
func Parse(b []byte) (Config, error) {
	c := Default()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, errors.New("more than one JSON value: want one object")
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// decodeError names the key of a value of the wrong type.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return &FieldError{Key: te.Field, Value: "a JSON " + te.Value, Problem: "must be " + jsonKind(te.Type.String())}
	}
	return err
}

// jsonKind says what JSON a Go type of Config is written as.
func jsonKind(goType string) string {
	switch goType {
	case "contract.Duration":
		return `a duration string such as "1ms"`
	case "contract.PDOEntry":
		return `a PDO entry string such as "0x6040:00/16"`
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "uint8", "uint16":
		return "an integer (" + goType + ")"
	}
	return "of type " + goType
}
