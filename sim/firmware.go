package sim

// firmware is how fast a device's application controller (the
// microcontroller behind the ESC) reacts, in ns of segment time. Devices
// in device emulation (no controller) have none. Each value is what the
// named real device showed in the captures in testdata/real-hw, measured
// between the frames as the master sent them; a master polling at any
// rate sees the same device.
type firmware struct {
	// esm is from an AL control write to AL status showing the outcome.
	esm int64
	// mailbox is from the master's request filling the receive mailbox
	// to the answer filling the send mailbox.
	mailbox int64
	// reopen says the controller opens the send mailbox for its next
	// message as soon as the master has read it: the SyncManager status
	// shows 0x80 (write buffer in use, ET1100 datasheet section II,
	// 0x0805 bit 7) rather than the read event 0x02 that the ESC alone
	// leaves there (the EL3004 in the ethercrab capture: 0x80).
	reopen bool
}

// Firmware timings of the modelled devices.
var (
	// fwBeckhoffTerminal is a Beckhoff terminal with a controller, as the
	// EL3004 in ethercrab-ek1914-el3004-mailbox: still INIT 0.29 ms after
	// the PREOP request, PREOP 0.59 ms after; the SDO answers not there
	// 0.59 ms after the request, there 0.83 ms after. Only the EL3004 is
	// seen reopening its send mailbox (fwEL3004); most devices leave the
	// ESC's read event (issue 16).
	fwBeckhoffTerminal = firmware{esm: 450_000, mailbox: 700_000}
	// fwEL3004 is the EL3004's: the terminal timings, and the send mailbox
	// status 0x80 after the master's read.
	fwEL3004 = firmware{esm: 450_000, mailbox: 700_000, reopen: true}
	// fwEK1914 is the EK1914's: still INIT 1.47 ms after the PREOP
	// request, PREOP 1.76 ms after (the same capture).
	fwEK1914 = firmware{esm: 1_600_000, mailbox: 700_000}
	// fwGeneric is a controller the captures do not show: the EL3004's
	// timings, and the ESC's own SyncManager status after a read.
	fwGeneric = firmware{esm: 450_000, mailbox: 700_000}
)
