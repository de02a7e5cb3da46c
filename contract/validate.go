package contract

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Bounds and defaults of the keys of [Config]: the one set both processes
// check against.
const (
	MinPeriod       = 50 * time.Microsecond  // shortest cycle.period
	MaxPeriod       = time.Second            // longest cycle.period
	MaxPriority     = 99                     // highest cycle.priority (SCHED_FIFO)
	MaxRecvSpin     = time.Second            // longest cycle.recvspin
	MinBusTimeout   = 50 * time.Microsecond  // shortest bus.timeout
	MaxBusTimeout   = 10 * time.Second       // longest bus.timeout
	MinStateTimeout = 100 * time.Millisecond // shortest bus.statetimeout
	MaxStateTimeout = 5 * time.Minute        // longest bus.statetimeout
	MaxSlaves       = 65535                  // largest bus.expectedslaves
	MaxRingPosition = MaxSlaves - 1          // largest slave of bus.pdo and drives
	// DefaultAlarmCycles is bus.alarmcycles when not set: 10 bad cycles in
	// a row are a persistent fault, a single lost frame is not.
	DefaultAlarmCycles   = 10
	MaxAlarmCycles       = 1_000_000
	DefaultDCDriftFrames = 15000
	DefaultDCStartDelay  = 100 * time.Millisecond
	MaxDCDriftFrames     = 1_000_000
	MinDCStartDelay      = time.Millisecond
	MaxDCStartDelay      = 2 * time.Second // the master's bound: ESCs with 32-bit system time see 2³¹ ns ahead
	DefaultSettleCycles  = 10              // drives[].settlecycles when not given
	MaxSettleCycles      = 1_000_000       // largest drives[].settlecycles
	MaxPDOEntries        = 254             // entries of one PDO mapping object (sub-index 0 is a UINT8 count)
)

// PDO mapping object ranges.
const (
	FirstRxPDO, LastRxPDO uint16 = 0x1600, 0x17FF
	FirstTxPDO, LastTxPDO uint16 = 0x1A00, 0x1BFF
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
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		p.add("log.level", c.Log.Level, "must be debug, info, warn or error")
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		p.add("log.format", c.Log.Format, "must be text or json")
	}
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

func (c Config) busProblems(p *problems) {
	b := c.Bus
	if b.Interface != "" && !ValidInterfaceName(b.Interface) {
		p.add("bus.interface", b.Interface, "must be empty (simulated segment) or a network interface name of at most 15 characters without '/', ':' or spaces")
	}
	if n := b.ExpectedSlaves; n < 0 || n > MaxSlaves {
		p.add("bus.expectedslaves", n, fmt.Sprintf("must be between 0 (accept what is found) and %d", MaxSlaves))
	}
	p.duration("bus.timeout", b.Timeout, MinBusTimeout, MaxBusTimeout)
	p.duration("bus.statetimeout", b.StateTimeout, MinStateTimeout, MaxStateTimeout)
	if n := b.AlarmCycles; n < 0 || n > MaxAlarmCycles {
		p.add("bus.alarmcycles", n, fmt.Sprintf("must be between 0 (no alarm) and %d", MaxAlarmCycles))
	}
	period := c.Cycle.Period
	if s := b.DC.Sync0Shift; s < 0 || s >= period {
		p.add("bus.dc.sync0shift", s, fmt.Sprintf("must be at least 0 and less than cycle.period (%s)", period))
	}
	if s := b.DC.Sync1; s < 0 || s >= period {
		p.add("bus.dc.sync1", s, fmt.Sprintf("must be 0 (SYNC1 off) or an offset after SYNC0 less than cycle.period (%s)", period))
	}
	if n := b.DC.DriftFrames; n < 0 || n > MaxDCDriftFrames {
		p.add("bus.dc.driftframes", n, fmt.Sprintf("must be between 0 and %d", MaxDCDriftFrames))
	}
	p.duration("bus.dc.startdelay", b.DC.StartDelay, MinDCStartDelay, MaxDCStartDelay)
	seen := map[int]int{}
	for i, s := range b.PDO {
		key := fmt.Sprintf("bus.pdo[%d]", i)
		c.slaveProblem(p, key+".slave", s.Slave, seen, i, "bus.pdo")
		p.pdos(key+".rxpdos", s.RxPDOs, FirstRxPDO, LastRxPDO, "an RxPDO")
		p.pdos(key+".txpdos", s.TxPDOs, FirstTxPDO, LastTxPDO, "a TxPDO")
	}
}

func (c Config) cycleProblems(p *problems) {
	cy := c.Cycle
	p.duration("cycle.period", cy.Period, MinPeriod, MaxPeriod)
	if cy.Core < -1 {
		p.add("cycle.core", cy.Core, "must be -1 (no pinning) or a CPU number")
	}
	if n := cy.Priority; n < 0 || n > MaxPriority {
		p.add("cycle.priority", n, fmt.Sprintf("must be between 1 and %d (SCHED_FIFO), or 0 to keep the normal scheduler", MaxPriority))
	}
	if bw := cy.BusyWait; bw < 0 || bw >= cy.Period {
		p.add("cycle.busywait", bw, fmt.Sprintf("must be at least 0 and less than cycle.period (%s)", cy.Period))
	}
	if rs := cy.RecvSpin; rs < 0 || time.Duration(rs) > MaxRecvSpin {
		p.add("cycle.recvspin", rs, fmt.Sprintf("must be between 0 (no spinning) and %s", FormatDuration(MaxRecvSpin)))
	}
	if x := cy.Exchange; x != ExchangePipelined && x != ExchangeWait {
		p.add("cycle.exchange", x, `must be "pipelined" or "wait"`)
	}
	if s := cy.SHM; !filepath.IsAbs(s) || strings.HasSuffix(s, "/") {
		p.add("cycle.shm", s, "must be an absolute file path, e.g. "+DefaultSHM)
	}
}

// slaveProblem checks a ring position: in range, within the simulated
// segment or bus.expectedslaves, and not configured twice in list.
func (c Config) slaveProblem(p *problems, key string, slave int, seen map[int]int, i int, list string) {
	devices := len(c.Bus.Devices)
	switch {
	case slave < 0 || slave > MaxRingPosition:
		p.add(key, slave, fmt.Sprintf("must be a ring position between 0 and %d", MaxRingPosition))
		return
	case c.Bus.Simulated() && devices > 0 && slave >= devices:
		p.add(key, slave, fmt.Sprintf("no such slave: the simulated segment (bus.devices) has %d devices, at ring positions 0..%d", devices, devices-1))
		return
	case c.Bus.ExpectedSlaves > 0 && slave >= c.Bus.ExpectedSlaves:
		p.add(key, slave, fmt.Sprintf("no such slave: bus.expectedslaves is %d, so ring positions are 0..%d", c.Bus.ExpectedSlaves, c.Bus.ExpectedSlaves-1))
		return
	}
	if j, dup := seen[slave]; dup {
		p.add(key, slave, fmt.Sprintf("slave %d is already configured by %s[%d]", slave, list, j))
		return
	}
	seen[slave] = i
}

// pdos checks the rxpdos or txpdos of one slave: what is "an RxPDO" or
// "a TxPDO".
func (p *problems) pdos(key string, pdos []PDO, first, last uint16, what string) {
	seen := map[uint16]int{}
	for j, o := range pdos {
		ikey := fmt.Sprintf("%s[%d].index", key, j)
		value := fmt.Sprintf("0x%04X", o.Index)
		if k, dup := seen[o.Index]; o.Index < first || o.Index > last {
			p.add(ikey, value, fmt.Sprintf("must be %s mapping object, 0x%04X..0x%04X", what, first, last))
		} else if dup {
			p.add(ikey, value, fmt.Sprintf("is already assigned by %s[%d]", key, k))
		} else {
			seen[o.Index] = j
		}
		if len(o.Entries) > MaxPDOEntries {
			p.add(fmt.Sprintf("%s[%d].entries", key, j), fmt.Sprintf("%d entries", len(o.Entries)),
				fmt.Sprintf("a PDO maps at most %d entries", MaxPDOEntries))
		}
		for k, e := range o.Entries {
			if e.Bits < 1 || e.Bits > 64 {
				p.add(fmt.Sprintf("%s[%d].entries[%d]", key, j, k), e.String(), "an entry has 1..64 bits")
			}
		}
	}
}

// Drive modes, target kinds and fault reset policies, as written.
var (
	driveModes  = []string{"csp", "csv", "cst"}
	targetKinds = []string{"constant", "ramp", "sine"}
	faultResets = []string{"manual", "auto"}
)

func (c Config) driveProblems(p *problems) {
	seen := map[int]int{}
	for i, d := range c.Drives {
		key := fmt.Sprintf("drives[%d]", i)
		c.slaveProblem(p, key+".slave", d.Slave, seen, i, "drives")
		if !slices.Contains(driveModes, d.Mode) {
			p.add(key+".mode", d.Mode, "must be csp, csv or cst")
		}
		if !slices.Contains(faultResets, d.FaultReset) {
			p.add(key+".faultreset", d.FaultReset, "must be manual or auto")
		}
		if n := d.SettleCycles; n < 0 || n > MaxSettleCycles {
			p.add(key+".settlecycles", n, fmt.Sprintf("must be between 0 and %d", MaxSettleCycles))
		}
		d.Target.problems(p, key+".target", d.Mode, c.Cycle.Period)
	}
}

// targetLimits returns the range of the mode's target object.
func targetLimits(mode string) (lo, hi int64, object string) {
	switch mode {
	case "cst":
		return math.MinInt16, math.MaxInt16, "the cst target 0x6071 is 16 bits"
	case "csv":
		return math.MinInt32, math.MaxInt32, "the csv target 0x60FF is 32 bits"
	}
	return math.MinInt32, math.MaxInt32, "the csp target 0x607A is 32 bits"
}

// problems checks a drive's target for its kind and its mode's range.
func (t Target) problems(p *problems, key, mode string, period Duration) {
	if !slices.Contains(targetKinds, t.Kind) {
		p.add(key+".kind", t.Kind, "must be constant, ramp or sine")
		return
	}
	// A field of another kind is a mistake (a ramp with a period).
	for _, f := range targetFields(t) {
		if f.use != "" && !slices.Contains(strings.Split(f.use, ","), t.Kind) && !f.value.IsZero() {
			p.add(key+"."+f.name, f.value.Interface(), fmt.Sprintf("a %s target does not use %s; it uses %s", t.Kind, f.name, kindFieldNames(t.Kind)))
		}
	}
	lo, hi, why := targetLimits(mode)
	fits := func(sub string, v int64) {
		if v < lo || v > hi {
			p.add(key+"."+sub, v, fmt.Sprintf("must be between %d and %d (%s)", lo, hi, why))
		}
	}
	switch t.Kind {
	case "constant":
		fits("value", int64(t.Value))
	case "ramp":
		if t.Duration <= 0 {
			p.add(key+".duration", t.Duration, "a ramp needs a duration of more than 0")
		}
		fits("from", int64(t.From))
		fits("to", int64(t.To))
	case "sine":
		t.sineProblems(p, key, period, lo, hi, why)
	}
}

// sineProblems checks a sine target against the cycle period and the
// range lo..hi of the mode's target object (why says which).
func (t Target) sineProblems(p *problems, key string, period Duration, lo, hi int64, why string) {
	if t.Period < 2*period {
		p.add(key+".period", t.Period, fmt.Sprintf("a sine needs a period of at least two cycle periods (%s)", 2*period))
	}
	if t.Amplitude == 0 {
		p.add(key+".amplitude", t.Amplitude, "a sine needs an amplitude other than 0 (use kind constant for a fixed target)")
	}
	if o := int64(t.Offset); o < lo || o > hi {
		p.add(key+".offset", o, fmt.Sprintf("must be between %d and %d (%s)", lo, hi, why))
	}
	a := int64(t.Amplitude)
	if a < 0 {
		a = -a
	}
	if o := int64(t.Offset); o-a < lo || o+a > hi {
		p.add(key+".amplitude", t.Amplitude, fmt.Sprintf("offset ± amplitude must stay between %d and %d (%s)", lo, hi, why))
	}
}

// targetField is one field of a Target by its koanf tag.
type targetField struct {
	name, use string
	value     reflect.Value
}

// targetFields lists the fields of t with the kinds that use them.
func targetFields(t Target) []targetField {
	v := reflect.ValueOf(t)
	out := make([]targetField, v.NumField())
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		out[i] = targetField{name: sf.Tag.Get("koanf"), use: sf.Tag.Get("use"), value: v.Field(i)}
	}
	return out
}

// kindFieldNames lists the keys a target kind uses: "from, to and
// duration".
func kindFieldNames(kind string) string {
	var names []string
	for _, f := range targetFields(Target{}) {
		if slices.Contains(strings.Split(f.use, ","), kind) {
			names = append(names, f.name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// ValidInterfaceName reports whether s is a name the kernel accepts for a
// network interface: at most IFNAMSIZ-1 (15) bytes, no '/' or ':', no
// white space or unprintable character, not "." or "..".
func ValidInterfaceName(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if r == '/' || r == ':' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
