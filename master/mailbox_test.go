package master_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/sim"
)

// smallMailboxEL4132 writes the SII image of the EL4132 model with its
// standard mailbox shrunk to 24 bytes (header words 0x18..0x1B), so that
// the 37-byte device name needs a segmented upload of three messages.
func smallMailboxEL4132(t *testing.T) string {
	t.Helper()
	d, err := sim.NewDevice("EL4132")
	if err != nil {
		t.Fatal(err)
	}
	img := d.SII()
	for i, v := range []uint16{0x1000, 24, 0x1080, 24} {
		binary.LittleEndian.PutUint16(img[0x30+2*i:], v)
	}
	path := filepath.Join(t.TempDir(), "el4132-small-mailbox.bin")
	if err := os.WriteFile(path, img, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSDOOverSimulatedSegment(t *testing.T) {
	m, _ := simbus.Start(t, []string{"EK1100", "EL4132", "EL3004", smallMailboxEL4132(t)}, master.Config{})
	ctx := context.Background()
	slaves := m.Slaves()
	coupler, el4132, el3004, small := slaves[0], slaves[1], slaves[2], slaves[3]
	const el4132Name = "EL4132 2K. Ana. Ausgang +/-10V, 16bit"
	if small.Mailbox.ReceiveSize != 24 || small.Mailbox.SendSize != 24 {
		t.Fatalf("patched EL4132 has mailbox %+v, want 24 bytes each way", small.Mailbox)
	}

	uploads := []struct {
		name  string
		slave *master.Slave
		index uint16
		sub   uint8
		want  []byte
	}{
		{"vendor id, expedited", el4132, 0x1018, 1, []byte{2, 0, 0, 0}},
		{"product code", el4132, 0x1018, 2, []byte{0x52, 0x30, 0x24, 0x10}},
		{"device name, normal", el4132, 0x1008, 0, []byte(el4132Name)},
		{"device name, segmented", small, 0x1008, 0, []byte(el4132Name)},
		{"EL3004 software version as in the capture", el3004, 0x100A, 0, []byte("08")},
	}
	for _, c := range uploads {
		got, err := m.SDOUpload(ctx, c.slave, c.index, c.sub)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: SDOUpload(%#04x:%d) = %q, %v; want %q", c.name, c.index, c.sub, got, err, c.want)
		}
	}

	// Complete access: sub-index 0 as 16 bits, then the four identity words.
	got, err := m.SDOUploadComplete(ctx, el4132, 0x1018, 0)
	if err != nil || len(got) != 18 || got[0] != 4 || got[1] != 0 || binary.LittleEndian.Uint32(got[2:]) != 2 ||
		binary.LittleEndian.Uint32(got[6:]) != 0x10243052 {
		t.Errorf("complete upload of 0x1018 = % x, %v", got, err)
	}

	// Download and read back, expedited and with a shorter value.
	for _, v := range [][]byte{{0x78, 0x56, 0x34, 0x12}, {0xEF, 0xBE, 0xAD, 0xDE}} {
		if err := m.SDODownload(ctx, el4132, 0xF008, 0, v); err != nil {
			t.Fatalf("download 0xF008 % x: %v", v, err)
		}
		if got, err := m.SDOUpload(ctx, el4132, 0xF008, 0); err != nil || !bytes.Equal(got, v) {
			t.Errorf("after downloading % x, 0xF008 reads % x, %v", v, got, err)
		}
	}

	aborts := []struct {
		name  string
		run   func() error
		index uint16
		sub   uint8
		code  coe.AbortCode
		text  string
	}{
		{"nonexistent object", func() error { _, err := m.SDOUpload(ctx, el4132, 0x5555, 0); return err },
			0x5555, 0, 0x06020000, "object does not exist in the object dictionary"},
		{"nonexistent sub-index", func() error { _, err := m.SDOUpload(ctx, el4132, 0x1018, 9); return err },
			0x1018, 9, 0x06090011, "subindex does not exist"},
		{"read-only object", func() error { return m.SDODownload(ctx, el4132, 0x1018, 1, []byte{1, 2, 3, 4}) },
			0x1018, 1, 0x06010002, "attempt to write a read-only object"},
		{"too short a value", func() error { return m.SDODownload(ctx, el4132, 0xF008, 0, []byte{1, 2}) },
			0xF008, 0, 0x06070013, "length of service parameter too low"},
	}
	for _, c := range aborts {
		err := c.run()
		var ae *coe.AbortError
		if !errors.As(err, &ae) || ae.Index != c.index || ae.SubIndex != c.sub || ae.Code != c.code {
			t.Errorf("%s: error %v, want abort %#08x of %#04x:%d", c.name, err, uint32(c.code), c.index, c.sub)
			continue
		}
		if !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: error %q does not name %q", c.name, err, c.text)
		}
	}
	// The mailbox still works after the aborts.
	if got, err := m.SDOUpload(ctx, el4132, 0x1018, 1); err != nil || !bytes.Equal(got, []byte{2, 0, 0, 0}) {
		t.Errorf("upload after aborts = % x, %v", got, err)
	}

	if _, err := m.SDOUpload(ctx, coupler, 0x1000, 0); !errors.Is(err, master.ErrNoMailbox) {
		t.Errorf("upload from the EK1100: %v, want ErrNoMailbox", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.SDOUpload(canceled, el4132, 0x1018, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("upload with a canceled context: %v", err)
	}
	// 400 bytes take a segmented download (112 bytes, then segments of
	// 119); the slave checks the length once it has them all.
	var ae *coe.AbortError
	if err := m.SDODownload(ctx, el4132, 0xF008, 0, make([]byte, 400)); !errors.As(err, &ae) || ae.Code != coe.AbortLengthHigh {
		t.Errorf("segmented download of 400 bytes into a 4-byte object: %v, want abort %v", err, coe.AbortLengthHigh)
	}

	// Segmented download through the 24-byte mailbox (8 bytes in the
	// initiate request, 15 per segment): the complete RxPDO assignment,
	// sub-index 0 as 16 bits and eight entries, 18 bytes.
	if err := m.RequestSlaveState(ctx, small, esc.StatePreOp); err != nil {
		t.Fatal(err)
	}
	assign := []byte{8, 0}
	for k := range 8 {
		assign = append(assign, byte(k%2), 0x16) // 0x1600, 0x1601, 0x1600, …
	}
	if err := m.SDODownloadComplete(ctx, small, 0x1C12, 0, assign); err != nil {
		t.Fatalf("segmented complete download of 0x1C12: %v", err)
	}
	if got, err := m.SDOUploadComplete(ctx, small, 0x1C12, 0); err != nil || !bytes.Equal(got, assign) {
		t.Errorf("0x1C12 after the complete download reads % x, %v; want % x", got, err, assign)
	}
	if got, err := m.SDOUpload(ctx, small, 0x1C12, 7); err != nil || !bytes.Equal(got, []byte{0x00, 0x16}) {
		t.Errorf("0x1C12:7 after the complete download reads % x, %v; want 00 16", got, err)
	}
	if err := m.SDODownloadComplete(ctx, small, 0x1C12, 0, []byte{2, 0, 0x00, 0x16, 0x01, 0x16}); err != nil {
		t.Errorf("complete download of the original assignment: %v", err)
	}
	if err := m.SDODownloadComplete(ctx, small, 0x1018, 0, make([]byte, 18)); !errors.As(err, &ae) || ae.Code != coe.AbortReadOnly {
		t.Errorf("segmented complete download into the identity: %v, want abort %v", err, coe.AbortReadOnly)
	}
	if got, err := m.SDOUpload(ctx, small, 0x1018, 1); err != nil || !bytes.Equal(got, []byte{2, 0, 0, 0}) {
		t.Errorf("upload after the aborted segmented download = % x, %v", got, err)
	}
	if err := m.RequestSlaveState(ctx, small, esc.StateInit); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SDOUpload(ctx, small, 0x1018, 1); !errors.Is(err, master.ErrMailboxInactive) {
		t.Errorf("upload from a slave in INIT: %v, want ErrMailboxInactive", err)
	}
}

// TestMailboxCounterCarriesOver checks that the mailbox counter goes on
// from one SDO transfer to the next instead of starting at 1 again: a
// slave may drop a request whose counter repeats the previous one.
func TestMailboxCounterCarriesOver(t *testing.T) {
	b := newBench(t, []string{"EK1100", "EL4132"}, master.Config{})
	bringUp(t, b)
	el4132 := b.m.Slaves()[1]
	b.link.record = true
	for range 3 {
		if _, err := b.m.SDOUpload(context.Background(), el4132, 0x1018, 1); err != nil {
			t.Fatal(err)
		}
	}
	b.link.record = false
	var counters []uint8
	for _, frame := range b.link.sent {
		for d := range master.Datagrams(frame) {
			if d.Command == wire.FPWR && d.ADP() == el4132.StationAddress && d.ADO() == el4132.Mailbox.ReceiveOffset {
				h, err := coe.DecodeMailboxHeader(d.Data)
				if err != nil {
					t.Fatal(err)
				}
				counters = append(counters, h.Counter)
			}
		}
	}
	if len(counters) < 3 {
		t.Fatalf("saw %d mailbox requests, want 3", len(counters))
	}
	for i := 1; i < len(counters); i++ {
		if counters[i] == counters[i-1] || counters[i] != coe.NextCounter(counters[i-1]) {
			t.Errorf("mailbox counters %v: request %d does not follow the one before", counters, i)
		}
	}
}
