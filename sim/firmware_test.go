package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
)

func alStatus(tb testing.TB, seg *Segment, adp uint16) uint16 {
	tb.Helper()
	return binary.LittleEndian.Uint16(one(tb, seg, phys(wire.FPRD, adp, 0x0130, make([]byte, 2))).Data)
}

// TestStateChangeTakesControllerTime: a controller carries a state change
// out after its own time, however often or seldom the master polls.
func TestStateChangeTakesControllerTime(t *testing.T) {
	for _, c := range []struct {
		model string
		fw    firmware
	}{{"EL3004", fwBeckhoffTerminal}, {"EK1914", fwEK1914}} {
		for _, polls := range []int{1, 4, 40} {
			seg, now := clockedSeg(t, []string{c.model})
			siiMailboxSMs(t, seg, 0x1001)
			*now = 10_000_000
			one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x02)))
			step := (c.fw.esm.typ - 1) / int64(polls)
			for i := 1; i <= polls; i++ {
				*now = 10_000_000 + int64(i)*step
				if st := alStatus(t, seg, 0x1001); st != 0x01 {
					t.Fatalf("%s: AL status %#04x %d ns after the PREOP request (%d polls), want INIT until %d ns",
						c.model, st, int64(i)*step, polls, c.fw.esm.typ)
				}
			}
			*now = 10_000_000 + c.fw.esm.typ
			if st := alStatus(t, seg, 0x1001); st != 0x02 {
				t.Fatalf("%s: AL status %#04x %d ns after the PREOP request, want PREOP", c.model, st, c.fw.esm.typ)
			}
		}
	}
}

// TestMailboxAnswerTakesControllerTime: the answer to a mailbox request
// fills the send mailbox after the controller's time, not after frames.
func TestMailboxAnswerTakesControllerTime(t *testing.T) {
	for _, polls := range []int{1, 5, 50} {
		seg, now := clockedSeg(t, []string{"EL3004"})
		mailboxSMs(t, seg, 0x1001)
		one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x02)))
		*now = 100_000_000
		if st := alStatus(t, seg, 0x1001); st != 0x02 {
			t.Fatalf("AL status %#04x, want PREOP", st)
		}
		// SDO upload of 0x1000:00.
		mbxWrite(t, seg, 0x1001, coeSDORequest, []byte{0x40, 0x00, 0x10, 0x00, 0, 0, 0, 0})
		step := (fwBeckhoffTerminal.mailbox.typ - 1) / int64(polls)
		for i := 1; i <= polls; i++ {
			*now = 100_000_000 + int64(i)*step
			if st := one(t, seg, phys(wire.FPRD, 0x1001, 0x080D, []byte{0})).Data[0]; st&smStatusFull != 0 {
				t.Fatalf("send mailbox full %d ns after the request (%d polls), want empty until %d ns",
					int64(i)*step, polls, fwBeckhoffTerminal.mailbox.typ)
			}
		}
		*now = 100_000_000 + fwBeckhoffTerminal.mailbox.typ
		if st := one(t, seg, phys(wire.FPRD, 0x1001, 0x080D, []byte{0})).Data[0]; st&smStatusFull == 0 {
			t.Fatalf("send mailbox status %#02x %d ns after the request, want full", st, fwBeckhoffTerminal.mailbox.typ)
		}
	}
}

// TestSendMailboxStatusAfterRead: after the master read the send mailbox a
// controller that reopens it at once shows 0x80 (the EL3004), the others
// the ESC's read event 0x02.
func TestSendMailboxStatusAfterRead(t *testing.T) {
	for _, c := range []struct {
		model string
		want  uint8
	}{{"EL3004", smStatusReopened}, {"EL4132", smStatusReadEvent}, {"AKD", smStatusReadEvent}} {
		seg := newSeg(t, []string{c.model})
		address(t, seg)
		d := seg.Devices()[0]
		mb := siiMailboxSMs(t, seg, 0x1001)
		if st, _ := request(t, seg, 0x1001, 0x02); st != 0x02 {
			t.Fatalf("%s: PREOP: %#04x", c.model, st)
		}
		if err := d.SendEmergency(0x1000, 1, [5]byte{}); err != nil {
			t.Fatal(err)
		}
		if r := one(t, seg, phys(wire.FPRD, 0x1001, mb.SendOffset, make([]byte, mb.SendSize))); r.WKC != 1 {
			t.Fatalf("%s: mailbox read: WKC %d", c.model, r.WKC)
		}
		if st := d.Register(0x080D, 1)[0]; st != c.want {
			t.Errorf("%s: SM1 status %#02x after the read, want %#02x", c.model, st, c.want)
		}
	}
}

// siiMailboxSMs configures SyncManagers 0 and 1 of device adp as its SII's
// standard mailbox and returns that mailbox.
func siiMailboxSMs(tb testing.TB, seg *Segment, adp uint16) sii.Mailbox {
	tb.Helper()
	for _, d := range seg.Devices() {
		if d.StationAddress() == adp {
			mb := d.sii.Header.StandardMailbox
			configSM(tb, seg, adp, 0, mb.ReceiveOffset, mb.ReceiveSize, 0x26)
			configSM(tb, seg, adp, 1, mb.SendOffset, mb.SendSize, 0x22)
			return mb
		}
	}
	tb.Fatalf("no device at %#04x", adp)
	return sii.Mailbox{}
}

// TestPresetWaitsForControllers: a preset segment is in the requested
// state at once, its mailboxes configured from the SII, on any clock, as
// the configuring master left it.
func TestPresetWaitsForControllers(t *testing.T) {
	now := int64(0)
	seg := newSeg(t, []string{"EK1100", "EL3004", "EK1914", "AKD"}, WithClock(func() int64 { return now }))
	if err := seg.Preset(0x1001, esc.StatePreOp); err != nil {
		t.Fatal(err)
	}
	for i, d := range seg.Devices() {
		if st, code := d.ALStatus(); st.State != esc.StatePreOp || st.Error {
			t.Errorf("device %d (%s): %+v code %v, want PREOP", i, d.Name(), st, code)
		}
	}
}
