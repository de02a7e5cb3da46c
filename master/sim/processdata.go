package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ecagent/ecagent/master/sii"
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

// channel is one input value in the input process image.
type channel struct {
	bit  int // offset in the input image
	bits int
}

// analogRange is the span of an analog input channel's values.
type analogRange struct{ lo, hi int }

// processData locates a device's process image: the SII's input and output
// SyncManagers, the input channels a pattern drives.
type processData struct {
	inSM, outSM     int // SII SyncManager index, -1 when none
	inSize, outSize int // bytes
	inStart         int // SII default addresses
	outStart        int
	channels        []channel
	analog          analogRange
	pattern         Pattern
	cycle           uint64
}

func newProcessData(desc *sii.Device, analog analogRange) processData {
	pd := processData{inSM: -1, outSM: -1, analog: analog, pattern: Pattern{Kind: PatternConstant}}
	if pd.analog == (analogRange{}) {
		pd.analog = analogRange{0, 0x7FFF}
	}
	for i, sm := range desc.SyncManagers {
		size := (desc.SyncManagerBits(i) + 7) / 8
		if sm.Length != 0 {
			size = max(size, int(sm.Length))
		}
		switch {
		case sm.Type == sii.SMProcessDataIn && pd.inSM < 0:
			pd.inSM, pd.inSize, pd.inStart = i, size, int(sm.StartAddress)
		case sm.Type == sii.SMProcessDataOut && pd.outSM < 0:
			pd.outSM, pd.outSize, pd.outStart = i, size, int(sm.StartAddress)
		}
	}
	if pd.inSM < 0 {
		return pd
	}
	analogEntries := false
	for _, p := range desc.TxPDOs {
		for _, e := range p.Entries {
			if int(p.SyncManager) == pd.inSM && e.Index != 0 && e.BitLength >= 8 {
				analogEntries = true
			}
		}
	}
	bit := 0
	for _, p := range desc.TxPDOs {
		if int(p.SyncManager) != pd.inSM {
			continue
		}
		for _, e := range p.Entries {
			if e.Index != 0 && (e.BitLength >= 8) == analogEntries {
				pd.channels = append(pd.channels, channel{bit: bit, bits: int(e.BitLength)})
			}
			bit += int(e.BitLength)
		}
	}
	return pd
}

// area returns the current start of the process data of SII SyncManager
// sm: where the master put it, or the SII's address while it is disabled.
func (d *Device) area(sm, def int) int {
	if sm >= 0 && sm < d.nsm && d.sms[sm].on {
		return d.sms[sm].start
	}
	return def
}

// Outputs returns a copy of the output process data the master last wrote
// completely (the output SyncManager's buffer), or nil for a device
// without outputs.
func (d *Device) Outputs() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pd.outSM < 0 {
		return nil
	}
	start := d.area(d.pd.outSM, d.pd.outStart)
	return append([]byte(nil), d.mem.b[start:min(start+d.pd.outSize, len(d.mem.b))]...)
}

// Inputs returns a copy of the device's input process data as the master
// reads it (the input SyncManager's buffer), or nil for a device without
// inputs.
func (d *Device) Inputs() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pd.inSM < 0 {
		return nil
	}
	start := d.area(d.pd.inSM, d.pd.inStart)
	return append([]byte(nil), d.mem.b[start:min(start+d.pd.inSize, len(d.mem.b))]...)
}

// InputSize returns the size in bytes of the device's input process data.
func (d *Device) InputSize() int { return d.pd.inSize }

// SetInputs sets the device's input process data (extra bytes are ignored)
// and switches its input pattern to PatternConstant.
func (d *Device) SetInputs(b []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pd.pattern = Pattern{Kind: PatternConstant}
	if d.pd.inSM < 0 {
		return
	}
	start := d.area(d.pd.inSM, d.pd.inStart)
	copy(d.mem.b[start:min(start+d.pd.inSize, len(d.mem.b))], b)
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
	if pd.inSM < 0 || pd.pattern.Kind == PatternConstant || len(pd.channels) == 0 {
		return
	}
	c := pd.cycle
	pd.cycle++
	n := len(pd.channels)
	period := uint64(max(pd.pattern.Period, 2))
	base := d.area(pd.inSM, pd.inStart) * 8
	lo, hi := pd.analog.lo, pd.analog.hi
	for i, ch := range pd.channels {
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
		d.putBits(base+ch.bit, ch.bits, uint64(v))
	}
}

// putBits stores the low n bits of v at physical bit address at, least
// significant bit first.
func (d *Device) putBits(at, n int, v uint64) {
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
