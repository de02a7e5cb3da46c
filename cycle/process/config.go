package process

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"
)

// Config is what the cycle process reads: the bus.*, cycle.*, log.* keys
// and drives of the agent's configuration (agent/config), under the same
// names, as JSON. The agent passes it (agent.CycleConfig) to the cycle
// process through a pipe, never a file; [Read] and [Load] read and
// validate it. Durations are written as text:
// "1ms", "250µs".
type Config struct {
	Bus   Bus   `json:"bus"`
	Cycle Cycle `json:"cycle"`
	Log   Log   `json:"log"`
	// Drives are the CiA 402 drives the cycle runs.
	Drives []Drive `json:"drives,omitempty"`
}

// Bus is the EtherCAT segment (the agent's bus.* keys the cycle reads).
type Bus struct {
	// Interface is the network interface of the segment; "" needs an
	// inherited link (Options.LinkFD).
	Interface string `json:"interface"`
	// ExpectedSlaves is the number of slaves the segment must have; 0
	// accepts what is found.
	ExpectedSlaves int `json:"expectedslaves"`
	// Timeout bounds the wait for a non-cyclic frame.
	Timeout Duration `json:"timeout"`
	// StateTimeout bounds one state transition.
	StateTimeout Duration `json:"statetimeout"`
	// AlarmCycles raises the bus alarm after this many bad cycles in a
	// row; 0 disables it.
	AlarmCycles int `json:"alarmcycles"`
	// DC configures distributed clocks.
	DC DC `json:"dc"`
	// PDO remaps and reassigns PDOs of chosen slaves before SAFEOP.
	PDO []SlavePDOs `json:"pdo,omitempty"`
}

// DC configures distributed clocks (bus.dc); see agent/config.DC.
type DC struct {
	Enabled     bool     `json:"enabled"`
	Sync0Shift  Duration `json:"sync0shift"`
	Sync1       Duration `json:"sync1"`
	DriftFrames int      `json:"driftframes"`
	StartDelay  Duration `json:"startdelay"`
}

// SlavePDOs is the PDO configuration of one slave (an item of bus.pdo).
type SlavePDOs struct {
	// Slave is the ring position.
	Slave int `json:"slave"`
	// RxPDOs and TxPDOs are assigned to SM2 and SM3 in this order; nil
	// keeps the slave's assignment.
	RxPDOs []PDO `json:"rxpdos"`
	TxPDOs []PDO `json:"txpdos"`
}

// PDO is one PDO mapping object and, optionally, its new mapping.
type PDO struct {
	// Index is the mapping object, 0x1600..0x17FF or 0x1A00..0x1BFF.
	Index uint16 `json:"index"`
	// Entries is the new mapping; empty keeps the slave's.
	Entries []PDOEntry `json:"entries,omitempty"`
}

// PDOEntry is one mapped object.
type PDOEntry struct {
	Index    uint16 `json:"index"`
	SubIndex uint8  `json:"subindex"`
	Bits     int    `json:"bits"`
}

// Cycle is the real-time cycle (the agent's cycle.* keys the cycle reads).
type Cycle struct {
	// Period is the cycle period.
	Period Duration `json:"period"`
	// Core is the CPU of the cycle thread; -1 leaves it unpinned.
	Core int `json:"core"`
	// Priority is the SCHED_FIFO priority; 0 keeps the normal scheduler.
	Priority int `json:"priority"`
	// BusyWait is the tail before each deadline that the thread spins.
	BusyWait Duration `json:"busywait"`
	// RecvSpin is how long the cycle reads its answers without waiting
	// before it blocks for them; at most half the period is used.
	RecvSpin Duration `json:"recvspin"`
	// Exchange is ExchangePipelined or ExchangeWait (cycle.Config.Pipelined).
	Exchange string `json:"exchange"`
	// LockMemory asks for mlockall and a locked segment.
	LockMemory bool `json:"lockmemory"`
	// SHM is the shared-memory segment the agent created.
	SHM string `json:"shm"`
}

// Log is the cycle process's log on stderr.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `json:"level"`
	// Format is text or json.
	Format string `json:"format"`
}

// Drive is one CiA 402 drive (an item of drives); see agent/config.Drive.
// Every key of an item must be given: items have no defaults.
type Drive struct {
	Slave        int    `json:"slave"`
	Mode         string `json:"mode"` // csp, csv or cst
	Target       Target `json:"target"`
	FaultReset   string `json:"faultreset"` // manual or auto
	SettleCycles int    `json:"settlecycles"`
}

// Target is a drive's set-point profile: constant (Value), ramp (From,
// To, Duration) or sine (Offset, Amplitude, Period).
type Target struct {
	Kind      string   `json:"kind"`
	Value     int      `json:"value,omitempty"`
	From      int      `json:"from,omitempty"`
	To        int      `json:"to,omitempty"`
	Duration  Duration `json:"duration,omitempty"`
	Offset    int      `json:"offset,omitempty"`
	Amplitude int      `json:"amplitude,omitempty"`
	Period    Duration `json:"period,omitempty"`
}

// Duration is a time.Duration that the file holds as text ("1ms").
type Duration time.Duration

// MarshalText writes d as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses a duration with a unit, as time.ParseDuration.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("%q is not a duration: want a number with a unit, such as \"1ms\" or \"250us\"", text)
	}
	*d = Duration(v)
	return nil
}

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// DefaultSHM is the default cycle.shm, the agent's default too.
const DefaultSHM = "/run/ecagent/ecagent.shm"

// Default returns the configuration a file's missing keys take: the
// agent's defaults for the same keys (agent.TestCycleConfigDefaults keeps
// them equal).
func Default() Config {
	return Config{
		Bus: Bus{
			Timeout:      Duration(10 * time.Millisecond),
			StateTimeout: Duration(5 * time.Second),
			AlarmCycles:  DefaultAlarmCycles,
			DC:           DC{DriftFrames: DefaultDCDriftFrames, StartDelay: Duration(DefaultDCStartDelay)},
		},
		Cycle: Cycle{Period: Duration(time.Millisecond), Core: -1, Priority: 80, RecvSpin: Duration(100 * time.Microsecond),
			Exchange:   ExchangePipelined,
			LockMemory: true, SHM: DefaultSHM},
		Log: Log{Level: "info", Format: "text"},
	}
}

// The values of cycle.exchange (Cycle.Exchange).
const (
	// ExchangePipelined: each cycle collects the answers to the frames the
	// previous one sent and sends its own without waiting.
	ExchangePipelined = "pipelined"
	// ExchangeWait: each cycle sends its frames and waits for the answers.
	ExchangeWait = "wait"
)

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

// Parse decodes a configuration file's JSON onto [Default] and validates
// it. Keys it does not know, values of the wrong type and anything after
// the object are errors.
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
	case "process.Duration":
		return `a duration string such as "1ms"`
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "uint8", "uint16":
		return "an integer (" + goType + ")"
	}
	return "of type " + goType
}

// FieldError is one invalid value: the key as the agent's configuration
// names it, the value, and what is allowed.
type FieldError struct {
	Key     string // e.g. cycle.period, drives[0].target.kind
	Value   string
	Problem string
}

func (e *FieldError) Error() string {
	if e.Value == "" {
		return e.Key + ": " + e.Problem
	}
	return e.Key + " = " + e.Value + ": " + e.Problem
}
