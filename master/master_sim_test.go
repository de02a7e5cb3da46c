package master_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/sim"
)

func TestBringUpReferenceSet(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{ExpectedSlaves: len(referenceSet)})
	bringUp(t, b)
	slaves := b.m.Slaves()
	if len(slaves) != len(referenceSet) {
		t.Fatalf("%d slaves, want %d", len(slaves), len(referenceSet))
	}
	want := []struct {
		name    string
		product uint32
		in, out int
		parent  int
	}{
		{"EK1100", 0x044C2C52, 0, 0, master.NoParent},
		{"EL2004", 0x07D43052, 0, 4, 0},
		{"EL2004", 0x07D43052, 0, 4, 1},
		{"EL1014", 0x03F63052, 4, 0, 2},
		{"EL1014", 0x03F63052, 4, 0, 3},
		{"EL4132", 0x10243052, 0, 32, 4},
		{"EK1110", 0x04562C52, 0, 0, 5},
	}
	for i, s := range slaves {
		w := want[i]
		if s.Position != i || s.StationAddress != uint16(0x1001+i) {
			t.Errorf("slave %d: position %d address %#04x", i, s.Position, s.StationAddress)
		}
		if s.OrderCode != w.name || s.Identity.VendorID != 2 || s.Identity.ProductCode != w.product {
			t.Errorf("slave %d: %s vendor %#x product %#x, want %s 2 %#x", i, s.OrderCode,
				s.Identity.VendorID, s.Identity.ProductCode, w.name, w.product)
		}
		if s.InputBits != w.in || s.OutputBits != w.out {
			t.Errorf("%v: %d in / %d out bits, want %d / %d", s, s.InputBits, s.OutputBits, w.in, w.out)
		}
		if s.Parent != w.parent {
			t.Errorf("%v: parent %d, want %d (ports %v)", s, s.Parent, w.parent, s.Ports)
		}
		if s.State() != esc.StateOp || b.devs[i].State() != esc.StateOp {
			t.Errorf("%v: master sees %v, device is in %v", s, s.State(), b.devs[i].State())
		}
	}
	if !slaves[0].DC {
		t.Error("EK1100 should support DC")
	}
	if slaves[5].HasMailbox != true || slaves[5].Mailbox.ReceiveSize == 0 {
		t.Errorf("EL4132 mailbox %+v", slaves[5].Mailbox)
	}
	// Expected WKC: three slaves with outputs (+2), two with inputs (+1).
	cy := b.m.Cyclic()
	if cy.ExpectedWKC() != 8 || cy.Frames() != 1 {
		t.Errorf("expected WKC %d in %d frames, want 8 in 1", cy.ExpectedWKC(), cy.Frames())
	}
	for i := range 10 {
		r := b.m.Exchange()
		if r.Cycle != uint64(i+1) || r.Err != nil || r.WKC != 8 || r.Lost != 0 || !r.AllInState(7, esc.StateOp) || r.RTT() <= 0 {
			t.Fatalf("cycle %+v", r)
		}
	}
	if st := b.m.Stats(); st.Cycles != 10 || st.LostFrames != 0 || st.WKCErrors != 0 {
		t.Errorf("stats %+v", st)
	}
	for _, step := range []string{"bring-up: scanned", "bring-up: PREOP", "bring-up: SAFEOP", "bring-up: OP"} {
		if !strings.Contains(b.logs.String(), step) {
			t.Errorf("log lacks %q", step)
		}
	}
}

func TestSlaveCountMismatch(t *testing.T) {
	for _, expected := range []int{5, 8} {
		b := newBench(t, referenceSet, master.Config{ExpectedSlaves: expected})
		_, err := b.m.Scan(context.Background())
		var ce *master.SlaveCountError
		if !errors.As(err, &ce) || ce.Expected != expected || ce.Found != 7 {
			t.Fatalf("expected %d: err %v, want *SlaveCountError{%d, 7}", expected, err, expected)
		}
		if !strings.Contains(err.Error(), "found 7") || !strings.Contains(err.Error(), fmt.Sprint("expects ", expected)) {
			t.Errorf("message %q should name both counts", err)
		}
	}
}

func TestSlaveRefusesState(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{})
	ctx := context.Background()
	if _, err := b.m.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.m.RequestState(ctx, esc.StatePreOp); err != nil {
		t.Fatal(err)
	}
	// Misconfigure the EL4132: claim 48 output bits where its PDOs have
	// 32, so the master sizes SyncManager 2 at 6 bytes instead of 4.
	el4132 := b.m.Slaves()[5]
	for i := range el4132.SyncManagers {
		if el4132.SyncManagers[i].Bits == 32 {
			el4132.SyncManagers[i].Bits = 48
		}
	}
	err := b.m.RequestState(ctx, esc.StateSafeOp)
	var se *master.ALStateError
	if !errors.As(err, &se) {
		t.Fatalf("err %v, want *ALStateError", err)
	}
	want := master.ALStateError{Position: 5, Address: 0x1006, Name: "EL4132", From: esc.StatePreOp,
		Requested: esc.StateSafeOp, Current: esc.StatePreOp, Code: esc.ALInvalidOutputConfig}
	if *se != want {
		t.Errorf("error %+v, want %+v", *se, want)
	}
	if !strings.Contains(err.Error(), "invalid output configuration") {
		t.Errorf("message %q lacks the code's name", err)
	}
	// The error was acknowledged; the other slaves went on to SAFEOP.
	if st, code := b.devs[5].ALStatus(); st.Error || st.State != esc.StatePreOp {
		t.Errorf("EL4132 status %v code %v after the refusal, want PREOP acknowledged", st, code)
	}
	for i, d := range b.devs {
		if i != 5 && d.State() != esc.StateSafeOp {
			t.Errorf("device %d (%s) in %v, want SAFEOP", i, d.Name(), d.State())
		}
	}
}

func TestBadSIIChecksumWarns(t *testing.T) {
	img, err := os.ReadFile(filepath.Join(realSII, "el2004.bin"))
	if err != nil {
		t.Fatal(err)
	}
	img[0x0E] ^= 0xFF // header checksum
	path := filepath.Join(t.TempDir(), "el2004-bad-crc.bin")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBench(t, []string{filepath.Join(realSII, "ek1100.bin"), path}, master.Config{})
	bringUp(t, b)
	s := b.m.Slaves()[1]
	if s.OrderCode != "EL2004" || s.OutputBits != 4 {
		t.Errorf("slave with bad checksum: %s, %d output bits", s.OrderCode, s.OutputBits)
	}
	logs := b.logs.String()
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "checksum") || !strings.Contains(logs, "slave 1") {
		t.Errorf("no checksum warning for slave 1 in log:\n%s", logs)
	}
	if strings.Count(logs, "checksum mismatch") != 1 {
		t.Errorf("the good image of slave 0 was also reported:\n%s", logs)
	}
}

func TestBringUpRealSIIImages(t *testing.T) {
	var devices []string
	for _, f := range []string{"ek1100.bin", "el2004.bin", "el2828.bin", "el2889.bin"} {
		devices = append(devices, filepath.Join(realSII, f))
	}
	b := newBench(t, devices, master.Config{ExpectedSlaves: 4})
	bringUp(t, b)
	slaves, img := b.m.Slaves(), b.m.Image()
	wantOut := []int{0, 4, 8, 16}
	for i, s := range slaves {
		if s.OutputBits != wantOut[i] || s.State() != esc.StateOp {
			t.Errorf("%v: %d output bits in %v, want %d in OP", s, s.OutputBits, s.State(), wantOut[i])
		}
	}
	if b.m.Cyclic().ExpectedWKC() != 6 {
		t.Errorf("expected WKC %d, want 6", b.m.Cyclic().ExpectedWKC())
	}
	// EL2004 bits 0–3, EL2828 byte 1, EL2889 bytes 2–3.
	_ = img.SetOutputBits(slaves[1], []byte{0x09})
	_ = img.SetOutputValue(slaves[2], 0, 8, 0xA5)
	_ = img.SetOutputValue(slaves[3], 0, 16, 0xBEEF)
	if r := b.m.Exchange(); r.Err != nil {
		t.Fatalf("%+v", r)
	}
	if !bytes.Equal(img.Outputs(), []byte{0x09, 0xA5, 0xEF, 0xBE}) {
		t.Errorf("image outputs % x", img.Outputs())
	}
	for i, want := range [][]byte{nil, {0x09}, {0xA5}, {0xEF, 0xBE}} {
		if i == 0 {
			continue
		}
		if got := b.devs[i].Register(0x0F00, len(want)); !bytes.Equal(got, want) {
			t.Errorf("%s: output register 0x0f00 % x, want % x", b.devs[i].Name(), got, want)
		}
	}
}

func TestStateTimeout(t *testing.T) {
	// The EL4132's controller takes 100000 frames per state change.
	b := newBench(t, []string{"EK1100", "EL4132"}, master.Config{StateTimeout: 300 * time.Millisecond},
		sim.WithStateChangeDelay(100000))
	ctx := context.Background()
	if _, err := b.m.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	err := b.m.RequestState(ctx, esc.StatePreOp)
	var te *master.StateTimeoutError
	if !errors.As(err, &te) || te.Position != 1 || te.Name != "EL4132" || te.Requested != esc.StatePreOp ||
		te.Current.State != esc.StateInit {
		t.Fatalf("err %v, want *StateTimeoutError for the EL4132 stuck in INIT", err)
	}
	var se *master.ALStateError
	if errors.As(err, &se) {
		t.Errorf("a slow slave is not a refusing one: %v", err)
	}
	if b.devs[0].State() != esc.StatePreOp {
		t.Errorf("EK1100 in %v, want PREOP", b.devs[0].State())
	}
}

func TestCloseTakesSlavesToInit(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{})
	bringUp(t, b)
	if err := b.m.Close(); err != nil {
		t.Fatal(err)
	}
	// Close requested INIT from every slave (devices with an application
	// controller carry it out on their next frames, which no longer come).
	for _, d := range b.devs {
		if ctl := d.Register(uint16(esc.RegALControl), 2); ctl[0] != byte(esc.StateInit) {
			t.Errorf("%s: AL control %#02x after Close, want INIT", d.Name(), ctl[0])
		}
	}
	if err := b.m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := b.m.Scan(context.Background()); !errors.Is(err, master.ErrClosed) {
		t.Errorf("Scan after Close: %v", err)
	}
	if r := b.m.Exchange(); r.Err == nil {
		t.Error("Exchange after Close succeeded")
	}
}

func TestOperationsBeforeScan(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{})
	ctx := context.Background()
	if err := b.m.RequestState(ctx, esc.StateOp); !errors.Is(err, master.ErrNotScanned) {
		t.Errorf("RequestState: %v", err)
	}
	if _, err := b.m.MapProcessImage(); !errors.Is(err, master.ErrNotScanned) {
		t.Errorf("MapProcessImage: %v", err)
	}
	if r := b.m.Exchange(); r.Err != master.ErrNotMapped {
		t.Errorf("Exchange: %+v", r)
	}
	if b.m.Image() != nil || b.m.Cyclic() != nil {
		t.Error("image before mapping")
	}
}

func TestRequestStateAcknowledgesEarlierErrors(t *testing.T) {
	// Application controllers that decide after 1 and after 5 frames: the
	// master must wait for the acknowledge to be taken, not overwrite it.
	for _, delay := range []int{1, 5} {
		t.Run(fmt.Sprint("ESM delay ", delay), func(t *testing.T) { testAcknowledge(t, delay) })
	}
}

func testAcknowledge(t *testing.T, delay int) {
	b := newBench(t, referenceSet, master.Config{}, sim.WithStateChangeDelay(delay))
	bringUp(t, b)
	ctx := context.Background()
	cases := []struct {
		name    string
		slave   int
		control uint16 // written behind the master's back
	}{
		// An EL2004 in device emulation mirrors AL control, acknowledge
		// bit included: it now shows SAFEOP+ERR.
		{"device emulation", 1, uint16(esc.StateSafeOp) | 0x10},
		// The EL4132's controller refuses BOOT (no bootstrap mailbox):
		// OP+ERR with code 0x0013.
		{"application controller", 5, uint16(esc.StateBootstrap)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := b.m.Slaves()[c.slave]
			ctl := []byte{byte(c.control), byte(c.control >> 8)}
			if err := b.m.Bus().FPWR(ctx, s.StationAddress, uint16(esc.RegALControl), ctl); err != nil {
				t.Fatal(err)
			}
			for range 20 { // frames pass until the device has decided
				if st, _ := b.devs[c.slave].ALStatus(); st.Error {
					break
				}
				_ = b.m.Bus().FPRD(ctx, s.StationAddress, uint16(esc.RegALStatus), make([]byte, 2))
			}
			if st, _ := b.devs[c.slave].ALStatus(); !st.Error {
				t.Fatalf("device shows no error indication: %v", st)
			}
			if err := b.m.RequestState(ctx, esc.StateOp); err != nil {
				t.Fatal(err)
			}
			if st, code := b.devs[c.slave].ALStatus(); st.Error || st.State != esc.StateOp {
				t.Errorf("device %v code %v, want OP without error", st, code)
			}
			if !strings.Contains(b.logs.String(), "acknowledging error indication") {
				t.Error("the acknowledge was not logged")
			}
			if r := b.m.Exchange(); !r.AllInState(7, esc.StateOp) || r.Err != nil {
				t.Errorf("cycle after the acknowledge: %+v", r)
			}
		})
	}
}

func TestBringUpWithSlowDevices(t *testing.T) {
	// Controllers that take 5 frames per state change and EEPROMs that
	// stay busy for 4 frames per read: every wait of the master is a poll.
	b := newBench(t, referenceSet, master.Config{}, sim.WithStateChangeDelay(5), sim.WithSIIBusyFrames(4))
	bringUp(t, b)
	for i, d := range b.devs {
		if d.State() != esc.StateOp {
			t.Errorf("device %d (%s) in %v", i, d.Name(), d.State())
		}
	}
	if r := b.m.Exchange(); r.Err != nil || !r.AllInState(7, esc.StateOp) {
		t.Errorf("%+v", r)
	}
}
