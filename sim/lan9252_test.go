package sim

import (
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// TestLAN9252Registers: the LAN9252 shows its own controller in the
// information block and its EEPROM interface's idle value 0x0080 with
// 4-byte reads.
func TestLAN9252Registers(t *testing.T) {
	seg, now := clockedSeg(t, []string{"LAN9252"})
	info := esc.DecodeInfo(one(t, seg, phys(wire.FPRD, 0x1001, 0x0000, make([]byte, 10))).Data)
	if info.Type != 0xC0 || info.FMMUs != 3 || info.SyncManagers != 4 || info.RAMSizeKiB != 4 {
		t.Errorf("information block %+v, want type 0xC0, 3 FMMUs, 4 SyncManagers, 4 KiB", info)
	}
	if v := siiStatus(t, seg, 0x1001); v != 0x0080 {
		t.Errorf("0x0502 = %#04x, want 0x0080", v)
	}
	siiCommand(t, seg, 0x1001, esc.SIICmdRead, 8)
	*now += siiI2C.read.typ
	got := one(t, seg, phys(wire.FPRD, 0x1001, 0x0508, make([]byte, 8))).Data
	id := seg.Devices()[0].Identity()
	if got[0] != byte(id.VendorID) || got[4] != 0 {
		t.Errorf("read at word 8: % x, want the vendor id then zeros (4-byte reads)", got)
	}
}

// TestLAN9252FirmwareIsSlow: its controller takes its own, longer times
// for state changes and mailbox answers.
func TestLAN9252FirmwareIsSlow(t *testing.T) {
	seg, now := clockedSeg(t, []string{"LAN9252"})
	mailboxSMs(t, seg, 0x1001)
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x02)))
	*now += fwBeckhoffTerminal.esm.typ
	if st := alStatus(t, seg, 0x1001); st != 0x01 {
		t.Fatalf("AL status %#04x after a terminal's state change time, want still INIT", st)
	}
	*now += fwLAN9252.esm.typ
	if st := alStatus(t, seg, 0x1001); st != 0x02 {
		t.Fatalf("AL status %#04x after the LAN9252's state change time, want PREOP", st)
	}
	mbxWrite(t, seg, 0x1001, coeSDORequest, []byte{0x40, 0x00, 0x10, 0x00, 0, 0, 0, 0})
	*now += fwLAN9252.mailbox.typ - 1
	if st := one(t, seg, phys(wire.FPRD, 0x1001, 0x080D, []byte{0})).Data[0]; st&smStatusFull != 0 {
		t.Fatalf("answer before the LAN9252's mailbox time")
	}
	*now++
	if st := one(t, seg, phys(wire.FPRD, 0x1001, 0x080D, []byte{0})).Data[0]; st&smStatusFull == 0 {
		t.Fatalf("no answer after the LAN9252's mailbox time")
	}
}
