package esc

import "encoding/binary"

// FMMULen is the size of one FMMU register block (0x0600 + 16·i).
const FMMULen = 16

// FMMU type bits: which accesses the mapping serves.
const (
	FMMURead  = 0x01 // serves read commands (inputs: slave → master)
	FMMUWrite = 0x02 // serves write commands (outputs: master → slave)
)

// FMMU is a fieldbus memory management unit: it maps a bit range of the
// logical address space onto a bit range of the ESC's physical memory
// (ETG.1000.4, FMMU attributes).
type FMMU struct {
	LogicalStart    uint32
	Length          uint16 // bytes of logical space touched, first to last
	LogicalStartBit uint8  // 0..7
	LogicalEndBit   uint8  // 0..7, the last bit included
	PhysicalStart   uint16
	PhysicalBit     uint8 // 0..7
	Type            uint8 // FMMURead|FMMUWrite
	Active          bool
}

// DecodeFMMU reads an FMMU block from b (at least FMMULen bytes).
func DecodeFMMU(b []byte) FMMU {
	return FMMU{
		LogicalStart:    binary.LittleEndian.Uint32(b[0:]),
		Length:          binary.LittleEndian.Uint16(b[4:]),
		LogicalStartBit: b[6] & 7,
		LogicalEndBit:   b[7] & 7,
		PhysicalStart:   binary.LittleEndian.Uint16(b[8:]),
		PhysicalBit:     b[10] & 7,
		Type:            b[11] & 3,
		Active:          b[12]&1 != 0,
	}
}

// Encode writes f into b (at least FMMULen bytes), reserved bytes zeroed.
func (f FMMU) Encode(b []byte) {
	binary.LittleEndian.PutUint32(b[0:], f.LogicalStart)
	binary.LittleEndian.PutUint16(b[4:], f.Length)
	b[6], b[7] = f.LogicalStartBit&7, f.LogicalEndBit&7
	binary.LittleEndian.PutUint16(b[8:], f.PhysicalStart)
	b[10], b[11] = f.PhysicalBit&7, f.Type&3
	b[12] = 0
	if f.Active {
		b[12] = 1
	}
	clear(b[13:FMMULen])
}

// Bits returns the number of bits the FMMU maps.
func (f FMMU) Bits() int {
	if f.Length == 0 {
		return 0
	}
	return int(f.Length-1)*8 + int(f.LogicalEndBit) - int(f.LogicalStartBit) + 1
}

// ForBits returns the FMMU that maps n bits starting at logical bit address
// logBit (byte·8 + bit) onto physical memory from phys, bit physBit.
func ForBits(logBit uint64, n int, phys uint16, physBit uint8, typ uint8) FMMU {
	first := logBit
	last := logBit + uint64(n) - 1
	return FMMU{
		LogicalStart:    uint32(first / 8),
		Length:          uint16(last/8 - first/8 + 1),
		LogicalStartBit: uint8(first % 8),
		LogicalEndBit:   uint8(last % 8),
		PhysicalStart:   phys,
		PhysicalBit:     physBit,
		Type:            typ,
		Active:          true,
	}
}
