package config

import (
	"fmt"
	"strconv"
	"strings"
)

// FieldError is a key whose value is malformed or not allowed.
type FieldError struct {
	// Key is the dotted key; list items carry their index, e.g.
	// "bus.devices[2]".
	Key string
	// Value is the offending value as written (or as formatted, when it came
	// from a typed flag or from [Config.Validate]).
	Value string
	// Source says where the value came from: "path:line" in a file, the
	// environment variable's name, "--flag", or "default". Empty when
	// unknown, as in [Config.Validate].
	Source string
	// Problem says what is wrong and what is allowed.
	Problem string
}

// Error renders: config: cycle.period = "10us" (ECAGENT_CYCLE_PERIOD): must
// be between 50us and 1s.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	b.WriteString(e.Key)
	b.WriteString(" = ")
	b.WriteString(strconv.Quote(e.Value))
	if e.Source != "" {
		b.WriteString(" (")
		b.WriteString(e.Source)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	return b.String()
}

// UnknownKeyError is a key, in a file or the environment, that the
// configuration does not have.
type UnknownKeyError struct {
	// Key is the dotted key as found, e.g. "cycle.perod".
	Key string
	// Source is "path:line" for a file or the variable's name for the
	// environment.
	Source string
	// Suggestion is the closest known key, or "" if none is close.
	Suggestion string
	// Problem, when set, replaces the generic explanation (used for a
	// section given a plain value).
	Problem string
}

// Error renders: config: unknown key "cycle.perod" (ecagent.yaml:4); did
// you mean "cycle.period"?
func (e *UnknownKeyError) Error() string {
	msg := fmt.Sprintf("config: unknown key %q", e.Key)
	if e.Source != "" {
		msg += " (" + e.Source + ")"
	}
	if e.Problem != "" {
		msg += ": " + e.Problem
	}
	if e.Suggestion != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return msg
}

// FileError is a configuration file that cannot be read or parsed. A YAML
// syntax error's text carries the line ("yaml: line 3: …").
type FileError struct {
	// Path is the file as given.
	Path string
	// Err is the underlying read or parse error.
	Err error
}

// Error renders: config: file ecagent.yaml: yaml: line 3: ….
func (e *FileError) Error() string {
	return fmt.Sprintf("config: file %s: %v", e.Path, e.Err)
}

// Unwrap returns the underlying error, so errors.Is(err, fs.ErrNotExist)
// works.
func (e *FileError) Unwrap() error { return e.Err }
