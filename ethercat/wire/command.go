package wire

// Command is the datagram command byte (ETG.1000.4, table "EtherCAT command
// types"). The zero value is NOP, which a slave ignores. Its String is the
// mnemonic, or "Command(N)" for unknown values.
type Command uint8

//go:generate go tool stringer -type=Command

// The EtherCAT datagram commands.
const (
	NOP  Command = 0  // no operation
	APRD Command = 1  // auto-increment physical read
	APWR Command = 2  // auto-increment physical write
	APRW Command = 3  // auto-increment physical read-write
	FPRD Command = 4  // configured-address physical read
	FPWR Command = 5  // configured-address physical write
	FPRW Command = 6  // configured-address physical read-write
	BRD  Command = 7  // broadcast read
	BWR  Command = 8  // broadcast write
	BRW  Command = 9  // broadcast read-write
	LRD  Command = 10 // logical memory read
	LWR  Command = 11 // logical memory write
	LRW  Command = 12 // logical memory read-write
	ARMW Command = 13 // auto-increment physical read, multiple write
	FRMW Command = 14 // configured-address physical read, multiple write
)

// Valid reports whether c is one of the defined commands.
func (c Command) Valid() bool { return c <= FRMW }

// Addressing tells how a command selects its slaves.
type Addressing uint8

// The addressing modes of EtherCAT commands.
const (
	AddressingNone       Addressing = iota // NOP and undefined commands
	AddressingPosition                     // auto-increment: ADP counts slaves on the way
	AddressingConfigured                   // configured station address or alias in ADP
	AddressingBroadcast                    // every slave
	AddressingLogical                      // 32-bit logical address through the FMMUs
)

// Addressing returns how c addresses slaves.
func (c Command) Addressing() Addressing {
	switch c {
	case APRD, APWR, APRW, ARMW:
		return AddressingPosition
	case FPRD, FPWR, FPRW, FRMW:
		return AddressingConfigured
	case BRD, BWR, BRW:
		return AddressingBroadcast
	case LRD, LWR, LRW:
		return AddressingLogical
	}
	return AddressingNone
}

// Reads reports whether c reads slave memory into the datagram (the
// "multiple write" commands read at the addressed slave).
func (c Command) Reads() bool {
	switch c {
	case APRD, APRW, FPRD, FPRW, BRD, BRW, LRD, LRW, ARMW, FRMW:
		return true
	}
	return false
}

// Writes reports whether c writes datagram data into slave memory.
func (c Command) Writes() bool {
	switch c {
	case APWR, APRW, FPWR, FPRW, BWR, BRW, LWR, LRW, ARMW, FRMW:
		return true
	}
	return false
}
