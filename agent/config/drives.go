package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DC configures distributed clocks (bus.dc). The master measures the
// propagation delays, picks the first DC-capable slave as the reference
// clock, and steers its own cycle so that its cyclic frame passes the
// reference clock at the start of each DC cycle (one cycle.period long).
// SYNC0 fires Sync0Shift after that instant in every DC slave, and SYNC1,
// if enabled, Sync1 after SYNC0.
type DC struct {
	// Enabled configures distributed clocks at bring-up.
	Enabled bool `koanf:"enabled" help:"configure distributed clocks: measure propagation delays, pick the first DC slave as reference clock, start SYNC0 in every DC slave"`
	// Sync0Shift is the time from the start of a DC cycle (when the
	// master's frame passes the reference clock) to SYNC0; 0 fires SYNC0
	// as the frame passes.
	Sync0Shift time.Duration `koanf:"sync0shift" help:"time from the start of each DC cycle (the master steers its cycle so that its frame passes the reference clock then) to SYNC0; at least 0 and less than cycle.period"`
	// Sync1 is the SYNC1 offset after SYNC0; 0 leaves SYNC1 off.
	Sync1 time.Duration `koanf:"sync1" help:"SYNC1 fires this long after SYNC0; 0 leaves SYNC1 off; less than cycle.period"`
	// DriftFrames is how many static drift compensation frames (FRMW of
	// the reference clock's system time) are sent before SYNC0 starts; 0
	// sends none (the master's DCConfig.DriftFrames takes -1 for that).
	DriftFrames int `koanf:"driftframes" help:"frames that distribute the reference clock's time before SYNC0 starts, so the slaves' clocks converge (static drift compensation); 0 sends none; up to 1000000"`
	// StartDelay is how far in the future the first SYNC0 is placed.
	StartDelay time.Duration `koanf:"startdelay" help:"how far after the configuration the first SYNC0 fires, leaving time to write the start time to every slave; 1ms..2s"`
}

// Bounds and defaults of bus.dc and drives.
const (
	DefaultDCDriftFrames = 15000
	DefaultDCStartDelay  = 100 * time.Millisecond
	MaxDCDriftFrames     = 1_000_000
	MinDCStartDelay      = time.Millisecond
	MaxDCStartDelay      = 2 * time.Second // the master's bound: ESCs with 32-bit system time see 2³¹ ns ahead
	DefaultSettleCycles  = 10              // drives[].settlecycles when not given
	MaxSettleCycles      = 1_000_000       // largest drives[].settlecycles
	MaxRingPosition      = MaxSlaves - 1
	MaxPDOEntries        = 254 // entries of one PDO mapping object (sub-index 0 is a UINT8 count)
)

func defaultDC() DC {
	return DC{DriftFrames: DefaultDCDriftFrames, StartDelay: DefaultDCStartDelay}
}

// Drive is one CiA 402 drive (an item of drives).
type Drive struct {
	// Slave is the drive's ring position (0 is the first slave).
	Slave int `koanf:"slave" help:"ring position of the drive, 0 for the first slave"`
	// Mode is csp, csv or cst (cyclic synchronous position, velocity,
	// torque).
	Mode string `koanf:"mode" help:"csp, csv or cst: cyclic synchronous position, velocity or torque"`
	// Target is what the drive is commanded once operation is enabled.
	Target Target `koanf:"target" help:"the target once the drive is enabled, in the mode's units: counts (csp, added to the position at enable), counts/s (csv), per mille of rated torque (cst)"`
	// FaultReset is manual (reset on request only) or auto.
	FaultReset string `koanf:"faultreset" help:"manual (reset a fault only on request) or auto (reset every fault, retrying while it persists); default manual"`
	// SettleCycles is how many cycles the target is held after the drive
	// reaches operation enabled.
	SettleCycles int `koanf:"settlecycles" help:"cycles the target is held (at 0, or at the position at enable for csp) after operation enabled before it follows the profile; default 10"`
}

// Target is a drive's set-point profile, a function of the time since the
// drive became operational. Each field serves the kinds named in its use
// tag; a field another kind uses must be left out (or 0).
type Target struct {
	// Kind is constant, ramp or sine.
	Kind string `koanf:"kind" help:"constant (value), ramp (from, to, duration, then holds to) or sine (offset + amplitude·sin(2π·t/period))"`
	// Value is the constant target.
	Value int `koanf:"value" use:"constant" help:"the target of a constant"`
	// From, To and Duration make a ramp.
	From     int           `koanf:"from" use:"ramp" help:"where a ramp starts"`
	To       int           `koanf:"to" use:"ramp" help:"where a ramp ends and then stays"`
	Duration time.Duration `koanf:"duration" use:"ramp" help:"how long a ramp takes, more than 0"`
	// Offset, Amplitude and Period make a sine.
	Offset    int           `koanf:"offset" use:"sine" help:"centre of a sine"`
	Amplitude int           `koanf:"amplitude" use:"sine" help:"amplitude of a sine, not 0"`
	Period    time.Duration `koanf:"period" use:"sine" help:"period of a sine, at least two cycle periods"`
}

// Drive modes, target kinds and fault reset policies, as written.
var (
	driveModes  = []string{"csp", "csv", "cst"}
	targetKinds = []string{"constant", "ramp", "sine"}
	faultResets = []string{"manual", "auto"}
)

// defaultDrive is a drives item before its keys are read.
func defaultDrive() Drive {
	return Drive{FaultReset: "manual", SettleCycles: DefaultSettleCycles}
}

// SlavePDOs is the PDO configuration of one slave (an item of bus.pdo).
type SlavePDOs struct {
	// Slave is the ring position.
	Slave int `koanf:"slave" help:"ring position of the slave, 0 for the first"`
	// RxPDOs are the output PDOs (master to slave), assigned to SM2 in
	// this order.
	RxPDOs []PDO `koanf:"rxpdos" help:"RxPDOs (outputs) assigned to sync manager 2, in order"`
	// TxPDOs are the input PDOs (slave to master), assigned to SM3 in
	// this order.
	TxPDOs []PDO `koanf:"txpdos" help:"TxPDOs (inputs) assigned to sync manager 3, in order"`
}

// PDO is one PDO: its mapping object and, optionally, its new mapping.
type PDO struct {
	// Index is the PDO's mapping object: 0x1600..0x17FF for an RxPDO,
	// 0x1A00..0x1BFF for a TxPDO.
	Index uint16 `koanf:"index" help:"the PDO mapping object, 0x1600..0x17FF (RxPDO) or 0x1A00..0x1BFF (TxPDO)"`
	// Entries is the new mapping; empty assigns the PDO with the mapping
	// the slave has.
	Entries []PDOEntry `koanf:"entries" help:"the mapped objects as \"INDEX:SUB/BITS\" in hex, e.g. \"0x6040:00/16\" (\"0x0000:00/8\" is a gap); empty keeps the slave's mapping and only assigns the PDO"`
}

// PDOEntry is one mapped object, written "0x6040:00/16".
type PDOEntry struct {
	Index    uint16
	SubIndex uint8
	Bits     int
}

// String writes the entry as it is configured: 0x6040:00/16.
func (e PDOEntry) String() string {
	return fmt.Sprintf("0x%04X:%02X/%d", e.Index, e.SubIndex, e.Bits)
}

// MarshalText writes the entry as [PDOEntry.String] does.
func (e PDOEntry) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText parses "INDEX:SUB/BITS": a hex index and sub-index (the
// 0x prefix is optional) and 1 to 64 bits in decimal.
func (e *PDOEntry) UnmarshalText(text []byte) error {
	p, err := ParsePDOEntry(string(text))
	if err != nil {
		return err
	}
	*e = p
	return nil
}

// ParsePDOEntry parses "INDEX:SUB/BITS", e.g. "0x6040:00/16" or
// "60FF:0/32".
func ParsePDOEntry(s string) (PDOEntry, error) {
	const want = `must be INDEX:SUB/BITS with a hex index and sub-index and 1..64 bits, e.g. "0x6040:00/16"`
	obj, bitsText, ok := strings.Cut(strings.TrimSpace(s), "/")
	indexText, subText, ok2 := strings.Cut(obj, ":")
	if !ok || !ok2 {
		return PDOEntry{}, fmt.Errorf("%s", want)
	}
	hex := func(t string, size int) (uint64, bool) {
		t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
		v, err := strconv.ParseUint(t, 16, size)
		return v, err == nil && t != ""
	}
	index, okIndex := hex(indexText, 16)
	sub, okSub := hex(subText, 8)
	bits, err := strconv.Atoi(bitsText)
	if !okIndex || !okSub || err != nil {
		return PDOEntry{}, fmt.Errorf("%s", want)
	}
	if bits < 1 || bits > 64 {
		return PDOEntry{}, fmt.Errorf("%d bits: an entry has 1..64 bits", bits)
	}
	return PDOEntry{Index: uint16(index), SubIndex: uint8(sub), Bits: bits}, nil
}

// PDO mapping object ranges.
const (
	FirstRxPDO, LastRxPDO uint16 = 0x1600, 0x17FF
	FirstTxPDO, LastTxPDO uint16 = 0x1A00, 0x1BFF
)

// motionProblems checks bus.dc, bus.pdo and drives.
func (c Config) motionProblems() []*FieldError {
	var out []*FieldError
	add := func(key string, value any, problem string) {
		out = append(out, &FieldError{Key: key, Value: formatValue(value), Problem: problem})
	}
	period := c.Cycle.Period
	dc := c.Bus.DC
	if s := dc.Sync0Shift; s < 0 || s >= period {
		add("bus.dc.sync0shift", s, fmt.Sprintf("must be at least 0 and less than cycle.period (%s)", formatDuration(period)))
	}
	if s := dc.Sync1; s < 0 || s >= period {
		add("bus.dc.sync1", s, fmt.Sprintf("must be 0 (SYNC1 off) or an offset after SYNC0 less than cycle.period (%s)", formatDuration(period)))
	}
	if n := dc.DriftFrames; n < 0 || n > MaxDCDriftFrames {
		add("bus.dc.driftframes", n, fmt.Sprintf("must be between 0 and %d", MaxDCDriftFrames))
	}
	if !inRange(dc.StartDelay, MinDCStartDelay, MaxDCStartDelay) {
		add("bus.dc.startdelay", dc.StartDelay, betweenDurations(MinDCStartDelay, MaxDCStartDelay))
	}

	seen := map[int]int{}
	for i, p := range c.Bus.PDO {
		key := fmt.Sprintf("bus.pdo[%d]", i)
		out = append(out, c.slaveProblem(key+".slave", p.Slave, seen, i, "bus.pdo")...)
		out = append(out, pdoListProblems(key+".rxpdos", p.RxPDOs, FirstRxPDO, LastRxPDO, "an RxPDO")...)
		out = append(out, pdoListProblems(key+".txpdos", p.TxPDOs, FirstTxPDO, LastTxPDO, "a TxPDO")...)
	}

	seen = map[int]int{}
	for i, d := range c.Drives {
		key := fmt.Sprintf("drives[%d]", i)
		out = append(out, c.slaveProblem(key+".slave", d.Slave, seen, i, "drives")...)
		if !slices.Contains(driveModes, d.Mode) {
			add(key+".mode", d.Mode, "must be csp, csv or cst")
		}
		if !slices.Contains(faultResets, d.FaultReset) {
			add(key+".faultreset", d.FaultReset, "must be manual or auto")
		}
		if n := d.SettleCycles; n < 0 || n > MaxSettleCycles {
			add(key+".settlecycles", n, fmt.Sprintf("must be between 0 and %d", MaxSettleCycles))
		}
		out = append(out, d.Target.problems(key+".target", d.Mode, period)...)
	}
	return out
}

// slaveProblem checks a ring position: in range, within the simulated
// segment or bus.expectedslaves, and not configured twice in list.
func (c Config) slaveProblem(key string, slave int, seen map[int]int, i int, list string) []*FieldError {
	fe := func(problem string) []*FieldError {
		return []*FieldError{{Key: key, Value: strconv.Itoa(slave), Problem: problem}}
	}
	switch {
	case slave < 0 || slave > MaxRingPosition:
		return fe(fmt.Sprintf("must be a ring position between 0 and %d", MaxRingPosition))
	case c.Simulated() && len(c.Bus.Devices) > 0 && slave >= len(c.Bus.Devices):
		return fe(fmt.Sprintf("no such slave: the simulated segment (bus.devices) has %d devices, at ring positions 0..%d", len(c.Bus.Devices), len(c.Bus.Devices)-1))
	case c.Bus.ExpectedSlaves > 0 && slave >= c.Bus.ExpectedSlaves:
		return fe(fmt.Sprintf("no such slave: bus.expectedslaves is %d, so ring positions are 0..%d", c.Bus.ExpectedSlaves, c.Bus.ExpectedSlaves-1))
	}
	if j, dup := seen[slave]; dup {
		return fe(fmt.Sprintf("slave %d is already configured by %s[%d]", slave, list, j))
	}
	seen[slave] = i
	return nil
}

// pdoListProblems checks the rxpdos or txpdos of one slave.
func pdoListProblems(key string, pdos []PDO, first, last uint16, what string) []*FieldError {
	var out []*FieldError
	seen := map[uint16]int{}
	for j, p := range pdos {
		ikey := fmt.Sprintf("%s[%d].index", key, j)
		value := fmt.Sprintf("0x%04X", p.Index)
		switch {
		case p.Index < first || p.Index > last:
			out = append(out, &FieldError{Key: ikey, Value: value,
				Problem: fmt.Sprintf("must be %s mapping object, 0x%04X..0x%04X", what, first, last)})
		case seen[p.Index] > 0:
			out = append(out, &FieldError{Key: ikey, Value: value,
				Problem: fmt.Sprintf("is already assigned by %s[%d]", key, seen[p.Index]-1)})
		default:
			seen[p.Index] = j + 1
		}
		if len(p.Entries) > MaxPDOEntries {
			out = append(out, &FieldError{Key: fmt.Sprintf("%s[%d].entries", key, j), Value: fmt.Sprintf("%d entries", len(p.Entries)),
				Problem: fmt.Sprintf("a PDO maps at most %d entries", MaxPDOEntries)})
		}
		for k, e := range p.Entries {
			if e.Bits < 1 || e.Bits > 64 {
				out = append(out, &FieldError{Key: fmt.Sprintf("%s[%d].entries[%d]", key, j, k), Value: e.String(),
					Problem: "an entry has 1..64 bits"})
			}
		}
	}
	return out
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
func (t Target) problems(key, mode string, period time.Duration) []*FieldError {
	var out []*FieldError
	add := func(sub string, value any, problem string) {
		out = append(out, &FieldError{Key: key + "." + sub, Value: formatValue(value), Problem: problem})
	}
	if !slices.Contains(targetKinds, t.Kind) {
		add("kind", t.Kind, "must be constant, ramp or sine")
		return out
	}
	// A field of another kind is a mistake (a ramp with a period).
	for _, f := range itemFields(t) {
		if f.use != "" && !slices.Contains(strings.Split(f.use, ","), t.Kind) && !f.value.IsZero() {
			add(f.name, f.value.Interface(), fmt.Sprintf("a %s target does not use %s; it uses %s", t.Kind, f.name, kindFieldNames(t, t.Kind)))
		}
	}
	lo, hi, why := targetLimits(mode)
	fits := func(sub string, v int64) {
		if v < lo || v > hi {
			add(sub, v, fmt.Sprintf("must be between %d and %d (%s)", lo, hi, why))
		}
	}
	switch t.Kind {
	case "constant":
		fits("value", int64(t.Value))
	case "ramp":
		if t.Duration <= 0 {
			add("duration", t.Duration, "a ramp needs a duration of more than 0")
		}
		fits("from", int64(t.From))
		fits("to", int64(t.To))
	case "sine":
		if t.Period < 2*period {
			add("period", t.Period, fmt.Sprintf("a sine needs a period of at least two cycle periods (%s)", formatDuration(2*period)))
		}
		if t.Amplitude == 0 {
			add("amplitude", t.Amplitude, "a sine needs an amplitude other than 0 (use kind constant for a fixed target)")
		}
		fits("offset", int64(t.Offset))
		a := int64(t.Amplitude)
		if a < 0 {
			a = -a
		}
		if o := int64(t.Offset); o-a < lo || o+a > hi {
			add("amplitude", t.Amplitude, fmt.Sprintf("offset ± amplitude must stay between %d and %d (%s)", lo, hi, why))
		}
	}
	return out
}

// kindFieldNames lists the keys a target kind uses: "from, to and
// duration".
func kindFieldNames(t Target, kind string) string {
	var names []string
	for _, f := range itemFields(t) {
		if slices.Contains(strings.Split(f.use, ","), kind) {
			names = append(names, f.name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
