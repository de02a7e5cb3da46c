package sim

import (
	"github.com/ecagent/ecagent/ethercat/esc"
)

// SyncManager status bits (register 0x0805+8n) the simulator maintains.
const (
	smStatusWriteEvent = 0x01 // buffer written
	smStatusReadEvent  = 0x02 // buffer read
	smStatusFull       = 0x08 // mailbox full
	// smStatusReopened is what the real EL3004 shows in its read mailbox's
	// status after the master has read a reply: 0x80 (write buffer opened by
	// the application controller for the next reply).
	smStatusReopened = 0x80
)

// syncManager is the run-time state of one SyncManager, decoded from its
// register block whenever the master writes it.
type syncManager struct {
	start, end int  // guarded area [start, end)
	on         bool // enabled by the master, with a non-zero length
	mailbox    bool // 1-buffer (mailbox) mode
	ecatWrite  bool // the master writes (outputs, mailbox out)
	pdiOff     bool // deactivated by the application controller
	full       bool // mailbox buffer holds a message
}

// covers reports whether the SyncManager guards address a.
func (s *syncManager) covers(a int) bool { return s.on && a >= s.start && a < s.end }

// allows reports whether an EtherCAT access in the given direction may go
// through: the direction must match the SyncManager's, a mailbox accepts a
// write only when empty and a read only when full, and a SyncManager the
// application has deactivated accepts nothing.
func (s *syncManager) allows(write bool) bool {
	if s.pdiOff || s.ecatWrite != write {
		return false
	}
	if s.mailbox {
		return s.full != write
	}
	return true
}

// decodeSyncManagers refreshes d.sms[i] for each SyncManager whose register
// block intersects [lo, hi] after a write there. A SyncManager whose
// configuration changes starts over: its mailbox is empty and its status
// clear.
func (d *Device) decodeSyncManagers(lo, hi int) {
	for i := range d.nsm {
		base := int(esc.RegSyncManager(i))
		if hi < base || lo >= base+esc.SyncManagerLen {
			continue
		}
		r := esc.DecodeSyncManager(d.mem.b[base:])
		s := &d.sms[i]
		next := syncManager{
			start:     int(r.PhysicalStart),
			end:       min(int(r.PhysicalStart)+int(r.Length), len(d.mem.b)),
			on:        r.Enabled() && r.Length > 0,
			mailbox:   r.Mailbox(),
			ecatWrite: r.Writes(),
			pdiOff:    s.pdiOff,
			full:      s.full,
		}
		if next.start != s.start || next.end != s.end || next.on != s.on ||
			next.mailbox != s.mailbox || next.ecatWrite != s.ecatWrite {
			next.full = false
			d.mem.b[base+5] = 0
		}
		*s = next
	}
}

// setPDIOff marks SyncManager i as deactivated (or not) by the application
// controller, visible to the master in bit 0 of 0x0807+8i.
func (d *Device) setPDIOff(i int, off bool) {
	s := &d.sms[i]
	s.pdiOff = off
	base := int(esc.RegSyncManager(i))
	if off {
		d.mem.b[base+7] |= 0x01
		s.full = false
	} else {
		d.mem.b[base+7] &^= 0x01
	}
}

// smAt returns the index of the enabled SyncManager that guards address a,
// or -1.
func (d *Device) smAt(a int) int {
	for i := range d.nsm {
		if d.sms[i].covers(a) {
			return i
		}
	}
	return -1
}

// setSMStatus stores the status byte of SyncManager i.
func (d *Device) setSMStatus(i int, v uint8) {
	d.mem.b[int(esc.RegSyncManager(i))+5] = v
}
