package process

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ecagent/ecagent/master/link"
)

// Bounds [Config.Validate] enforces: the agent's (agent/config), which
// agent.TestCycleConfigBounds keeps equal.
const (
	MinPeriod            = 50 * time.Microsecond
	MaxPeriod            = time.Second
	MaxPriority          = 99
	MinBusTimeout        = 50 * time.Microsecond
	MaxBusTimeout        = 10 * time.Second
	MinStateTimeout      = 100 * time.Millisecond
	MaxStateTimeout      = 5 * time.Minute
	MaxSlaves            = 65535
	DefaultAlarmCycles   = 10
	MaxAlarmCycles       = 1_000_000
	DefaultDCDriftFrames = 15000
	DefaultDCStartDelay  = 100 * time.Millisecond
	MaxDCDriftFrames     = 1_000_000
	MinDCStartDelay      = time.Millisecond
	MaxDCStartDelay      = 2 * time.Second
	MaxSettleCycles      = 1_000_000
	MaxRingPosition      = MaxSlaves - 1
	MaxPDOEntries        = 254
)

// PDO mapping object ranges.
const (
	FirstRxPDO, LastRxPDO uint16 = 0x1600, 0x17FF
	FirstTxPDO, LastTxPDO uint16 = 0x1A00, 0x1BFF
)

// Validate reports every value of c the cycle cannot run with, as
// [*FieldError]s joined with errors.Join; nil means c is usable. It checks
// what the agent's configuration checks of the same keys, except what
// only the agent knows (the simulated segment's devices, the host's CPUs).
func (c Config) Validate() error {
	var v validator
	c.busProblems(&v)
	c.cycleProblems(&v)
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		v.add("log.level", c.Log.Level, "must be debug, info, warn or error")
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		v.add("log.format", c.Log.Format, "must be text or json")
	}
	c.driveProblems(&v)
	return errors.Join(v.errs...)
}

// validator collects problems.
type validator struct{ errs []error }

func (v *validator) add(key string, value any, problem string) {
	s := fmt.Sprint(value)
	if str, ok := value.(string); ok {
		s = fmt.Sprintf("%q", str)
	}
	v.errs = append(v.errs, &FieldError{Key: key, Value: s, Problem: problem})
}

// duration checks that d lies in [lo, hi].
func (v *validator) duration(key string, d Duration, lo, hi time.Duration) {
	if time.Duration(d) < lo || time.Duration(d) > hi {
		v.add(key, d, fmt.Sprintf("must be between %v and %v", lo, hi))
	}
}

// count checks that n lies in [lo, hi].
func (v *validator) count(key string, n, lo, hi int) {
	if n < lo || n > hi {
		v.add(key, n, fmt.Sprintf("must be between %d and %d", lo, hi))
	}
}

func (c Config) busProblems(v *validator) {
	b := c.Bus
	if !link.Kind(b.Link).Valid() {
		v.add("bus.link", b.Link, "must be one of "+link.KindsText())
	}
	if b.Interface != "" && !link.ValidInterfaceName(b.Interface) {
		v.add("bus.interface", b.Interface, "must be empty (a link inherited with --link-fd) or a network interface name of at most 15 characters without '/', ':' or spaces")
	}
	v.count("bus.expectedslaves", b.ExpectedSlaves, 0, MaxSlaves)
	v.duration("bus.timeout", b.Timeout, MinBusTimeout, MaxBusTimeout)
	v.duration("bus.statetimeout", b.StateTimeout, MinStateTimeout, MaxStateTimeout)
	v.count("bus.alarmcycles", b.AlarmCycles, 0, MaxAlarmCycles)
	period := c.Cycle.Period
	if s := b.DC.Sync0Shift; s < 0 || s >= period {
		v.add("bus.dc.sync0shift", s, fmt.Sprintf("must be at least 0 and less than cycle.period (%v)", period))
	}
	if s := b.DC.Sync1; s < 0 || s >= period {
		v.add("bus.dc.sync1", s, fmt.Sprintf("must be 0 (SYNC1 off) or less than cycle.period (%v)", period))
	}
	v.count("bus.dc.driftframes", b.DC.DriftFrames, 0, MaxDCDriftFrames)
	v.duration("bus.dc.startdelay", b.DC.StartDelay, MinDCStartDelay, MaxDCStartDelay)
	seen := map[int]int{}
	for i, p := range b.PDO {
		key := fmt.Sprintf("bus.pdo[%d]", i)
		v.slave(key+".slave", p.Slave, seen, i, "bus.pdo")
		v.pdos(key+".rxpdos", p.RxPDOs, FirstRxPDO, LastRxPDO)
		v.pdos(key+".txpdos", p.TxPDOs, FirstTxPDO, LastTxPDO)
	}
}

func (c Config) cycleProblems(v *validator) {
	cy := c.Cycle
	v.duration("cycle.period", cy.Period, MinPeriod, MaxPeriod)
	if cy.Core < -1 {
		v.add("cycle.core", cy.Core, "must be -1 (no pinning) or a CPU number")
	}
	if cy.Priority < 0 || cy.Priority > MaxPriority {
		v.add("cycle.priority", cy.Priority, fmt.Sprintf("must be between 1 and %d (SCHED_FIFO), or 0 to keep the normal scheduler", MaxPriority))
	}
	if bw := cy.BusyWait; bw < 0 || bw >= cy.Period {
		v.add("cycle.busywait", bw, fmt.Sprintf("must be at least 0 and less than cycle.period (%v)", cy.Period))
	}
	if rs := cy.RecvSpin; rs < 0 || rs > Duration(time.Second) {
		v.add("cycle.recvspin", rs, "must be between 0 (no spinning) and 1s")
	}
	if x := cy.Exchange; x != ExchangePipelined && x != ExchangeWait {
		v.add("cycle.exchange", x, `must be "pipelined" or "wait"`)
	}
	if p := cy.SHM; !filepath.IsAbs(p) || strings.HasSuffix(p, "/") {
		v.add("cycle.shm", p, "must be an absolute file path, e.g. "+DefaultSHM)
	}
}

// slave checks a ring position and that list configures it once.
func (v *validator) slave(key string, slave int, seen map[int]int, i int, list string) {
	if slave < 0 || slave > MaxRingPosition {
		v.add(key, slave, fmt.Sprintf("must be a ring position between 0 and %d", MaxRingPosition))
		return
	}
	if j, dup := seen[slave]; dup {
		v.add(key, slave, fmt.Sprintf("slave %d is already configured by %s[%d]", slave, list, j))
		return
	}
	seen[slave] = i
}

// pdos checks the rxpdos or txpdos of one slave.
func (v *validator) pdos(key string, pdos []PDO, first, last uint16) {
	seen := map[uint16]int{}
	for j, p := range pdos {
		ikey := fmt.Sprintf("%s[%d].index", key, j)
		value := hex16(p.Index)
		if p.Index < first || p.Index > last {
			v.add(ikey, value, fmt.Sprintf("must be a mapping object 0x%04X..0x%04X", first, last))
		} else if k, dup := seen[p.Index]; dup {
			v.add(ikey, value, fmt.Sprintf("is already assigned by %s[%d]", key, k))
		} else {
			seen[p.Index] = j
		}
		if len(p.Entries) > MaxPDOEntries {
			v.add(fmt.Sprintf("%s[%d].entries", key, j), len(p.Entries), fmt.Sprintf("a PDO maps at most %d entries", MaxPDOEntries))
		}
		for k, e := range p.Entries {
			if e.Bits < 1 || e.Bits > 64 {
				v.add(fmt.Sprintf("%s[%d].entries[%d].bits", key, j, k), e.Bits, "an entry has 1..64 bits")
			}
		}
	}
}

func (c Config) driveProblems(v *validator) {
	seen := map[int]int{}
	for i, d := range c.Drives {
		key := fmt.Sprintf("drives[%d]", i)
		v.slave(key+".slave", d.Slave, seen, i, "drives")
		if !slices.Contains([]string{"csp", "csv", "cst"}, d.Mode) {
			v.add(key+".mode", d.Mode, "must be csp, csv or cst")
		}
		if !slices.Contains([]string{"manual", "auto"}, d.FaultReset) {
			v.add(key+".faultreset", d.FaultReset, "must be manual or auto")
		}
		v.count(key+".settlecycles", d.SettleCycles, 0, MaxSettleCycles)
		d.Target.problems(v, key+".target", d.Mode, time.Duration(c.Cycle.Period))
	}
}

// problems checks a drive's target for its kind and its mode's range.
func (t Target) problems(v *validator, key, mode string, period time.Duration) {
	lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
	if mode == "cst" { // the torque target 0x6071 is 16 bits
		lo, hi = math.MinInt16, math.MaxInt16
	}
	fits := func(sub string, n int) {
		if int64(n) < lo || int64(n) > hi {
			v.add(key+"."+sub, n, fmt.Sprintf("must be between %d and %d (the %s target's range)", lo, hi, mode))
		}
	}
	switch t.Kind {
	case "constant":
		fits("value", t.Value)
	case "ramp":
		if t.Duration <= 0 {
			v.add(key+".duration", t.Duration, "a ramp needs a duration of more than 0")
		}
		fits("from", t.From)
		fits("to", t.To)
	case "sine":
		if time.Duration(t.Period) < 2*period {
			v.add(key+".period", t.Period, fmt.Sprintf("a sine needs a period of at least two cycle periods (%v)", 2*period))
		}
		if t.Amplitude == 0 {
			v.add(key+".amplitude", t.Amplitude, "a sine needs an amplitude other than 0")
		}
		a := int64(t.Amplitude)
		if a < 0 {
			a = -a
		}
		if o := int64(t.Offset); o-a < lo || o+a > hi {
			v.add(key+".amplitude", t.Amplitude, fmt.Sprintf("offset ± amplitude must stay between %d and %d", lo, hi))
		}
	default:
		v.add(key+".kind", t.Kind, "must be constant, ramp or sine")
	}
}

// hex16 shows an object index as it is written: 0x1600.
type hex16 uint16

func (h hex16) String() string { return fmt.Sprintf("0x%04X", uint16(h)) }
