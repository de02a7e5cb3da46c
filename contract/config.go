package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
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

// problems checks the log.* keys.
func (l Log) problems(p *problems) {
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, l.Level) {
		p.add("log.level", l.Level, "must be debug, info, warn or error")
	}
	if !slices.Contains([]string{"text", "json"}, l.Format) {
		p.add("log.format", l.Format, "must be text or json")
	}
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

// Default returns the configuration the keys not given take: the
// defaults of the agent and of the cycle process alike. Bus.Devices is
// left empty: the agent's default segment (agent/config) names it.
func Default() Config {
	return Config{Bus: defaultBus(), Cycle: defaultCycle(), Log: Log{Level: "info", Format: "text"}}
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
