package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// mbxWrite writes one CoE message (service, body) into the receive
// mailbox of device adp.
func mbxWrite(tb testing.TB, seg *Segment, adp uint16, service uint16, body []byte) {
	tb.Helper()
	msg := make([]byte, 0x80)
	binary.LittleEndian.PutUint16(msg, uint16(2+len(body)))
	msg[5] = mbxTypeCoE // counter 0: a master that does not count, each request served
	binary.LittleEndian.PutUint16(msg[6:], service<<12)
	copy(msg[8:], body)
	if d := one(tb, seg, phys(wire.FPWR, adp, 0x1000, msg)); d.WKC != 1 {
		tb.Fatalf("mailbox write: WKC %d", d.WKC)
	}
}

// mbxRead waits for the send mailbox of device adp to fill and returns
// the message's mailbox data.
func mbxRead(tb testing.TB, seg *Segment, adp uint16) []byte {
	tb.Helper()
	for polls := 0; ; polls++ {
		if st := one(tb, seg, phys(wire.FPRD, adp, 0x080D, []byte{0})); st.Data[0]&smStatusFull != 0 {
			break
		}
		if polls > 10 {
			tb.Fatal("no mailbox message")
		}
	}
	d := one(tb, seg, phys(wire.FPRD, adp, 0x1080, make([]byte, 0x80)))
	if d.WKC != 1 {
		tb.Fatalf("mailbox read: WKC %d", d.WKC)
	}
	n := binary.LittleEndian.Uint16(d.Data)
	return d.Data[6 : 6+n]
}

// preOpEL3004 returns a segment with an EL3004 in PREOP at 0x1001.
func preOpEL3004(tb testing.TB) *Segment {
	tb.Helper()
	seg := newSeg(tb, []string{"EL3004"})
	address(tb, seg)
	mailboxSMs(tb, seg, 0x1001)
	if st, _ := request(tb, seg, 0x1001, 0x02); st != 0x02 {
		tb.Fatalf("PREOP: %#04x", st)
	}
	return seg
}

// TestCoESegmentedDownload downloads the complete TxPDO assignment in
// segments and checks the toggle: a repeated toggle aborts with
// 0x05030000, a segment without a download in progress with 0x05040001.
func TestCoESegmentedDownload(t *testing.T) {
	seg := preOpEL3004(t)
	// Initiate: complete access to 0x1C13 from sub 0, 18 bytes announced,
	// the first 4 with the request; then segments of 7, 5 (last) bytes.
	data := []byte{8, 0, 0x00, 0x1A, 0x02, 0x1A, 0x04, 0x1A, 0x06, 0x1A, 0, 0, 0, 0, 0, 0, 0, 0}
	initiate := append([]byte{0x31, 0x13, 0x1C, 0x00, 18, 0, 0, 0}, data[:4]...)
	steps := []struct {
		name string
		req  []byte
		want []byte // reply bytes from the command byte on
	}{
		{"initiate", initiate, []byte{0x60, 0x13, 0x1C, 0x00}},
		{"segment 1", append([]byte{0x00}, data[4:11]...), []byte{0x20}},
		{"segment 2, toggle", append([]byte{0x10}, data[11:18]...), []byte{0x30}},
	}
	steps[2].req[0] |= 0x01 // last
	for _, st := range steps {
		r := sdo(t, seg, 0x1001, st.req)
		if !bytes.HasPrefix(r[2:], st.want) {
			t.Fatalf("%s: reply % x, want % x…", st.name, r, st.want)
		}
	}
	if r := sdo(t, seg, 0x1001, []byte{0x40, 0x13, 0x1C, 0x02, 0, 0, 0, 0}); !bytes.Equal(r[6:8], []byte{0x02, 0x1A}) {
		t.Errorf("0x1C13:02 after the download: reply % x", r)
	}

	// Wrong toggle: the second segment repeats toggle 0.
	sdo(t, seg, 0x1001, initiate)
	sdo(t, seg, 0x1001, append([]byte{0x00}, data[4:11]...))
	r := sdo(t, seg, 0x1001, append([]byte{0x01}, data[11:18]...))
	if r[2] != 0x80 || binary.LittleEndian.Uint32(r[6:]) != abortToggle || binary.LittleEndian.Uint16(r[3:]) != 0x1C13 {
		t.Errorf("segment with a repeated toggle: reply % x, want abort %#08x of 0x1C13", r, abortToggle)
	}
	r = sdo(t, seg, 0x1001, append([]byte{0x11}, data[11:18]...))
	if r[2] != 0x80 || binary.LittleEndian.Uint32(r[6:]) != abortCommand {
		t.Errorf("segment after the abort: reply % x, want abort %#08x", r, abortCommand)
	}
	// Too many bytes for the announced size.
	sdo(t, seg, 0x1001, initiate)
	r = sdo(t, seg, 0x1001, append(append([]byte{0x00}, data[4:18]...), 1, 2, 3))
	if r[2] != 0x80 || binary.LittleEndian.Uint32(r[6:]) != abortLengthHigh {
		t.Errorf("segment beyond the announced size: reply % x, want abort %#08x", r, abortLengthHigh)
	}
}

// TestCoEEmergencyQueue checks that an emergency waits behind an SDO
// reply that is not read yet, that both arrive in order, and that a
// device without a mailbox refuses to send one.
func TestCoEEmergencyQueue(t *testing.T) {
	seg := preOpEL3004(t)
	dev := seg.Devices()[0]
	mbxWrite(t, seg, 0x1001, coeSDORequest, []byte{0x40, 0x18, 0x10, 0x01, 0, 0, 0, 0})
	for range 4 { // the reply is in the send mailbox now
		one(t, seg, phys(wire.FPRD, 0x1001, 0x0130, []byte{0, 0}))
	}
	if err := dev.SendEmergency(0xFF00, 0x81, [5]byte{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	if r := mbxRead(t, seg, 0x1001); binary.LittleEndian.Uint16(r)>>12 != coeSDOResponse || r[2] != 0x43 {
		t.Errorf("first message % x, want the SDO reply", r)
	}
	want := []byte{0x00, 0x10, 0x00, 0xFF, 0x81, 1, 2, 3, 4, 5}
	if r := mbxRead(t, seg, 0x1001); !bytes.Equal(r, want) {
		t.Errorf("second message % x, want the emergency % x", r, want)
	}
	for range replyQueueLen {
		if err := dev.SendEmergency(0x1000, 1, [5]byte{}); err != nil {
			t.Fatal(err)
		}
	}
	// One is in the send mailbox, replyQueueLen-1 wait: one more fits.
	if err := dev.SendEmergency(0x1000, 1, [5]byte{}); err != nil {
		t.Errorf("emergency filling the queue: %v", err)
	}
	if err := dev.SendEmergency(0x1000, 1, [5]byte{}); !errors.Is(err, ErrMailboxQueueFull) {
		t.Errorf("emergency beyond the queue: %v, want ErrMailboxQueueFull", err)
	}
	// A request while the queue is full waits in the receive mailbox
	// until there is room; its reply comes after the emergencies.
	mbxWrite(t, seg, 0x1001, coeSDORequest, []byte{0x40, 0x18, 0x10, 0x02, 0, 0, 0, 0})
	for i := range replyQueueLen + 1 {
		if r := mbxRead(t, seg, 0x1001); binary.LittleEndian.Uint16(r)>>12 != coeEmergency {
			t.Fatalf("message %d: % x, want an emergency", i, r)
		}
	}
	if r := mbxRead(t, seg, 0x1001); binary.LittleEndian.Uint16(r)>>12 != coeSDOResponse || binary.LittleEndian.Uint32(r[6:]) != 0x0BBC3052 {
		t.Errorf("after the emergencies: % x, want the SDO reply with the product code", r)
	}
	coupler, err := NewDevice("EK1100")
	if err != nil {
		t.Fatal(err)
	}
	if err := coupler.SendEmergency(0x1000, 1, [5]byte{}); !errors.Is(err, ErrNoCoE) {
		t.Errorf("emergency from an EK1100: %v, want ErrNoCoE", err)
	}
}

// TestCoERepeat loses a read reply at the master's side and asks for it
// again: the device puts its last message back and acknowledges; a
// repeat while the message is still unread only acknowledges.
func TestCoERepeat(t *testing.T) {
	seg := preOpEL3004(t)
	first := sdo(t, seg, 0x1001, []byte{0x40, 0x18, 0x10, 0x02, 0, 0, 0, 0})
	for i, req := range []byte{0x02, 0x00} {
		one(t, seg, phys(wire.FPWR, 0x1001, 0x080E, []byte{0x01 | req}))
		for range 3 {
			one(t, seg, phys(wire.FPRD, 0x1001, 0x0130, []byte{0, 0}))
		}
		if ack := one(t, seg, phys(wire.FPRD, 0x1001, 0x080F, []byte{0})).Data[0] & 0x02; ack != req {
			t.Fatalf("repeat %d: acknowledge %#x, want %#x", i, ack, req)
		}
		if r := mbxRead(t, seg, 0x1001); !bytes.Equal(r, first) {
			t.Errorf("repeat %d: message % x, want the last one % x", i, r, first)
		}
	}
	// Unread message: the acknowledge follows, the message stays.
	mbxWrite(t, seg, 0x1001, coeSDORequest, []byte{0x40, 0x18, 0x10, 0x01, 0, 0, 0, 0})
	for range 4 {
		one(t, seg, phys(wire.FPRD, 0x1001, 0x0130, []byte{0, 0}))
	}
	one(t, seg, phys(wire.FPWR, 0x1001, 0x080E, []byte{0x03}))
	one(t, seg, phys(wire.FPRD, 0x1001, 0x0130, []byte{0, 0}))
	if ack := one(t, seg, phys(wire.FPRD, 0x1001, 0x080F, []byte{0})).Data[0] & 0x02; ack != 0x02 {
		t.Errorf("repeat of an unread message: acknowledge %#x", ack)
	}
	if r := mbxRead(t, seg, 0x1001); r[2] != 0x43 || r[5] != 1 {
		t.Errorf("unread message after the repeat: % x, want the 0x1018:01 reply", r)
	}
}

// TestCoESDOInfo reads the EL3004's dictionary through the SDO
// information service and compares it with the dictionary itself.
func TestCoESDOInfo(t *testing.T) {
	seg := preOpEL3004(t)
	od := seg.Devices()[0].mbx.od
	info := func(op byte, body ...byte) (h coe.InfoHeader, data []byte) {
		mbxWrite(t, seg, 0x1001, coeSDOInfo, append([]byte{op, 0, 0, 0}, body...))
		r := mbxRead(t, seg, 0x1001)
		h, err := coe.DecodeInfoHeader(r[2:])
		if err != nil {
			t.Fatal(err)
		}
		return h, r[6:]
	}
	// OD list: in fragments of 116 bytes when longer.
	var list []byte
	h, data := info(0x01, 0x01, 0x00)
	list = append(list, data...)
	for h.Incomplete {
		r := mbxRead(t, seg, 0x1001)
		if h, _ = coe.DecodeInfoHeader(r[2:]); true {
			list = append(list, r[6:]...)
		}
	}
	_, got, err := coe.DecodeODList(list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []uint16
	for _, o := range od.objects {
		want = append(want, o.index)
	}
	if !slices.Equal(got, want) {
		t.Errorf("OD list %04x, want %04x", got, want)
	}
	for _, o := range od.objects {
		h, data := info(0x03, byte(o.index), byte(o.index>>8))
		d, err := coe.DecodeObjectDescription(data)
		if err != nil || h.OpCode != coe.InfoObjectReply || d.Index != o.index || d.Name != o.name ||
			uint8(d.ObjectCode) != o.code || d.MaxSubIndex != o.entries[len(o.entries)-1].sub {
			t.Errorf("%#04x: description %+v, %v (op %v)", o.index, d, err, h.OpCode)
		}
		for _, e := range o.entries {
			h, data := info(0x05, byte(o.index), byte(o.index>>8), e.sub, 0)
			d, err := coe.DecodeEntryDescription(data)
			if err != nil || h.OpCode != coe.InfoEntryReply || d.Index != o.index || d.SubIndex != e.sub ||
				d.Name != e.name || uint16(d.DataType) != e.dataType || d.Access&coe.AccessRead != coe.AccessRead ||
				(e.access == readOnly) != (d.Access&coe.AccessWrite == 0) || !e.process && int(d.BitLength) != 8*len(e.value) {
				t.Errorf("%#04x:%d: entry %+v, %v (op %v), dictionary %+v", o.index, e.sub, d, err, h.OpCode, e)
			}
		}
	}
	for _, c := range []struct {
		op   byte
		body []byte
		code uint32
	}{
		{0x03, []byte{0x55, 0x55}, abortNoObject},
		{0x05, []byte{0x18, 0x10, 9, 0}, abortNoSubIndex},
		{0x7F, []byte{0, 0}, abortCommand},
	} {
		h, data := info(c.op, c.body...)
		if h.OpCode != coe.InfoErrorRequest || binary.LittleEndian.Uint32(data) != c.code {
			t.Errorf("op %#x % x: %v % x, want error %#08x", c.op, c.body, h.OpCode, data, c.code)
		}
	}
}

// sdo sends one CoE SDO request through the mailbox of device adp (128-byte
// mailboxes at 0x1000/0x1080) and returns the reply's mailbox data.
func sdo(tb testing.TB, seg *Segment, adp uint16, req []byte) []byte {
	tb.Helper()
	msg := make([]byte, 0x80)
	binary.LittleEndian.PutUint16(msg, uint16(2+len(req)))
	msg[5] = mbxTypeCoE // counter 0: a master that does not count, each request served
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

// FuzzMailboxRequest writes arbitrary mailbox messages into an EL3004's
// receive mailbox: the device must answer each with a message that fits
// its send mailbox and whose header announces no more than it holds, and
// never panic. The seeds cover SDO uploads, downloads (expedited, normal,
// segmented), SDO information and a broken header.
func FuzzMailboxRequest(f *testing.F) {
	seeds := [][]byte{
		{10, 0, 0, 0, 0, 0x13, 0x00, 0x20, 0x40, 0x18, 0x10, 0x01, 0, 0, 0, 0},
		{10, 0, 0, 0, 0, 0x13, 0x00, 0x20, 0x23, 0x08, 0xF0, 0x00, 1, 2, 3, 4},
		{14, 0, 0, 0, 0, 0x13, 0x00, 0x20, 0x31, 0x13, 0x1C, 0x00, 18, 0, 0, 0, 8, 0, 0, 0x1A},
		{10, 0, 0, 0, 0, 0x13, 0x00, 0x20, 0x11, 1, 2, 3, 4, 5, 6, 7},
		{8, 0, 0, 0, 0, 0x13, 0x00, 0x80, 0x01, 0, 0, 0, 0x01, 0x00},
		{10, 0, 0, 0, 0, 0x13, 0x00, 0x80, 0x05, 0, 0, 0, 0x18, 0x10, 0x02, 0x00},
		{0xFF, 0xFF, 0, 0, 0, 0x13},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	seg := preOpEL3004(f)
	f.Fuzz(func(t *testing.T, req []byte) {
		msg := make([]byte, 0x80)
		copy(msg, req)
		if d := one(t, seg, phys(wire.FPWR, 0x1001, 0x1000, msg)); d.WKC != 1 {
			// A previous input left the receive mailbox full: the device
			// had no room for its answer. Read what waits and go on.
			one(t, seg, phys(wire.FPRD, 0x1001, 0x1080, make([]byte, 0x80)))
			return
		}
		for range 8 {
			one(t, seg, phys(wire.FPRD, 0x1001, 0x0130, []byte{0, 0}))
			d := one(t, seg, phys(wire.FPRD, 0x1001, 0x1080, make([]byte, 0x80)))
			if d.WKC != 1 {
				continue
			}
			if n := int(binary.LittleEndian.Uint16(d.Data)); mailboxHeaderLen+n > 0x80 {
				t.Fatalf("reply announces %d bytes in a 128-byte mailbox: % x", n, d.Data)
			}
		}
	})
}

// TestMailboxCounterDropsRepeats: the mailbox data link layer
// (ETG.1000.4). A master that counts its requests 1..7 sends a request it
// believes lost (its answer frame did not come back, or the receive
// mailbox was still full) again with the same counter; the device takes
// such a repeat out of its receive mailbox without serving it again. A
// master that does not count (counter 0) is served every time, and INIT
// forgets the last counter. Before the devices honoured the counter, a
// repeated last packet of an FoE write answered the read that followed
// with FoE error 0x8004 (illegal).
func TestMailboxCounterDropsRepeats(t *testing.T) {
	upload := []byte{0x40, 0x18, 0x10, 0x01, 0, 0, 0, 0} // 0x1018:01
	for _, tc := range []struct {
		name     string
		counters []uint8 // 8: INIT and back to PREOP in between
		served   []bool
	}{
		{"counting master", []uint8{1, 2, 3}, []bool{true, true, true}},
		{"repeat of the last request", []uint8{4, 4, 5}, []bool{true, false, true}},
		{"repeat twice", []uint8{2, 2, 2, 3}, []bool{true, false, false, true}},
		{"not counting", []uint8{0, 0, 0}, []bool{true, true, true}},
		{"7 wraps to 1", []uint8{7, 1, 1}, []bool{true, true, false}},
		{"INIT forgets the counter", []uint8{3, 8, 3}, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seg := preOpEL3004(t)
			var served []bool
			for _, c := range tc.counters {
				if c == 8 {
					if st, _ := request(t, seg, 0x1001, 0x01); st != 0x01 {
						t.Fatalf("INIT: %#04x", st)
					}
					mailboxSMs(t, seg, 0x1001)
					if st, _ := request(t, seg, 0x1001, 0x02); st != 0x02 {
						t.Fatalf("PREOP: %#04x", st)
					}
					continue
				}
				msg := make([]byte, 0x80)
				binary.LittleEndian.PutUint16(msg, uint16(2+len(upload)))
				msg[5] = mbxTypeCoE | c<<4
				binary.LittleEndian.PutUint16(msg[6:], coeSDORequest<<12)
				copy(msg[8:], upload)
				// The receive mailbox takes every copy: a repeat is taken
				// out of it like any request.
				if d := one(t, seg, phys(wire.FPWR, 0x1001, 0x1000, msg)); d.WKC != 1 {
					t.Fatalf("counter %d: mailbox write: WKC %d", c, d.WKC)
				}
				got := false
				for range 12 {
					if one(t, seg, phys(wire.FPRD, 0x1001, 0x080D, []byte{0})).Data[0]&smStatusFull != 0 {
						got = true
						break
					}
				}
				if got {
					d := one(t, seg, phys(wire.FPRD, 0x1001, 0x1080, make([]byte, 0x80)))
					if d.WKC != 1 || d.Data[8] != 0x43 {
						t.Fatalf("counter %d: answer WKC %d % x, want the 0x1018:01 upload", c, d.WKC, d.Data[:16])
					}
				}
				if st := one(t, seg, phys(wire.FPRD, 0x1001, 0x0805, []byte{0})).Data[0]; st&smStatusFull != 0 {
					t.Fatalf("counter %d: the receive mailbox stays full", c)
				}
				served = append(served, got)
			}
			if !slices.Equal(served, tc.served) {
				t.Errorf("counters %v served %v, want %v", tc.counters, served, tc.served)
			}
		})
	}
}
