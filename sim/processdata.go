package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ecagent/ecagent/ethercat/bitfield"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// PatternKind selects how a device's inputs change from cycle to cycle. A
// cycle is a frame that carries a logical command (LRD, LWR, LRW).
type PatternKind uint8

// Input patterns.
const (
	// PatternConstant keeps the inputs as SetInputs left them.
	PatternConstant PatternKind = iota + 1
	// PatternCounter counts cycles: digital channels show the counter's
	// bits, analog channels a ramp over their range.
	PatternCounter
	// PatternWalkingBit sets one channel at a time, moving each cycle.
	PatternWalkingBit
	// PatternSquare switches all channels between off (or the range's
	// low end) and on (high end) every Period/2 cycles.
	PatternSquare
	// PatternSine follows a sine of Period cycles, each channel shifted by
	// Period/channels; digital channels are on during the positive half.
	PatternSine
)

// Pattern is an input pattern: a kind and, for square and sine, a period in
// cycles (2 or more).
type Pattern struct {
	Kind   PatternKind
	Period int
}

var patternNames = map[PatternKind]string{
	PatternConstant: "constant", PatternCounter: "counter", PatternWalkingBit: "walk",
	PatternSquare: "square", PatternSine: "sine",
}

// String renders p as ParsePattern accepts it, e.g. "square:100".
func (p Pattern) String() string {
	n := patternNames[p.Kind]
	if p.Kind == PatternSquare || p.Kind == PatternSine {
		return n + ":" + strconv.Itoa(p.Period)
	}
	return n
}

// ParsePattern parses "constant", "counter", "walk", "square:N" or
// "sine:N" (N the period in cycles, default 100).
func ParsePattern(s string) (Pattern, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	for k, n := range patternNames {
		if n != name {
			continue
		}
		p := Pattern{Kind: k, Period: 100}
		if hasArg {
			if k != PatternSquare && k != PatternSine {
				return Pattern{}, fmt.Errorf("sim: input pattern %q takes no period", name)
			}
			v, err := strconv.Atoi(arg)
			if err != nil || v < 2 {
				return Pattern{}, fmt.Errorf("sim: input pattern %q: period %q is not a whole number of cycles ≥ 2", name, arg)
			}
			p.Period = v
		}
		return p, nil
	}
	return Pattern{}, fmt.Errorf("sim: unknown input pattern %q (want constant, counter, walk, square:N or sine:N)", s)
}

// analogRange is the span of an analog input channel's values.
type analogRange struct{ lo, hi int }

// pdSyncManager is a process-data SyncManager as the device's current PDO
// assignment sizes it.
type pdSyncManager struct {
	sm    int  // SII SyncManager index
	out   bool // outputs (the master writes), else inputs
	start int  // the SII's start address
	bits  int  // bits of the PDOs assigned to it
}

// pdEntry is one PDO entry where the current PDO assignment puts it.
type pdEntry struct {
	index uint16 // object mapped, 0 for a gap
	sub   uint8
	bits  int
	out   bool
	sm    int // SII SyncManager index
	bit   int // offset in that SyncManager's process data
	// again marks an output entry whose object an earlier output entry
	// maps too (the real AKD's four assigned RxPDOs each carry the
	// controlword): the application takes the first.
	again bool
}

// processData locates a device's process data: the process-data
// SyncManagers of both directions with the PDO entries assigned to them,
// and the input channels a pattern drives.
//
// A device's output (input) process data, as Outputs (Inputs) shows it, is
// the bits of its output (input) SyncManagers' PDOs one SyncManager after
// the other in SyncManager order, each SyncManager's in the order of its
// PDOs and their entries. The bits of one SyncManager follow those of the
// one before without a gap: the padding of a SyncManager whose PDOs do not
// fill its last byte is not part of it. That is the order in which a
// master with bit-granular FMMUs lays a device's bits out in its process
// image.
type processData struct {
	sms      []pdSyncManager // SyncManager order, both directions
	entries  []pdEntry       // SyncManager order, then PDO order
	channels []int           // indexes into entries: the input channels
	inBits   int
	outBits  int
	analog   analogRange
	pattern  Pattern
	cycle    uint64
}

func newProcessData(analog analogRange) processData {
	pd := processData{analog: analog, pattern: Pattern{Kind: PatternConstant}}
	if pd.analog == (analogRange{}) {
		pd.analog = analogRange{0, 0x7FFF}
	}
	return pd
}

// layoutProcessData lays out the device's process data from the current
// PDO assignment: the object dictionary's (0x1C10+n, then the PDO mapping
// objects it lists) for a device with CoE, else the SII's (each PDO names
// its SyncManager). The input channels are the input entries of 8 bits or
// more when there are such (analog values; the status bits around them do
// not count), else the single bits. It reuses the slices' storage, so a
// layout that does not grow allocates nothing.
func (d *Device) layoutProcessData() {
	pd := &d.pd
	pd.sms, pd.entries, pd.channels = pd.sms[:0], pd.entries[:0], pd.channels[:0]
	pd.inBits, pd.outBits = 0, 0
	for i, sm := range d.sii.SyncManagers {
		if !sm.Type.IsProcessData() {
			continue
		}
		out := sm.Type == sii.SMProcessDataOut
		first := len(pd.entries)
		assigned := false
		if d.mbx != nil {
			pd.entries, assigned = d.mbx.od.appendAssigned(pd.entries, i)
		}
		if !assigned {
			pd.entries = appendSIIAssigned(pd.entries, d.sii, i)
		}
		bits := 0
		for k := first; k < len(pd.entries); k++ {
			e := &pd.entries[k]
			e.out, e.sm, e.bit = out, i, bits
			bits += e.bits
			e.again = false
			for j := range k {
				if o := &pd.entries[j]; out && o.out && e.index != 0 && o.index == e.index && o.sub == e.sub {
					e.again = true
					break
				}
			}
		}
		pd.sms = append(pd.sms, pdSyncManager{sm: i, out: out, start: int(sm.StartAddress), bits: bits})
		if out {
			pd.outBits += bits
		} else {
			pd.inBits += bits
		}
	}
	analog := false
	for _, e := range pd.entries {
		if !e.out && e.index != 0 && e.bits >= 8 {
			analog = true
		}
	}
	for k, e := range pd.entries {
		if !e.out && e.index != 0 && (e.bits >= 8) == analog {
			pd.channels = append(pd.channels, k)
		}
	}
}

// appendSIIAssigned appends the entries of the PDOs the SII assigns to
// SyncManager sm, in the SII's order.
func appendSIIAssigned(dst []pdEntry, desc *sii.Device, sm int) []pdEntry {
	for _, l := range [2][]sii.PDO{desc.RxPDOs, desc.TxPDOs} {
		for _, p := range l {
			if int(p.SyncManager) != sm {
				continue
			}
			for _, e := range p.Entries {
				dst = append(dst, pdEntry{index: e.Index, sub: e.SubIndex, bits: int(e.BitLength)})
			}
		}
	}
	return dst
}

// smArea returns the current start of SII SyncManager sm's area: where
// the master put it, or the SII's address while it is disabled.
func (d *Device) smArea(sm int) int {
	if sm < d.nsm && d.sms[sm].on {
		return d.sms[sm].start
	}
	return int(d.sii.SyncManagers[sm].StartAddress)
}

// gatherProcessData returns a copy of the device's output (out) or input
// process data, or nil when it has none in that direction.
func (d *Device) gatherProcessData(out bool) []byte {
	n := d.pd.inBits
	if out {
		n = d.pd.outBits
	}
	if n == 0 {
		return nil
	}
	b := make([]byte, (n+7)/8)
	at := 0
	for _, s := range d.pd.sms {
		if s.out == out {
			bitfield.Copy(b, at, d.mem.b[:], d.smArea(s.sm)*8, s.bits)
			at += s.bits
		}
	}
	return b
}

// Outputs returns a copy of the device's output process data as the
// master last wrote it completely: the bits of the PDOs assigned to its
// output SyncManagers, one SyncManager after the other in SyncManager
// order with no padding between them, so that bit i is the i-th output bit
// a master with bit-granular FMMUs maps for the device (for SyncManagers
// of whole bytes, such as the EL2889's two, the concatenation of their
// buffers). It is OutputSize bytes long, nil for a device without outputs.
// A SyncManager's part changes only when one datagram writes that
// SyncManager's whole area (3-buffer mode).
func (d *Device) Outputs() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gatherProcessData(true)
}

// Inputs returns a copy of the device's input process data as the master
// reads it, laid out like Outputs (the input SyncManagers' PDO bits in
// SyncManager order, no padding between them), InputSize bytes long, or
// nil for a device without inputs.
func (d *Device) Inputs() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gatherProcessData(false)
}

// OutputSize returns the size in bytes of the device's output process data
// (its output bits rounded up to whole bytes).
func (d *Device) OutputSize() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return (d.pd.outBits + 7) / 8
}

// InputSize returns the size in bytes of the device's input process data
// (its input bits rounded up to whole bytes).
func (d *Device) InputSize() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return (d.pd.inBits + 7) / 8
}

// SetInputs sets the device's input process data, laid out as Inputs
// returns it (bits beyond the input bits are ignored; a short b sets only
// the bits it has), and switches its input pattern to PatternConstant.
func (d *Device) SetInputs(b []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pd.pattern = Pattern{Kind: PatternConstant}
	at := 0
	for _, s := range d.pd.sms {
		if s.out {
			continue
		}
		bitfield.Copy(d.mem.b[:], d.smArea(s.sm)*8, b, at, min(s.bits, len(b)*8-at))
		at += s.bits
	}
}

// SetInputPattern makes the device's inputs follow p from the next cycle.
func (d *Device) SetInputPattern(p Pattern) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pd.pattern, d.pd.cycle = p, 0
}

// cycleInputs advances the input pattern by one cycle and writes the new
// input values, as the device's application (or digital input pins) would.
func (d *Device) cycleInputs() {
	pd := &d.pd
	if pd.pattern.Kind == PatternConstant || len(pd.channels) == 0 {
		return
	}
	c := pd.cycle
	pd.cycle++
	n := len(pd.channels)
	period := uint64(max(pd.pattern.Period, 2))
	lo, hi := pd.analog.lo, pd.analog.hi
	for i, k := range pd.channels {
		ch := &pd.entries[k]
		var on bool
		var v int
		switch pd.pattern.Kind {
		case PatternCounter:
			on = c>>uint(i)&1 != 0
			v = lo + int(c%uint64(hi-lo+1))
		case PatternWalkingBit:
			on = c%uint64(n) == uint64(i)
		case PatternSquare:
			on = c/(period/2)%2 == 0
		case PatternSine:
			phase := 2 * math.Pi * (float64(c%period)/float64(period) + float64(i)/float64(n))
			s := math.Sin(phase)
			on = s >= 0
			v = lo + int(math.Round((s+1)/2*float64(hi-lo)))
		}
		if pd.pattern.Kind != PatternCounter && pd.pattern.Kind != PatternSine {
			v = lo
			if on {
				v = hi
			}
		}
		if ch.bits == 1 {
			v = 0
			if on {
				v = 1
			}
		}
		d.putBits(d.smArea(ch.sm)*8+ch.bit, ch.bits, uint64(v))
	}
}

// putBits stores the low n bits of v at physical bit address at, least
// significant bit first.
func (d *Device) putBits(at, n int, v uint64) {
	if at%8 == 0 && n%8 == 0 && at/8+n/8 <= len(d.mem.b) { // whole bytes, little-endian
		for k := range n / 8 {
			d.mem.b[at/8+k] = byte(v >> (8 * k))
		}
		return
	}
	for k := range n {
		b := at + k
		if b/8 >= len(d.mem.b) {
			return
		}
		mask := byte(1) << (b % 8)
		if v>>uint(k)&1 != 0 {
			d.mem.b[b/8] |= mask
		} else {
			d.mem.b[b/8] &^= mask
		}
	}
}
