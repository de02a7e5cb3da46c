package metrics

import "errors"

// ErrInvalidOptions is returned by NewRegistry and NewServer for options
// outside their documented range; the wrapping error names the option.
var ErrInvalidOptions = errors.New("metrics: invalid options")

// ErrInvalidArgument is returned by Set methods for an argument they
// cannot export (an unknown check status, an empty name).
var ErrInvalidArgument = errors.New("metrics: invalid argument")

// ErrProcFormat is returned when a /proc file does not have the format
// the host collector expects; the wrapping error names the file.
var ErrProcFormat = errors.New("metrics: unexpected /proc format")
