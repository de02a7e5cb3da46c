package mqtt

import (
	"sync"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/shm"
)

// referenceBus is the default simulated segment as the bus description
// describes it: EK1100, 2×EL2004, 2×EL1014, EL4132, EK1110 — plus an
// EL3204 (PT100) at the end. Outputs: EL2004s share byte 0, EL4132 bytes
// 1..4. Inputs: EL1014s share byte 0, EL3204 bytes 1..12.
func referenceBus() Bus {
	digital := func(pos int, order string, out bool, off int) Slave {
		s := Slave{Position: pos, OrderCode: order, DeviceName: order + " test"}
		dir := "Input"
		idx := uint16(0x6000)
		if out {
			dir, idx = "Output", 0x7000
			s.OutputOffset, s.OutputBits = off, 4
		} else {
			s.InputOffset, s.InputBits = off, 4
		}
		for c := range 4 {
			s.Entries = append(s.Entries, Entry{Output: out, PDO: 0x1600 + uint16(c), PDOName: "Channel " + string(rune('1'+c)),
				Index: idx + uint16(0x10*c), SubIndex: 1, Name: dir, DataType: 1, Bits: 1, Offset: c})
		}
		return s
	}
	el4132 := Slave{Position: 5, OrderCode: "EL4132", DeviceName: "EL4132 2K. Ana. Ausgang +/-10V, 16bit", OutputOffset: 8, OutputBits: 32}
	for c := range 2 {
		el4132.Entries = append(el4132.Entries, Entry{Output: true, PDO: 0x1600 + uint16(c), PDOName: "AO Output Channel " + string(rune('1'+c)),
			Index: 0x7000 + uint16(0x10*c), SubIndex: 1, Name: "Analog output", DataType: 3, Bits: 16, Offset: 16 * c})
	}
	el3204 := Slave{Position: 7, OrderCode: "EL3204", DeviceName: "EL3204 PT100", InputOffset: 8, InputBits: 4 * 24}
	for c := range 4 {
		base := 24 * c
		idx := 0x6000 + uint16(0x10*c)
		name := "RTD Inputs Channel " + string(rune('1'+c))
		el3204.Entries = append(el3204.Entries,
			Entry{PDO: 0x1A00 + uint16(c), PDOName: name, Index: idx, SubIndex: 1, Name: "Underrange", DataType: 1, Bits: 1, Offset: base},
			Entry{PDO: 0x1A00 + uint16(c), PDOName: name, Index: idx, SubIndex: 3, Name: "Limit 1", DataType: 49, Bits: 2, Offset: base + 1},
			Entry{PDO: 0x1A00 + uint16(c), PDOName: name, Index: idx, SubIndex: 0x11, Name: "Value", DataType: 3, Bits: 16, Offset: base + 8},
		)
	}
	return Bus{OutputBytes: 5, InputBytes: 13, Slaves: []Slave{
		{Position: 0, OrderCode: "EK1100"},
		digital(1, "EL2004", true, 0),
		digital(2, "EL2004", true, 4),
		digital(3, "EL1014", false, 0),
		digital(4, "EL1014", false, 4),
		el4132,
		{Position: 6, OrderCode: "EK1110"},
		el3204,
	}}
}

// fakeImage is an ImageSource over a byte slice.
type fakeImage struct {
	mu    sync.Mutex
	img   []byte
	cycle uint64
}

func (f *fakeImage) Snapshot(dst []byte) (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	copy(dst, f.img)
	f.cycle++
	return f.cycle, true
}

func (f *fakeImage) set(at int, b ...byte) {
	f.mu.Lock()
	copy(f.img[at:], b)
	f.mu.Unlock()
}

// fakeRing is a CommandSink that keeps what it is given.
type fakeRing struct {
	mu   sync.Mutex
	cmds []shm.Command
	full bool
}

func (r *fakeRing) Push(c *shm.Command) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.full {
		return false
	}
	r.cmds = append(r.cmds, *c)
	return true
}

func (r *fakeRing) all() []shm.Command {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]shm.Command(nil), r.cmds...)
}

// cycles returns the counts of a window that observed n cycles.
func cycles(n int64) (c [cyclestats.NumCounters]int64) {
	c[cyclestats.CounterCycles] = n
	return c
}
