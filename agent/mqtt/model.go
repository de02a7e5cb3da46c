package mqtt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/ruleparse"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// Bus describes the segment to the publisher. The agent builds it from
// the bus description the cycle process wrote (contract.BusInfo).
type Bus struct {
	// OutputBytes and InputBytes size the two areas of the process image
	// (outputs first, then inputs), as the snapshot holds it.
	OutputBytes, InputBytes int
	Slaves                  []Slave
}

// Slave is one slave of the Bus.
type Slave struct {
	Position                                int
	OrderCode                               string // e.g. "EL2004"
	DeviceName                              string // e.g. "EL2004 4K. Dig. Ausgang 24V, 0.5A"
	VendorID, ProductCode, Revision, Serial uint32
	// InputOffset and OutputOffset locate the slave's first bit in the
	// input and output area; InputBits and OutputBits count its bits.
	InputOffset, OutputOffset int
	InputBits, OutputBits     int
	// Entries are the PDO entries of its process data. Without them the
	// slave's process data is published byte by byte.
	Entries []Entry
}

// Entry is one PDO entry of a slave's process data.
type Entry struct {
	Output   bool
	PDO      uint16
	PDOName  string
	Index    uint16
	SubIndex uint8
	Name     string
	DataType uint8 // ETG.1000.6 base data type
	Bits     int
	Offset   int    // first bit, counted from the slave's first input (output) bit
	Unit     string // the unit the device's ESI gives the entry (bus.esi), "" for none
}

// ValueType is how a signal's value is published.
type ValueType uint8

// Value types. The zero value is invalid.
const (
	TypeInvalid ValueType = iota
	TypeBool
	TypeInt
	TypeUint
	TypeFloat
)

// String names t as the configuration and the meta payload do.
func (t ValueType) String() string {
	switch t {
	case TypeBool:
		return "bool"
	case TypeInt:
		return "int"
	case TypeUint:
		return "uint"
	case TypeFloat:
		return "float"
	}
	return "invalid"
}

func parseValueType(s string) ValueType {
	for t := TypeBool; t <= TypeFloat; t++ {
		if t.String() == s {
			return t
		}
	}
	return TypeInvalid
}

// Signal is one published value of a device.
type Signal struct {
	// Name is the published name, unique within the device.
	Name string
	// DefaultName is the name derived from the SII, which rules may use.
	DefaultName string
	Output      bool
	Type        ValueType
	Unit        string
	// Value = raw × Scale + Offset when Scaled; raw otherwise.
	Scale, Offset float64
	Scaled        bool
	// Deadband is the change (in engineering units) that triggers an
	// on-change publication; 0 means any change.
	Deadband float64
	// Bits and BitOffset locate the raw value within the slave's inputs
	// or outputs (BitOffset as shm.Command.BitOffset counts).
	Bits, BitOffset int
	// Signed and Real describe the raw bits: two's complement, IEEE float.
	Signed, Real bool
	Entry        Entry
	// Writable outputs may be set from MQTT, within [Min, Max]
	// (engineering units).
	Writable bool
	Min, Max float64
	// Alias is the signal's Sparkplug metric alias.
	Alias uint64

	bit int // first bit in the snapshot (outputs, then inputs)
}

// Device is one slave as the publisher presents it.
type Device struct {
	Slave Slave
	// Name is the published name, a topic level, unique on the bus.
	Name string
	// DefaultName is <order code>-<position>, which rules may use.
	DefaultName string
	Interval    time.Duration
	OnChange    bool
	Signals     []Signal
	// FaultReset allows the drive fault reset command from MQTT
	// (mqtt.writes.allow names <slave>/drive-fault-reset; "*" does not).
	FaultReset bool
}

// DriveFaultReset is the pseudo-signal of the drive fault reset command:
// a message on <root>/set/<slave>/drive-fault-reset asks the slave's CiA
// 402 drive helper to reset the drive's fault.
const DriveFaultReset = "drive-fault-reset"

// Rules are the configuration's say on names, rates, types and writes.
type Rules struct {
	// Interval and OnChange are the defaults for every slave.
	Interval time.Duration
	OnChange bool
	Slaves   []ruleparse.SlaveRule
	Signals  []ruleparse.SignalRule
	Writes   []ruleparse.WriteRule
}

// Model is the bus as published: devices and their signals.
type Model struct {
	Devices []Device
	// ImageBytes is the size of the snapshot the signals index.
	ImageBytes int
}

// NewModel builds the published view of bus under rules. Rules that name
// no slave or signal of the bus are returned as problems (the bus may
// differ from what the configuration was written for); the model is
// usable anyway.
func NewModel(bus Bus, rules Rules) (*Model, []error) {
	m := &Model{ImageBytes: bus.OutputBytes + bus.InputBytes}
	for _, s := range bus.Slaves {
		d := Device{Slave: s, DefaultName: defaultSlaveName(s), Interval: rules.Interval, OnChange: rules.OnChange}
		d.Name = d.DefaultName
		d.Signals = signalsOf(s, bus.OutputBytes)
		m.Devices = append(m.Devices, d)
	}
	var problems []error
	for _, r := range rules.Slaves {
		problems = append(problems, m.applySlaveRule(r)...)
	}
	problems = append(problems, m.dedupeDeviceNames()...)
	for _, r := range rules.Signals {
		problems = append(problems, m.applySignalRule(r)...)
	}
	for i := range m.Devices {
		dedupeSignalNames(&m.Devices[i])
	}
	for _, r := range rules.Writes {
		problems = append(problems, m.applyWriteRule(r)...)
	}
	alias := uint64(1)
	for i := range m.Devices {
		for k := range m.Devices[i].Signals {
			m.Devices[i].Signals[k].Alias = alias
			alias++
		}
	}
	return m, problems
}

// applySlaveRule renames a slave, or sets its interval or on-change
// publication (mqtt.slaves).
func (m *Model) applySlaveRule(r ruleparse.SlaveRule) []error {
	d := m.findDevice(r.Slave, false)
	if d == nil {
		return []error{fmt.Errorf("mqtt.slaves: no slave %q on the bus", r.Slave)}
	}
	if r.Name != "" {
		d.Name = r.Name
	}
	if r.Interval > 0 {
		d.Interval = r.Interval
	}
	if r.HasOnChange {
		d.OnChange = r.OnChange
	}
	return nil
}

// dedupeDeviceNames gives a slave renamed like one before it its default
// name back.
func (m *Model) dedupeDeviceNames() []error {
	var problems []error
	seen := map[string]bool{}
	for i := range m.Devices {
		d := &m.Devices[i]
		if seen[d.Name] {
			problems = append(problems, fmt.Errorf("mqtt.slaves: two slaves named %q; keeping %s for the second", d.Name, d.DefaultName))
			d.Name = d.DefaultName
		}
		seen[d.Name] = true
	}
	return problems
}

// applySignalRule names, types or scales a signal (mqtt.signals).
func (m *Model) applySignalRule(r ruleparse.SignalRule) []error {
	d := m.findDevice(r.Slave, true)
	if d == nil {
		return []error{fmt.Errorf("mqtt.signals: no slave %q on the bus", r.Slave)}
	}
	s := d.findSignal(r.Signal)
	if s == nil {
		return []error{fmt.Errorf("mqtt.signals: slave %s has no signal %q (it has %s)", d.Name, r.Signal, d.signalNames())}
	}
	if err := s.apply(r); err != nil {
		return []error{fmt.Errorf("mqtt.signals: %s/%s: %w", d.Name, s.Name, err)}
	}
	return nil
}

// applyWriteRule makes the outputs a rule names writable, within its
// bounds, or allows a slave's drive fault reset (mqtt.writes.allow).
func (m *Model) applyWriteRule(r ruleparse.WriteRule) []error {
	d := m.findDevice(r.Slave, true)
	if d == nil {
		return []error{fmt.Errorf("mqtt.writes.allow: no slave %q on the bus", r.Slave)}
	}
	if r.Signal == DriveFaultReset {
		d.FaultReset = true
		return nil
	}
	matched := false
	for k := range d.Signals {
		s := &d.Signals[k]
		if !s.Output || (r.Signal != "*" && r.Signal != s.Name && r.Signal != s.DefaultName) {
			continue
		}
		matched = true
		s.Writable = true
		s.Min, s.Max = s.bounds()
		if r.Limited {
			s.Min, s.Max = max(s.Min, r.Min), min(s.Max, r.Max)
		}
	}
	if !matched {
		return []error{fmt.Errorf("mqtt.writes.allow: slave %s has no output %q", d.Name, r.Signal)}
	}
	return nil
}

// Device returns the device published as name.
func (m *Model) Device(name string) *Device {
	for i := range m.Devices {
		if m.Devices[i].Name == name {
			return &m.Devices[i]
		}
	}
	return nil
}

// findDevice finds a rule's slave: a ring position, the default name, or
// (when published is set) the published name.
func (m *Model) findDevice(ref string, published bool) *Device {
	pos, isPos := ruleparse.IsPosition(ref)
	for i := range m.Devices {
		d := &m.Devices[i]
		if (isPos && d.Slave.Position == pos) || d.DefaultName == ref || (published && d.Name == ref) {
			return d
		}
	}
	return nil
}

// Signal returns the device's signal published as name.
func (d *Device) Signal(name string) *Signal {
	for i := range d.Signals {
		if d.Signals[i].Name == name {
			return &d.Signals[i]
		}
	}
	return nil
}

func (d *Device) findSignal(ref string) *Signal {
	if s := d.Signal(ref); s != nil {
		return s
	}
	for i := range d.Signals {
		if d.Signals[i].DefaultName == ref {
			return &d.Signals[i]
		}
	}
	return nil
}

func (d *Device) signalNames() string {
	if len(d.Signals) == 0 {
		return "no signals"
	}
	names := make([]string, len(d.Signals))
	for i, s := range d.Signals {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// dedupeSignalNames makes the device's signal names unique by numbering
// repeats (name_2, name_3, …).
func dedupeSignalNames(d *Device) {
	seen := map[string]int{}
	for i := range d.Signals {
		s := &d.Signals[i]
		seen[s.Name]++
		if n := seen[s.Name]; n > 1 {
			s.Name += "_" + strconv.Itoa(n)
		}
	}
}

// defaultSlaveName is <order code>-<position>, e.g. EL2004-1, made safe as
// a topic level.
func defaultSlaveName(s Slave) string {
	order := strings.Map(func(r rune) rune {
		if r <= ' ' || r == '/' || r == '+' || r == '#' || r == 0x7F {
			return '_'
		}
		return r
	}, s.OrderCode)
	if order == "" {
		order = "slave"
	}
	return order + "-" + strconv.Itoa(s.Position)
}

// signalsOf derives the signals of one slave from its PDO entries, or, when
// the bus description lacks them, one byte-wide signal per process-data
// byte.
func signalsOf(s Slave, outputBytes int) []Signal {
	entries := s.Entries
	if len(entries) == 0 {
		entries = byteEntries(s)
	}
	out := make([]Signal, 0, len(entries))
	for _, e := range entries {
		sig := Signal{Entry: e, Output: e.Output, Bits: e.Bits, BitOffset: e.Offset, Scale: 1}
		sig.DefaultName = entryName(e)
		sig.Name = sig.DefaultName
		sig.Type, sig.Signed, sig.Real = typeOf(e)
		sig.Unit = e.Unit // the raw value's unit, from the ESI; a catalogue scaling below replaces it
		if e.Output {
			sig.bit = s.OutputOffset + e.Offset
		} else {
			sig.bit = 8*outputBytes + s.InputOffset + e.Offset
		}
		if c, ok := lookupCatalog(s.OrderCode, e); ok {
			sig.Unit, sig.Scale, sig.Scaled, sig.Type = c.unit, c.scale, true, TypeFloat
		}
		out = append(out, sig)
	}
	return out
}

// byteEntries makes one unsigned 8-bit entry per process-data byte (fewer
// bits for the last one) for a slave whose PDO entries are unknown.
func byteEntries(s Slave) []Entry {
	var out []Entry
	for _, dir := range []struct {
		output bool
		bits   int
		name   string
	}{{true, s.OutputBits, "output"}, {false, s.InputBits, "input"}} {
		for off := 0; off < dir.bits; off += 8 {
			out = append(out, Entry{Output: dir.output, Name: fmt.Sprintf("%s byte %d", dir.name, off/8),
				DataType: 5, Bits: min(8, dir.bits-off), Offset: off})
		}
	}
	return out
}

// entryName derives a signal name from the PDO and entry names of the SII:
// "Channel 1" + "Input" → channel_1.input.
func entryName(e Entry) string {
	pdo, entry := normalize(e.PDOName), normalize(e.Name)
	switch {
	case entry == "":
		return fmt.Sprintf("0x%04x_%02x", e.Index, e.SubIndex)
	case pdo == "":
		return entry
	}
	return pdo + "." + entry
}

// normalize lower-cases s and turns every run of characters other than
// ASCII letters and digits into one '_'.
func normalize(s string) string {
	var b strings.Builder
	pending := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if pending && b.Len() > 0 {
				b.WriteByte('_')
			}
			pending = false
			b.WriteRune(r)
			continue
		}
		pending = true
	}
	return b.String()
}

// typeOf maps an ETG.1000.6 base data type onto a value type.
func typeOf(e Entry) (t ValueType, signed, real bool) {
	if e.Bits == 1 {
		return TypeBool, false, false
	}
	switch e.DataType {
	case 0x01: // BOOL
		return TypeBool, false, false
	case 0x02, 0x03, 0x04, 0x10, 0x12, 0x13, 0x14, 0x15: // INT8 INT16 INT32 INT24 INT40 INT48 INT56 INT64
		return TypeInt, true, false
	case 0x08: // REAL32
		if e.Bits == 32 {
			return TypeFloat, false, true
		}
	case 0x11: // REAL64
		if e.Bits == 64 {
			return TypeFloat, false, true
		}
	}
	return TypeUint, false, false
}

// apply applies a signal rule.
func (s *Signal) apply(r ruleparse.SignalRule) error {
	if r.Name != "" {
		s.Name = r.Name
	}
	if r.Unit != "" {
		s.Unit = r.Unit
	}
	if r.Type != "" {
		t := parseValueType(r.Type)
		if t == TypeInvalid {
			return fmt.Errorf("unknown type %q", r.Type)
		}
		if s.Real && t != TypeFloat {
			return fmt.Errorf("type %s: the raw value is a floating-point number", r.Type)
		}
		s.Type = t
		switch t {
		case TypeInt:
			s.Signed = true
		case TypeUint:
			s.Signed = false
		}
		if t != TypeFloat {
			s.Scaled, s.Scale, s.Offset = false, 1, 0
		}
	}
	if r.HasScale {
		s.Scale, s.Scaled = r.Scale, true
	}
	if r.HasOffset {
		s.Offset, s.Scaled = r.Offset, true
	}
	if s.Scaled {
		if s.Type == TypeBool {
			return fmt.Errorf("a bool cannot be scaled")
		}
		s.Type = TypeFloat
	}
	if r.HasDeadband {
		s.Deadband = r.Deadband
	}
	return nil
}

// bounds returns the engineering values the raw bits can hold.
func (s *Signal) bounds() (lo, hi float64) {
	switch {
	case s.Type == TypeBool:
		return 0, 1
	case s.Real:
		if s.Bits == 32 {
			return -math.MaxFloat32, math.MaxFloat32
		}
		return -math.MaxFloat64, math.MaxFloat64
	}
	rlo, rhi := s.rawRange()
	lo, hi = rlo, rhi
	if s.Scaled {
		lo, hi = rlo*s.Scale+s.Offset, rhi*s.Scale+s.Offset
		if lo > hi {
			lo, hi = hi, lo
		}
	}
	return lo, hi
}

// rawRange returns the smallest and largest raw integer of the signal.
func (s *Signal) rawRange() (lo, hi float64) {
	n := min(s.Bits, 64)
	if s.Signed {
		return -math.Ldexp(1, n-1), math.Ldexp(1, n-1) - 1
	}
	return 0, math.Ldexp(1, n) - 1
}

// DataType returns the Sparkplug datatype the signal is published with.
func (s *Signal) DataType() sparkplug.DataType {
	switch s.Type {
	case TypeBool:
		return sparkplug.Boolean
	case TypeFloat:
		return sparkplug.Double
	case TypeInt:
		switch {
		case s.Bits <= 8:
			return sparkplug.Int8
		case s.Bits <= 16:
			return sparkplug.Int16
		case s.Bits <= 32:
			return sparkplug.Int32
		}
		return sparkplug.Int64
	}
	switch {
	case s.Bits <= 8:
		return sparkplug.UInt8
	case s.Bits <= 16:
		return sparkplug.UInt16
	case s.Bits <= 32:
		return sparkplug.UInt32
	}
	return sparkplug.UInt64
}
