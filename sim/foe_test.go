package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// TestBootNeedsBootstrapMailbox: INIT→BOOT is refused with 0x0015 until
// SM0/SM1 hold the SII's bootstrap mailbox (ETG.1000.6), then the mailbox
// runs in BOOT.
func TestBootNeedsBootstrapMailbox(t *testing.T) {
	seg := newSeg(t, []string{"AKD"})
	address(t, seg)
	request := func(st esc.ALState) {
		t.Helper()
		one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(uint16(st)|0x10)))
		for range 3 {
			one(t, seg, phys(wire.FPRD, 0x1001, 0x0130, make([]byte, 2)))
		}
	}
	request(esc.StateBootstrap)
	if st, code := seg.devices[0].ALStatus(); st.State != esc.StateInit || code != 0x0015 {
		t.Fatalf("BOOT without the bootstrap mailbox: %v code %v, want INIT, 0x0015", st, code)
	}
	sms := make([]byte, 16)
	esc.SyncManager{PhysicalStart: 0x1800, Length: 0x400, Control: 0x26, Activate: 1}.Encode(sms)
	esc.SyncManager{PhysicalStart: 0x1C00, Length: 0x400, Control: 0x22, Activate: 1}.Encode(sms[8:])
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0800, sms))
	request(esc.StateBootstrap)
	if st, _ := seg.devices[0].ALStatus(); st.State != esc.StateBootstrap || st.Error {
		t.Fatalf("BOOT with the bootstrap mailbox: %v", st)
	}
	// A CoE request in BOOT gets a mailbox error (only FoE runs there).
	req := make([]byte, 0x400)
	binary.LittleEndian.PutUint16(req, 10)
	req[5] = 0x03 // CoE, counter 0
	binary.LittleEndian.PutUint16(req[6:], 2<<12)
	req[8], req[9], req[10] = 0x40, 0x00, 0x10
	one(t, seg, phys(wire.FPWR, 0x1001, 0x1800, req))
	var ans wire.Datagram
	for range 5 {
		if ans = one(t, seg, phys(wire.FPRD, 0x1001, 0x1C00, make([]byte, 0x400))); ans.WKC == 1 {
			break
		}
	}
	if ans.WKC != 1 || ans.Data[5]&0x0F != mbxTypeError || binary.LittleEndian.Uint16(ans.Data[8:]) != mbxErrUnsupportedProtocol {
		t.Errorf("CoE in BOOT: WKC %d, answer % x; want a mailbox error 0x0002", ans.WKC, ans.Data[:10])
	}
}
