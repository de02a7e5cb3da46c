package config

import "strings"

// Forensics configures the explanation of the cycle's spikes (package
// agent/spikes): a tracefs instance of the agent's own on the cycle's
// core, read in the agent process.
type Forensics struct {
	// Enabled turns the collector on; it runs only when the cycle is
	// pinned (cycle.core) and tracefs is permitted, and says why not
	// otherwise.
	Enabled bool `koanf:"enabled" help:"explain every late cycle from the kernel's trace of the cycle's core (needs cycle.core and tracefs: CAP_SYS_ADMIN or a tracefs group); without them the agent runs on and says why forensics is off"`
	// Threshold is the wake-up latency, in percent of cycle.period, above
	// which a cycle is explained (an overrun always is).
	Threshold int `koanf:"threshold" help:"wake-up latency, in percent of cycle.period, above which a cycle is explained (overruns always are); 1..1000"`
	// TraceFS is where tracefs is mounted.
	TraceFS string `koanf:"tracefs" help:"where tracefs is mounted (an absolute path)"`
	// Instance is the name of the agent's tracefs instance.
	Instance string `koanf:"instance" help:"name of the agent's tracefs instance (instances/NAME): one per agent on a host"`
	// BufferKB is the size of the instance's ring on the cycle's core.
	BufferKB int `koanf:"bufferkb" help:"size of the trace ring on the cycle's core in KiB; it overwrites its oldest events; 16..65536"`
}

// Bounds and defaults of the forensics section.
const (
	DefaultForensicsThreshold = 20
	MaxForensicsThreshold     = 1000
	// DefaultForensicsBufferKB holds about 130 ms of a core raising
	// 200 000 traced events a second (a block-I/O storm), six polls.
	DefaultForensicsBufferKB = 1024
	MinForensicsBufferKB     = 16
	MaxForensicsBufferKB     = 65536
	DefaultTraceFS           = "/sys/kernel/tracing"
	DefaultForensicsInstance = "ecagent"
)

func defaultForensics() Forensics {
	return Forensics{Enabled: true, Threshold: DefaultForensicsThreshold, TraceFS: DefaultTraceFS,
		Instance: DefaultForensicsInstance, BufferKB: DefaultForensicsBufferKB}
}

// problems checks the forensics section.
func (f Forensics) problems() []*FieldError {
	var out []*FieldError
	add := func(key string, value any, problem string) {
		out = append(out, &FieldError{Key: key, Value: formatValue(value), Problem: problem})
	}
	if f.Threshold < 1 || f.Threshold > MaxForensicsThreshold {
		add("forensics.threshold", f.Threshold, "must be a percentage of cycle.period, 1..1000")
	}
	if f.BufferKB < MinForensicsBufferKB || f.BufferKB > MaxForensicsBufferKB {
		add("forensics.bufferkb", f.BufferKB, "must be 16..65536 (KiB)")
	}
	if !strings.HasPrefix(f.TraceFS, "/") {
		add("forensics.tracefs", f.TraceFS, "must be an absolute path, e.g. /sys/kernel/tracing")
	}
	if f.Instance == "" || strings.ContainsAny(f.Instance, "/ \t\n") || f.Instance == "." || f.Instance == ".." {
		add("forensics.instance", f.Instance, "must be a directory name without / or spaces, e.g. ecagent")
	}
	return out
}
