package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ecagent/ecagent/contract"
)

// Validate reports every value of c that is out of range or malformed, as
// [*FieldError]s joined with errors.Join; nil means c is usable. Entries of
// bus.devices are only checked for shape, because the allowed model names
// belong to the simulator: use [Config.ValidateWithModels] to check them too.
// Validate does not touch files; [Load] also checks that named files exist.
func (c Config) Validate() error {
	return joinFieldErrors(c.problems(nil, hostCPUs))
}

// ValidateWithModels is [Config.Validate] that also requires every
// bus.devices entry that is not an SII image path to be one of models.
func (c Config) ValidateWithModels(models []string) error {
	return joinFieldErrors(c.problems(models, hostCPUs))
}

func joinFieldErrors(problems []*FieldError) error {
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// problems lists what is wrong with c. models nil checks device entries only
// for shape; cpus returns the CPUs cycle.core may name (called only when
// cycle.core pins, so that a load without pinning reads nothing of the
// host).
func (c Config) problems(models []string, cpus func() cpuSet) []*FieldError {
	out := c.labelProblems()
	out = append(out, c.cycleProblems(cpus)...)
	if c.Simulated() {
		out = append(out, deviceProblems(c.Bus.Devices, models)...)
	}
	out = append(out, c.ownProblems()...)
	out = append(out, c.MQTT.problems()...)
	return inKeyOrder(append(out, c.OTLP.problems()...))
}

// inKeyOrder sorts problems by the place of their key in the file (the
// schema's order; an item of a list at the list's place), keeping the
// order of the problems of one key.
func inKeyOrder(problems []*FieldError) []*FieldError {
	keys := newSchema().keys()
	rank := make(map[string]int, len(keys))
	for i, k := range keys {
		rank[k] = i
	}
	at := func(key string) int {
		if i := strings.IndexByte(key, '['); i >= 0 {
			key = key[:i]
		}
		if r, ok := rank[key]; ok {
			return r
		}
		return len(rank)
	}
	slices.SortStableFunc(problems, func(a, b *FieldError) int { return cmp.Compare(at(a.Key), at(b.Key)) })
	return problems
}

// labelProblems checks the fleet labels.
func (c Config) labelProblems() []*FieldError {
	var out []*FieldError
	for _, l := range []struct {
		key, value string
	}{{"site", c.Site}, {"line", c.Line}, {"host", c.Host}} {
		if !isLabel(l.value) {
			out = append(out, &FieldError{Key: l.key, Value: l.value,
				Problem: "must be a non-empty name without spaces, '/', '+' or '#' (it is a Prometheus label and an MQTT topic level)"})
		}
	}
	return out
}

// cycleProblems checks the keys the cycle process reads, as it checks
// them itself (contract.Config.Problems, the keys as given: not
// CycleConfig, whose simulated bus.timeout floor would hide a bad
// value), except cycle.core, which must name a CPU of this host.
func (c Config) cycleProblems(cpus func() cpuSet) []*FieldError {
	raw := contract.Config{Bus: c.Bus, Cycle: c.Cycle, Log: c.Log, Drives: c.Drives}
	var out []*FieldError
	for _, p := range raw.Problems() {
		if p.Key == "cycle.core" {
			continue // the host's check below supersedes the contract's shape check
		}
		out = append(out, &FieldError{Key: p.Key, Value: p.Value, Problem: p.Problem})
	}
	if core := c.Cycle.Core; core != -1 {
		if set := cpus(); !set.contains(core) {
			out = append(out, &FieldError{Key: "cycle.core", Value: formatValue(core),
				Problem: fmt.Sprintf("must be -1 (no pinning) or an online CPU of this host (%s)", set.text)})
		}
	}
	return out
}

// fieldErrors collects the problems of a section.
type fieldErrors []*FieldError

// add records a problem of key with value, as the file writes it.
func (f *fieldErrors) add(key string, value any, problem string) {
	*f = append(*f, &FieldError{Key: key, Value: formatValue(value), Problem: problem})
}

// ownProblems checks the agent's own sections status and metrics.
func (c Config) ownProblems() []*FieldError {
	var out fieldErrors
	if iv := c.Status.Interval; iv != 0 && !inRange(iv, MinStatus, MaxStatus) {
		out.add("status.interval", iv, betweenDurations(MinStatus, MaxStatus)+", or 0 to disable")
	}
	if c.Metrics.Listen != "" && !isListenAddress(c.Metrics.Listen) {
		out.add("metrics.listen", c.Metrics.Listen, `must be empty (disabled) or host:port with a numeric port, e.g. ":9781" or "127.0.0.1:9781"`)
	}
	if !inRange(c.Metrics.Window, MinWindow, MaxWindow) {
		out.add("metrics.window", c.Metrics.Window, betweenDurations(MinWindow, MaxWindow))
	}
	if c.Metrics.Detail != "standard" && c.Metrics.Detail != "full" {
		out.add("metrics.detail", c.Metrics.Detail, "must be standard or full")
	}
	return out
}

// deviceProblems checks the simulated segment's device list.
func deviceProblems(devices, models []string) []*FieldError {
	if len(devices) == 0 {
		return []*FieldError{{Key: "bus.devices", Problem: "the simulated segment needs at least one device (or set bus.interface)"}}
	}
	var out []*FieldError
	for i, d := range devices {
		key := fmt.Sprintf("bus.devices[%d]", i)
		switch {
		case IsSIIImage(d), IsESIDevice(d):
			// A path; Load checks that the file exists.
		case d == "" || strings.IndexFunc(d, unicode.IsSpace) >= 0:
			out = append(out, &FieldError{Key: key, Value: d, Problem: "must be a model name without spaces, a path to an SII image ending in .bin or an ESI device, FILE.xml[:DEVICE][@REVISION]"})
		case models == nil || slices.Contains(models, d):
		default:
			problem := "unknown model; must be one of " + strings.Join(models, ", ") + ", a path to an SII image ending in .bin or an ESI device, FILE.xml[:DEVICE][@REVISION]"
			if i := slices.IndexFunc(models, func(m string) bool { return strings.EqualFold(m, d) }); i >= 0 {
				problem = fmt.Sprintf("unknown model; did you mean %q? (%s)", models[i], strings.TrimPrefix(problem, "unknown model; "))
			}
			out = append(out, &FieldError{Key: key, Value: d, Problem: problem})
		}
	}
	return out
}

func inRange(d, lo, hi time.Duration) bool { return d >= lo && d <= hi }

func betweenDurations(lo, hi time.Duration) string {
	return fmt.Sprintf("must be between %s and %s", formatDuration(lo), formatDuration(hi))
}

// isLabel reports whether s can serve as a fleet label: non-empty, printable,
// and usable as one MQTT topic level.
func isLabel(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || strings.ContainsRune("/+#", r) {
			return false
		}
	}
	return true
}

// isListenAddress reports whether s is host:port with a numeric port.
func isListenAddress(s string) bool {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return false
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err == nil
}

// problems checks the otlp section.
func (o OTLP) problems() []*FieldError {
	var out fieldErrors
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out.add("otlp.endpoint", o.Endpoint, "must be empty (OTEL_EXPORTER_OTLP_ENDPOINT or off) or a URL such as http://collector:4318 or https://collector:4317")
		}
	}
	if !slices.Contains([]string{"", "grpc", "http/protobuf"}, o.Protocol) {
		out.add("otlp.protocol", o.Protocol, "must be grpc, http/protobuf, or empty (OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)")
	}
	if iv := o.Interval; iv != 0 && !inRange(iv, MinOTLPInterval, MaxOTLPInterval) {
		out.add("otlp.interval", iv, betweenDurations(MinOTLPInterval, MaxOTLPInterval)+", or 0 (OTEL_METRIC_EXPORT_INTERVAL, else 10s)")
	}
	if to := o.Timeout; to != 0 && !inRange(to, MinOTLPTimeout, MaxOTLPTimeout) {
		out.add("otlp.timeout", to, betweenDurations(MinOTLPTimeout, MaxOTLPTimeout)+", or 0 (OTEL_EXPORTER_OTLP_TIMEOUT, else 10s)")
	}
	for i, h := range o.Headers {
		name, _, ok := strings.Cut(h, "=")
		if name = strings.TrimSpace(name); !ok || name == "" || strings.ContainsAny(name, " \t:") {
			out.add(fmt.Sprintf("otlp.headers[%d]", i), h, "must be name=value with a header name without spaces or ':'")
		}
	}
	return out
}
