package sim

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/master/wire"
)

// sdo sends one CoE SDO request through the mailbox of device adp (128-byte
// mailboxes at 0x1000/0x1080) and returns the reply's mailbox data.
func sdo(tb testing.TB, seg *Segment, adp uint16, req []byte) []byte {
	tb.Helper()
	msg := make([]byte, 0x80)
	binary.LittleEndian.PutUint16(msg, uint16(2+len(req)))
	msg[5] = mbxTypeCoE | 1<<4
	binary.LittleEndian.PutUint16(msg[6:], coeSDORequest<<12)
	copy(msg[8:], req)
	if d := one(tb, seg, phys(wire.FPWR, adp, 0x1000, msg)); d.WKC != 1 {
		tb.Fatalf("mailbox write: WKC %d", d.WKC)
	}
	for polls := 0; ; polls++ {
		if st := one(tb, seg, phys(wire.FPRD, adp, 0x080D, []byte{0})); st.Data[0]&smStatusFull != 0 {
			break
		}
		if polls > 10 {
			tb.Fatal("no mailbox reply")
		}
	}
	d := one(tb, seg, phys(wire.FPRD, adp, 0x1080, make([]byte, 0x80)))
	if d.WKC != 1 {
		tb.Fatalf("mailbox read: WKC %d", d.WKC)
	}
	if d2 := one(tb, seg, phys(wire.FPRD, adp, 0x1080, make([]byte, 0x80))); d2.WKC != 0 {
		tb.Errorf("empty mailbox read: WKC %d, want 0", d2.WKC)
	}
	n := binary.LittleEndian.Uint16(d.Data)
	return d.Data[6 : 6+n]
}

func TestCoESDO(t *testing.T) {
	seg := newSeg(t, []string{"EL3204"})
	address(t, seg)
	mailboxSMs(t, seg, 0x1001)
	if st, _ := request(t, seg, 0x1001, 0x02); st != 0x02 {
		t.Fatalf("PREOP: %#04x", st)
	}
	upload := func(index uint16, sub uint8) []byte {
		return sdo(t, seg, 0x1001, []byte{0x40, byte(index), byte(index >> 8), sub, 0, 0, 0, 0})
	}
	// Expedited upload of the product code.
	r := upload(0x1018, 2)
	if r[2] != 0x43 || binary.LittleEndian.Uint32(r[6:]) != 0x0C843052 {
		t.Errorf("0x1018:02 reply % x", r)
	}
	// Normal upload of the device name.
	r = upload(0x1008, 0)
	if r[2] != 0x41 || string(r[10:10+binary.LittleEndian.Uint32(r[6:])]) != "EL3204 4K. Ana. Eingang PT100 (RTD)" {
		t.Errorf("0x1008 reply % x", r)
	}
	// Aborts.
	for _, c := range []struct {
		index uint16
		sub   uint8
		code  uint32
	}{{0x2000, 0, abortNoObject}, {0x1018, 9, abortNoSubIndex}} {
		r := upload(c.index, c.sub)
		if r[2] != 0x80 || binary.LittleEndian.Uint32(r[6:]) != c.code {
			t.Errorf("%#04x:%d: reply % x, want abort %#08x", c.index, c.sub, r, c.code)
		}
	}
	// The PDO assignment is writable in PREOP; the object dictionary's
	// assignment then sizes the input SyncManager the device expects.
	if n := seg.Devices()[0].InputSize(); n != 16 {
		t.Errorf("InputSize() with the SII's 4 PDOs = %d, want 16", n)
	}
	r = sdo(t, seg, 0x1001, []byte{0x2F, 0x13, 0x1C, 0x00, 0x02, 0, 0, 0})
	if r[2] != 0x60 {
		t.Errorf("download 0x1C13:00 reply % x", r)
	}
	if n := seg.Devices()[0].InputSize(); n != 8 {
		t.Errorf("InputSize() with 2 assigned PDOs = %d, want 8", n)
	}
	configSM(t, seg, 0x1001, 3, 0x1180, 8, 0x20)
	if st, code := request(t, seg, 0x1001, 0x04); st != 0x04 {
		t.Errorf("SAFEOP with 2 assigned PDOs and an 8-byte SyncManager: %#04x %v", st, code)
	}
	r = sdo(t, seg, 0x1001, []byte{0x2F, 0x13, 0x1C, 0x00, 0x04, 0, 0, 0})
	if r[2] != 0x80 || binary.LittleEndian.Uint32(r[6:]) != abortDeviceState {
		t.Errorf("download 0x1C13:00 in SAFEOP: % x", r)
	}
	// Process data read over SDO: channel 1's value.
	seg.Devices()[0].SetInputs([]byte{0, 0, 0xD7, 0x00})
	if r := upload(0x6000, 0x11); r[2] != 0x4B || !bytes.Equal(r[6:8], []byte{0xD7, 0x00}) {
		t.Errorf("0x6000:11 reply % x", r)
	}
	// Channel 3's PDO is no longer assigned: the simulator keeps no value
	// for it and reads 0, not whatever RAM lies past the SyncManager.
	one(t, seg, phys(wire.FPWR, 0x1001, 0x1180+10, []byte{0x34, 0x12}))
	if r := upload(0x6020, 0x11); r[2] != 0x4B || !bytes.Equal(r[6:8], []byte{0, 0}) {
		t.Errorf("0x6020:11 reply % x, want 0 (PDO not assigned)", r)
	}
}
