package stats

import "errors"

// ErrNoValues is returned when a computation needs at least one value and got none.
var ErrNoValues = errors.New("stats: no values")

// ErrInvalidArgument is returned for arguments outside their documented range
// (a bin count below 1, a fraction outside (0, 1], a non-positive bin width, …).
// The wrapping error names the argument and the value.
var ErrInvalidArgument = errors.New("stats: invalid argument")

// ErrCyclictestFormat is returned by ParseCyclictestJSON when the input is not a
// cyclictest --json report it understands. The wrapping error says what is wrong.
var ErrCyclictestFormat = errors.New("stats: not a cyclictest JSON report")

// ErrNotCyclictestCompatible is returned by CyclictestJSON when the data cannot be
// expressed in cyclictest's format (for example a histogram whose bins are not
// one resolution unit wide or do not start at zero).
var ErrNotCyclictestCompatible = errors.New("stats: data not expressible as cyclictest JSON")
