package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// request writes AL control and lets the delay pass; it returns AL status
// and AL status code as read back.
func request(tb testing.TB, seg *Segment, adp uint16, ctl uint16) (uint16, esc.ALStatusCode) {
	tb.Helper()
	one(tb, seg, phys(wire.FPWR, adp, 0x0120, le16b(ctl)))
	for range 6 {
		one(tb, seg, phys(wire.NOP, 0, 0, []byte{0}))
	}
	d := one(tb, seg, phys(wire.FPRD, adp, 0x0130, make([]byte, 6)))
	return binary.LittleEndian.Uint16(d.Data), esc.ALStatusCode(binary.LittleEndian.Uint16(d.Data[4:]))
}

func mailboxSMs(tb testing.TB, seg *Segment, adp uint16) {
	configSM(tb, seg, adp, 0, 0x1000, 0x80, 0x26)
	configSM(tb, seg, adp, 1, 0x1080, 0x80, 0x22)
}

func TestStateMachineRules(t *testing.T) {
	type step struct {
		setup      func(tb testing.TB, seg *Segment)
		ctl        uint16
		wantStatus uint16
		wantCode   esc.ALStatusCode
	}
	none := func(testing.TB, *Segment) {}
	mbx := func(tb testing.TB, seg *Segment) { mailboxSMs(tb, seg, 0x1001) }
	inputsOK := func(tb testing.TB, seg *Segment) { configSM(tb, seg, 0x1001, 3, 0x1180, 16, 0x20) }
	tests := []struct {
		name  string
		steps []step
	}{
		{"INIT to OP is invalid", []step{{none, 0x08, 0x11, esc.ALInvalidStateChange}}},
		{"INIT to SAFEOP is invalid", []step{{none, 0x04, 0x11, esc.ALInvalidStateChange}}},
		{"unknown state", []step{{none, 0x05, 0x11, esc.ALUnknownState}}},
		{"bootstrap without bootstrap mailbox", []step{{none, 0x03, 0x11, esc.ALBootstrapNotSupported}}},
		{"PREOP needs the mailbox SyncManagers", []step{{none, 0x02, 0x11, esc.ALInvalidMailboxConfig}}},
		{"acknowledge clears the error", []step{{none, 0x02, 0x11, esc.ALInvalidMailboxConfig}, {none, 0x11, 0x01, esc.ALNoError}}},
		{"no way up before the acknowledge", []step{{none, 0x08, 0x11, esc.ALInvalidStateChange}, {mbx, 0x02, 0x11, esc.ALInvalidStateChange}, {none, 0x12, 0x02, esc.ALNoError}}},
		{"PREOP with the mailbox configured", []step{{mbx, 0x02, 0x02, esc.ALNoError}}},
		{"PREOP to OP is invalid", []step{{mbx, 0x02, 0x02, 0}, {none, 0x08, 0x12, esc.ALInvalidStateChange}}},
		{"SAFEOP needs the input SyncManager", []step{{mbx, 0x02, 0x02, 0}, {none, 0x04, 0x12, esc.ALInvalidSyncManagerConfig}}},
		{"SAFEOP with wrong input size", []step{{mbx, 0x02, 0x02, 0},
			{func(tb testing.TB, seg *Segment) { configSM(tb, seg, 0x1001, 3, 0x1180, 8, 0x20) }, 0x04, 0x12, esc.ALInvalidInputConfig}}},
		{"SAFEOP with wrong direction", []step{{mbx, 0x02, 0x02, 0},
			{func(tb testing.TB, seg *Segment) { configSM(tb, seg, 0x1001, 3, 0x1180, 16, 0x24) }, 0x04, 0x12, esc.ALInvalidSyncManagerConfig}}},
		{"up to OP and back to INIT", []step{{mbx, 0x02, 0x02, 0}, {inputsOK, 0x04, 0x04, 0}, {none, 0x08, 0x08, 0}, {none, 0x01, 0x01, 0}}},
		{"down always works, also with an error", []step{{mbx, 0x02, 0x02, 0}, {none, 0x08, 0x12, esc.ALInvalidStateChange}, {none, 0x01, 0x01, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := newSeg(t, []string{"EL3204"})
			address(t, seg)
			for i, s := range tt.steps {
				s.setup(t, seg)
				st, code := request(t, seg, 0x1001, s.ctl)
				if st != s.wantStatus || code != s.wantCode {
					t.Fatalf("step %d (AL control %#04x): status %#04x code %v, want %#04x %v", i, s.ctl, st, code, s.wantStatus, s.wantCode)
				}
			}
		})
	}
}

func TestOutputSizeRefusal(t *testing.T) {
	seg := newSeg(t, []string{"EL4132"})
	address(t, seg)
	mailboxSMs(t, seg, 0x1001)
	if st, _ := request(t, seg, 0x1001, 0x02); st != 0x02 {
		t.Fatalf("PREOP: %#04x", st)
	}
	configSM(t, seg, 0x1001, 2, 0x1100, 2, 0x64)
	if st, code := request(t, seg, 0x1001, 0x04); st != 0x12 || code != esc.ALInvalidOutputConfig {
		t.Errorf("SAFEOP with 2 output bytes for 4: %#04x %v", st, code)
	}
	configSM(t, seg, 0x1001, 2, 0x1100, 4, 0x64)
	if st, code := request(t, seg, 0x1001, 0x14); st != 0x04 || code != 0 {
		t.Errorf("SAFEOP with 4 output bytes: %#04x %v", st, code)
	}
}

func TestStateChangeDelay(t *testing.T) {
	for _, delay := range []int{0, 1, 3} {
		seg := newSeg(t, []string{"EL3204"}, WithStateChangeDelay(delay))
		address(t, seg)
		mailboxSMs(t, seg, 0x1001)
		one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x02)))
		polls := 0
		for ; polls < 10; polls++ {
			d := one(t, seg, phys(wire.FPRD, 0x1001, 0x0130, make([]byte, 2)))
			if d.Data[0] == 0x02 {
				break
			}
		}
		if polls != delay {
			t.Errorf("delay %d: %d polls showed the old state", delay, polls)
		}
	}
}

func TestDeviceEmulationMirrorsALControl(t *testing.T) {
	// The real EK1100 and EL2004 copy AL control into AL status, with no
	// checks and no delay: 0x0011 reads back as INIT with the error bit.
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	address(t, seg)
	for _, ctl := range []uint16{0x0011, 0x0008, 0x0002, 0x0004} {
		one(t, seg, phys(wire.BWR, 0, 0x0120, le16b(ctl)))
		d := one(t, seg, phys(wire.BRD, 0, 0x0130, make([]byte, 6)))
		if got := binary.LittleEndian.Uint16(d.Data); got != ctl || d.WKC != 2 || d.Data[4] != 0 {
			t.Errorf("AL control %#04x: AL status %#04x code % x WKC %d", ctl, got, d.Data[4:], d.WKC)
		}
	}
	if s := seg.Devices()[1].State(); s != esc.StateSafeOp {
		t.Errorf("State() = %v", s)
	}
}
