package eni

// Command is an EtherCAT datagram command (ETG.1000.4 Table 12), as the
// Cmd elements of init commands and cyclic frames number them.
type Command uint8

// The commands.
const (
	NOP  Command = 0
	APRD Command = 1
	APWR Command = 2
	APRW Command = 3
	FPRD Command = 4
	FPWR Command = 5
	FPRW Command = 6
	BRD  Command = 7
	BWR  Command = 8
	BRW  Command = 9
	LRD  Command = 10
	LWR  Command = 11
	LRW  Command = 12
	ARMW Command = 13
	FRMW Command = 14
)

// String returns the command's name.
func (c Command) String() string {
	names := [...]string{"NOP", "APRD", "APWR", "APRW", "FPRD", "FPWR", "FPRW", "BRD", "BWR", "BRW",
		"LRD", "LWR", "LRW", "ARMW", "FRMW"}
	if int(c) < len(names) {
		return names[c]
	}
	return "unknown"
}

// Logical reports whether the command addresses the logical memory (a
// 32-bit Addr) rather than a slave's register (Adp, Ado).
func (c Command) Logical() bool { return c == LRD || c == LWR || c == LRW }

// Address is where a datagram goes: a logical address, or a slave (by
// position or configured address, as the command says) and a register.
type Address struct {
	Logical bool   // Addr was given: a logical address
	Addr    uint32 // the logical address, when Logical
	// Adp is the slave: its auto-increment position as a bit pattern
	// (0, 0xFFFF…) for AP commands, its configured address for FP
	// commands; ignored by broadcast commands.
	Adp uint16
	Ado uint16 // the register
}

// InitCmd is a register init command (master or slave InitCmds): a
// datagram sent at the transitions named, retried, and validated.
type InitCmd struct {
	Line        int
	Transitions []string // IP, PS, SO, ...
	BeforeSlave bool     // a master command run before the slaves' commands of the transition
	Comment     string
	// Requires is "frame" (the command needs a frame of its own),
	// "cycle" (a cycle of its own) or "" (none).
	Requires string
	Cmd      Command
	Address  Address
	// Data is what the command writes, or the buffer a read fills: the
	// Data element, or DataLength zero bytes.
	Data []byte
	// Cnt is the working counter the command must come back with; nil:
	// not checked.
	Cnt      *uint16
	Retries  uint16
	Timeout  uint32    // ms, the Timeout element (without a Validate)
	Validate *Validate // nil: the answer is not compared
}

// Validate is how an init command's answer is checked: (answer AND
// DataMask) compared with Data, retried until Timeout.
type Validate struct {
	Data     []byte
	DataMask []byte // nil: every bit compared
	Timeout  uint32 // ms
	// Type is the comparison: EQ (the default when the file gives none,
	// ETG.2100) or what the file writes (NOT_EQ, EQ_OR_G, …).
	Type string
}
