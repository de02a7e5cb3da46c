package esc

import "encoding/binary"

// DLStatusLen is the size of the DL status register.
const DLStatusLen = 2

// PortCount is the number of ports an ESC can have.
const PortCount = 4

// PortStatus is one port's part of DL status.
type PortStatus struct {
	Link          bool // physical link detected
	Loop          bool // port closed: frames loop back instead of leaving
	Communication bool // a stable communication is established
}

// DLStatus is register 0x0110: PDI state and the link, loop and
// communication state of the four ports, from which the master derives the
// topology.
type DLStatus struct {
	PDIOperational bool
	WatchdogOK     bool // DLS-user watchdog status
	ExtendedLink   bool // enhanced link detection active
	Ports          [PortCount]PortStatus
}

// DecodeDLStatus reads DL status from b (at least DLStatusLen bytes).
func DecodeDLStatus(b []byte) DLStatus {
	v := binary.LittleEndian.Uint16(b)
	s := DLStatus{PDIOperational: v&1 != 0, WatchdogOK: v&2 != 0, ExtendedLink: v&4 != 0}
	for p := range s.Ports {
		s.Ports[p] = PortStatus{
			Link:          v&(1<<(4+p)) != 0,
			Loop:          v&(1<<(8+2*p)) != 0,
			Communication: v&(1<<(9+2*p)) != 0,
		}
	}
	return s
}

// Encode writes s into b (at least DLStatusLen bytes).
func (s DLStatus) Encode(b []byte) {
	var v uint16
	set := func(on bool, bit uint) {
		if on {
			v |= 1 << bit
		}
	}
	set(s.PDIOperational, 0)
	set(s.WatchdogOK, 1)
	set(s.ExtendedLink, 2)
	for p, ps := range s.Ports {
		set(ps.Link, uint(4+p))
		set(ps.Loop, uint(8+2*p))
		set(ps.Communication, uint(9+2*p))
	}
	binary.LittleEndian.PutUint16(b, v)
}

// OpenPorts reports which ports forward frames onward: communication
// established and the loop open.
func (s DLStatus) OpenPorts() [PortCount]bool {
	var open [PortCount]bool
	for p, ps := range s.Ports {
		open[p] = ps.Communication && !ps.Loop
	}
	return open
}
