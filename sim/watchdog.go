package sim

import (
	"encoding/binary"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// smWatchdogTrigger is the SyncManager control bit (0x0804+8n bit 6) that
// makes writes of new buffers trigger the process data watchdog (ET1100
// datasheet section II, SyncManager control register).
const smWatchdogTrigger = 0x40

// pdWatchdog is the process data watchdog (ET1100 datasheet section II,
// registers 0x0400, 0x0420, 0x0440): each new output buffer in a
// SyncManager with the watchdog trigger restarts it; it expires when none
// came for 0x0420 × (0x0400 + 2) × 40 ns (100 ms with the power-up
// values). A device with an application controller then leaves OP for
// SAFEOP with the error indication and status code 0x001B (sync manager
// watchdog, ETG.1000.6 AL status codes).
type pdWatchdog struct {
	armed bool  // running: triggered, or started when the device entered OP
	last  int64 // segment time of the last trigger
	inOp  bool  // the device was in OP at the last state change
}

// watched reports whether an enabled output SyncManager triggers the
// watchdog.
func (d *Device) watched() bool {
	for i := range d.nsm {
		s := &d.sms[i]
		if s.on && s.ecatWrite && !s.mailbox && d.mem.b[int(esc.RegSyncManager(i))+4]&smWatchdogTrigger != 0 {
			return true
		}
	}
	return false
}

// watchdogStateChanged starts the watchdog when the device enters OP: a
// master that sends no outputs there lets it expire.
func (d *Device) watchdogStateChanged() {
	op := d.esm.state == esc.StateOp
	if op && !d.wd.inOp {
		d.wd.armed, d.wd.last = true, d.now()
	}
	d.wd.inOp = op
}

// timeout returns the watchdog time in ns from the registers, 0 when the
// watchdog is off (0x0420 = 0).
func (d *Device) watchdogTimeout() int64 {
	le := binary.LittleEndian
	div := int64(le.Uint16(d.mem.b[esc.RegWatchdogDivider:]))
	t := int64(le.Uint16(d.mem.b[esc.RegWatchdogPD:]))
	return t * (div + 2) * 40
}

// triggerWatchdog restarts the watchdog for a new buffer in SyncManager
// i at segment time now, if that SyncManager triggers it.
func (d *Device) triggerWatchdog(i int, now int64) {
	if d.mem.b[int(esc.RegSyncManager(i))+4]&smWatchdogTrigger == 0 {
		return
	}
	d.wd.armed, d.wd.last = true, now
	d.mem.b[esc.RegWatchdogStatusPD] |= 0x01
}

// checkWatchdog expires the watchdog at segment time now when its time is
// over, and reports whether the state changed.
func (d *Device) checkWatchdog(now int64) bool {
	if !d.wd.armed {
		return false // the common case: decided without the registers
	}
	t := d.watchdogTimeout()
	if t == 0 || now-d.wd.last < t || !d.watched() {
		return false
	}
	d.wd.armed = false
	regs := d.mem.b[:]
	regs[esc.RegWatchdogStatusPD] &^= 0x01
	if regs[esc.RegWatchdogCounterPD] < 0xFF {
		regs[esc.RegWatchdogCounterPD]++
	}
	if d.esm.emulated || d.esm.state != esc.StateOp {
		return false
	}
	d.esm.raise(esc.ALSyncManagerWatchdog)
	return true
}
