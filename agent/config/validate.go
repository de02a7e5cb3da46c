package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ecagent/ecagent/master/link"
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
	var out []*FieldError
	add := func(key string, value any, problem string) {
		out = append(out, &FieldError{Key: key, Value: formatValue(value), Problem: problem})
	}

	for _, l := range []struct {
		key, value string
	}{{"site", c.Site}, {"line", c.Line}, {"host", c.Host}} {
		if !isLabel(l.value) {
			add(l.key, l.value, "must be a non-empty name without spaces, '/', '+' or '#' (it is a Prometheus label and an MQTT topic level)")
		}
	}

	if c.Bus.Interface != "" && !link.ValidInterfaceName(c.Bus.Interface) {
		add("bus.interface", c.Bus.Interface, "must be empty (simulated segment) or a network interface name of at most 15 characters without '/', ':' or spaces")
	}
	if c.Simulated() {
		out = append(out, deviceProblems(c.Bus.Devices, models)...)
	}
	if n := c.Bus.AlarmCycles; n < 0 || n > MaxAlarmCycles {
		add("bus.alarmcycles", n, fmt.Sprintf("must be between 0 (no alarm) and %d", MaxAlarmCycles))
	}
	if n := c.Bus.ExpectedSlaves; n < 0 || n > MaxSlaves {
		add("bus.expectedslaves", n, fmt.Sprintf("must be between 0 (accept what is found) and %d", MaxSlaves))
	}
	if !inRange(c.Bus.Timeout, MinBusTimeout, MaxBusTimeout) {
		add("bus.timeout", c.Bus.Timeout, betweenDurations(MinBusTimeout, MaxBusTimeout))
	}
	if !inRange(c.Bus.StateTimeout, MinStateTimeout, MaxStateTimeout) {
		add("bus.statetimeout", c.Bus.StateTimeout, betweenDurations(MinStateTimeout, MaxStateTimeout))
	}

	if !inRange(c.Cycle.Period, MinPeriod, MaxPeriod) {
		add("cycle.period", c.Cycle.Period, betweenDurations(MinPeriod, MaxPeriod))
	}
	if core := c.Cycle.Core; core != -1 {
		if set := cpus(); !set.contains(core) {
			add("cycle.core", core, fmt.Sprintf("must be -1 (no pinning) or an online CPU of this host (%s)", set.text))
		}
	}
	if p := c.Cycle.SHM; !filepath.IsAbs(p) || strings.HasSuffix(p, "/") {
		add("cycle.shm", p, "must be an absolute file path, e.g. "+DefaultSHM)
	}
	if p := c.Cycle.Priority; p < 0 || p > MaxPriority {
		add("cycle.priority", p, fmt.Sprintf("must be between 1 and %d (SCHED_FIFO), or 0 to keep the normal scheduler", MaxPriority))
	}
	if rs := c.Cycle.RecvSpin; rs < 0 || rs > time.Second {
		add("cycle.recvspin", rs, "must be between 0 (no spinning) and 1s")
	}
	if x := c.Cycle.Exchange; x != ExchangePipelined && x != ExchangeWait {
		add("cycle.exchange", x, `must be "pipelined" or "wait"`)
	}
	if bw := c.Cycle.BusyWait; bw < 0 || bw >= c.Cycle.Period {
		add("cycle.busywait", bw, fmt.Sprintf("must be at least 0 and less than cycle.period (%s)", formatDuration(c.Cycle.Period)))
	}

	if iv := c.Status.Interval; iv != 0 && !inRange(iv, MinStatus, MaxStatus) {
		add("status.interval", iv, betweenDurations(MinStatus, MaxStatus)+", or 0 to disable")
	}

	if c.Metrics.Listen != "" && !isListenAddress(c.Metrics.Listen) {
		add("metrics.listen", c.Metrics.Listen, `must be empty (disabled) or host:port with a numeric port, e.g. ":9781" or "127.0.0.1:9781"`)
	}
	if !inRange(c.Metrics.Window, MinWindow, MaxWindow) {
		add("metrics.window", c.Metrics.Window, betweenDurations(MinWindow, MaxWindow))
	}
	if c.Metrics.Detail != "standard" && c.Metrics.Detail != "full" {
		add("metrics.detail", c.Metrics.Detail, "must be standard or full")
	}

	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		add("log.level", c.Log.Level, "must be debug, info, warn or error")
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		add("log.format", c.Log.Format, "must be text or json")
	}
	out = append(out, c.MQTT.problems()...)
	out = append(out, c.OTLP.problems()...)
	out = append(out, c.motionProblems()...)
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
	var out []*FieldError
	add := func(key string, value any, problem string) {
		out = append(out, &FieldError{Key: key, Value: formatValue(value), Problem: problem})
	}
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("otlp.endpoint", o.Endpoint, "must be empty (OTEL_EXPORTER_OTLP_ENDPOINT or off) or a URL such as http://collector:4318 or https://collector:4317")
		}
	}
	if !slices.Contains([]string{"", "grpc", "http/protobuf"}, o.Protocol) {
		add("otlp.protocol", o.Protocol, "must be grpc, http/protobuf, or empty (OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)")
	}
	if iv := o.Interval; iv != 0 && !inRange(iv, MinOTLPInterval, MaxOTLPInterval) {
		add("otlp.interval", iv, betweenDurations(MinOTLPInterval, MaxOTLPInterval)+", or 0 (OTEL_METRIC_EXPORT_INTERVAL, else 10s)")
	}
	if to := o.Timeout; to != 0 && !inRange(to, MinOTLPTimeout, MaxOTLPTimeout) {
		add("otlp.timeout", to, betweenDurations(MinOTLPTimeout, MaxOTLPTimeout)+", or 0 (OTEL_EXPORTER_OTLP_TIMEOUT, else 10s)")
	}
	for i, h := range o.Headers {
		name, _, ok := strings.Cut(h, "=")
		if name = strings.TrimSpace(name); !ok || name == "" || strings.ContainsAny(name, " \t:") {
			add(fmt.Sprintf("otlp.headers[%d]", i), h, "must be name=value with a header name without spaces or ':'")
		}
	}
	return out
}
