package state

// Controlword is object 0x6040. Bits 0–3 and 7 carry the device control
// commands that move a drive between states (IEC 61800-7-201, table
// "command coding"); the transition numbers below are the standard's.
type Controlword uint16

// Controlword bits.
const (
	CWSwitchOn        Controlword = 1 << 0
	CWEnableVoltage   Controlword = 1 << 1
	CWQuickStop       Controlword = 1 << 2 // low commands a quick stop
	CWEnableOperation Controlword = 1 << 3
	CWFaultReset      Controlword = 1 << 7 // a rising edge resets a fault
	CWHalt            Controlword = 1 << 8
)

// The device control commands, with bit 7 low and the bits a command does
// not care about clear.
const (
	// CmdDisableVoltage leads to switch on disabled from ready to switch
	// on, switched on, operation enabled and quick stop active
	// (transitions 7, 10, 9, 12).
	CmdDisableVoltage Controlword = 0x00
	// CmdQuickStop leads from operation enabled to quick stop active (11),
	// and from ready to switch on or switched on to switch on disabled
	// (7, 10).
	CmdQuickStop Controlword = CWEnableVoltage
	// CmdShutdown leads to ready to switch on from switch on disabled,
	// switched on and operation enabled (2, 6, 8).
	CmdShutdown Controlword = CWEnableVoltage | CWQuickStop
	// CmdSwitchOn leads from ready to switch on to switched on (3).
	CmdSwitchOn Controlword = CWSwitchOn | CWEnableVoltage | CWQuickStop
	// CmdDisableOperation leads from operation enabled to switched on
	// (5); it is the same word as CmdSwitchOn.
	CmdDisableOperation Controlword = CmdSwitchOn
	// CmdEnableOperation leads to operation enabled from switched on (4),
	// and from ready to switch on through switched on (3 and 4).
	CmdEnableOperation Controlword = CmdSwitchOn | CWEnableOperation
	// CmdFaultReset leaves fault for switch on disabled (15) on its rising
	// edge, after a word with bit 7 low.
	CmdFaultReset Controlword = CWFaultReset
)
