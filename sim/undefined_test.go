package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// sentDatagram builds the datagram a master sends, as UndefinedBytes takes it.
func sentDatagram(cmd wire.Command, adp, ado uint16, n int) *wire.Datagram {
	return &wire.Datagram{Command: cmd, Address: wire.PhysicalAddress(adp, ado), Data: make([]byte, n)}
}

func countMarked(u []bool) (n, first int) {
	first = -1
	for i, x := range u {
		if x {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	return n, first
}

// TestUndefinedPastTheMailboxMessage: in a read of the whole send mailbox
// the bytes after the message the real answer's header states are
// undefined, the header and the message never.
func TestUndefinedPastTheMailboxMessage(t *testing.T) {
	seg := preOpLine(t, "EL3004")
	real := make([]byte, 0x80)
	binary.LittleEndian.PutUint16(real, 10) // 6 + 10 bytes of message
	u := make([]bool, len(real))
	if n := seg.UndefinedBytes(sentDatagram(wire.FPRD, 0x1001, 0x1080, 0x80), real, u); n != 0x80-16 {
		t.Errorf("send mailbox read: %d bytes undefined, want %d", n, 0x80-16)
	}
	if _, first := countMarked(u); first != 16 {
		t.Errorf("first undefined byte %d, want 16 (header and message defined)", first)
	}
	for _, c := range []struct {
		what string
		dg   *wire.Datagram
	}{
		{"receive mailbox", sentDatagram(wire.FPRD, 0x1001, 0x1000, 0x80)},
		{"not from the start", sentDatagram(wire.FPRD, 0x1001, 0x1081, 0x7F)},
		{"another station", sentDatagram(wire.FPRD, 0x1002, 0x1080, 0x80)},
	} {
		if n := seg.UndefinedBytes(c.dg, real[:len(c.dg.Data)], u[:len(c.dg.Data)]); n != 0 {
			t.Errorf("%s: %d bytes undefined, want 0", c.what, n)
		}
	}
	// A message as long as the buffer leaves nothing undefined.
	binary.LittleEndian.PutUint16(real, 0x80-6)
	if n := seg.UndefinedBytes(sentDatagram(wire.FPRD, 0x1001, 0x1080, 0x80), real, u); n != 0 {
		t.Errorf("full message: %d bytes undefined, want 0", n)
	}
}

// TestUndefinedReservedRegisters: reserved registers are undefined, every
// register of the controller's map is not; a broadcast read is undefined
// only where no device has the register.
func TestUndefinedReservedRegisters(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL1004"})
	address(t, seg)
	u := make([]bool, 16)
	// 0x0000–0x0009 information block, 0x000A–0x000F reserved.
	if n, first := seg.UndefinedBytes(sentDatagram(wire.FPRD, 0x1002, 0x0000, 16), make([]byte, 16), u), 0; n != 6 {
		t.Errorf("FPRD 0x0000 of 16 bytes: %d undefined, want 6", n)
	} else if _, first = countMarked(u); first != 10 {
		t.Errorf("first undefined byte %d, want 10", first)
	}
	// 0x0012–0x0013 station alias, 0x0014–0x0015 reserved.
	if n := seg.UndefinedBytes(sentDatagram(wire.APRD, wire.PositionADP(1), 0x0012, 4), make([]byte, 4), u[:4]); n != 2 {
		t.Errorf("APRD 0x0012 of 4 bytes: %d undefined, want 2", n)
	}
	// The EL1004 has no DC, the EK1100 has: a BRD of the system time
	// is defined.
	if n := seg.UndefinedBytes(sentDatagram(wire.BRD, 0, 0x0910, 8), make([]byte, 8), u[:8]); n != 0 {
		t.Errorf("BRD 0x0910: %d undefined, want 0", n)
	}
	if n := seg.UndefinedBytes(sentDatagram(wire.FPRD, 0x1002, 0x0910, 8), make([]byte, 8), u[:8]); n != 8 {
		t.Errorf("FPRD 0x0910 of the EL1004 (no DC): %d undefined, want 8", n)
	}
}
