package contract

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// FieldError is one invalid value: the key as the agent's configuration
// names it, the value as written, and what is allowed.
type FieldError struct {
	Key     string // e.g. cycle.period, drives[0].target.kind
	Value   string // "" when there is none to show
	Problem string
}

// Error renders: cycle.period = "10us": must be between 50us and 1s.
func (e *FieldError) Error() string {
	if e.Value == "" {
		return e.Key + ": " + e.Problem
	}
	return e.Key + " = " + strconv.Quote(e.Value) + ": " + e.Problem
}

// Validate reports every value of c the cycle cannot run with, as the
// [*FieldError]s of [Config.Problems] joined with errors.Join; nil means c
// is usable.
func (c Config) Validate() error {
	problems := c.Problems()
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// Problems lists every value of c the cycle cannot run with, in the order
// of the keys. It is the one check of these keys: the agent's
// configuration runs it too, adding what only the agent knows (the
// simulated segment's device models, the host's CPUs for cycle.core,
// which it checks instead of the shape check here).
func (c Config) Problems() []*FieldError {
	var p problems
	c.busProblems(&p)
	c.cycleProblems(&p)
	c.Log.problems(&p)
	c.driveProblems(&p)
	return p
}

// problems collects field errors.
type problems []*FieldError

// add records a problem with value, written as the configuration writes it.
func (p *problems) add(key string, value any, problem string) {
	*p = append(*p, &FieldError{Key: key, Value: formatValue(value), Problem: problem})
}

// duration checks that d lies in [lo, hi].
func (p *problems) duration(key string, d Duration, lo, hi time.Duration) {
	if time.Duration(d) < lo || time.Duration(d) > hi {
		p.add(key, d, fmt.Sprintf("must be between %s and %s", FormatDuration(lo), FormatDuration(hi)))
	}
}

// formatValue writes a value as the configuration writes it.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case time.Duration:
		return FormatDuration(v)
	}
	return fmt.Sprint(v)
}
