package master

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/sim"
)

const pdoRealSII = "../testdata/real-hw/sii"

// pdoBench is a master on an in-process pipe to a simulated segment.
type pdoBench struct {
	m    *Master
	devs []*sim.Device
	logs *testsupport.SyncBuffer // the master's log lines
}

// abortLink turns the slaves' answers to SDO uploads of the given
// objects' sub-index 0 into aborts (object does not exist), as a device
// without them answers.
type abortLink struct {
	link.Link
	objects []uint16
}

func (l *abortLink) Recv(buf []byte, deadline time.Time) (int, error) {
	n, err := l.Link.Recv(buf, deadline)
	if err != nil {
		return n, err
	}
	f := buf[:n]
	for _, index := range l.objects {
		// CoE header of an SDO response, an upload response command,
		// the index and sub-index 0.
		for i := 0; i+10 <= len(f); i++ {
			if f[i] == 0x00 && f[i+1] == 0x30 && f[i+2]&0xE0 == 0x40 &&
				binary.LittleEndian.Uint16(f[i+3:]) == index && f[i+5] == 0 {
				f[i+2] = 0x80
				binary.LittleEndian.PutUint32(f[i+6:], uint32(coe.AbortNoObject))
			}
		}
	}
	return n, nil
}

func newPDOBench(t *testing.T, devices []string, cfg Config, abortObjects ...uint16) *pdoBench {
	t.Helper()
	devs, err := sim.ParseDevices(devices)
	if err != nil {
		t.Fatal(err)
	}
	seg := sim.NewSegment(devs)
	masterEnd, simEnd := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = seg.Serve(ctx, simEnd); close(done) }()
	b := &pdoBench{devs: devs, logs: &testsupport.SyncBuffer{}}
	cfg.Logger = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Timeout, cfg.CycleTimeout, cfg.SIITimeout = time.Second, 2*time.Second, time.Second
	var l link.Link = masterEnd
	if len(abortObjects) > 0 {
		l = &abortLink{Link: masterEnd, objects: abortObjects}
	}
	m, err := New(l, &cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	b.m = m
	t.Cleanup(func() {
		_ = m.Close()
		cancel()
		_ = simEnd.Close()
		<-done
		if t.Failed() {
			t.Logf("master log:\n%s", b.logs.String())
		}
	})
	return b
}

// bringUp takes the segment to OP the way BringUp does, with the PDO
// step after PREOP, and checks the working counter of a cycle in OP.
func (b *pdoBench) bringUp(ctx context.Context) error {
	if _, err := b.m.Scan(ctx); err != nil {
		return err
	}
	if err := b.m.RequestState(ctx, esc.StatePreOp); err != nil {
		return err
	}
	if err := b.m.readPDOConfiguration(ctx); err != nil {
		return err
	}
	if _, err := b.m.MapProcessImage(); err != nil {
		return err
	}
	if err := b.m.RequestState(ctx, esc.StateSafeOp); err != nil {
		return err
	}
	for range 3 {
		b.m.Exchange()
	}
	if err := b.m.RequestState(ctx, esc.StateOp); err != nil {
		return err
	}
	if r := b.m.Exchange(); r.Err != nil {
		return fmt.Errorf("first cycle in OP: %w (wkc %d, want %d)", r.Err, r.WKC, r.ExpectedWKC)
	}
	return nil
}

// cycle exchanges one frame and fails the test on a bad cycle.
func (b *pdoBench) cycle(t *testing.T) {
	t.Helper()
	if r := b.m.Exchange(); r.Err != nil {
		t.Fatalf("cycle: %v (wkc %d, want %d)", r.Err, r.WKC, r.ExpectedWKC)
	}
}

// twoInputSMImage writes the SII image of a 12-channel digital input
// terminal with two input SyncManagers (channels 1–4 on SyncManager 0 at
// 0x1000, channels 5–12 on SyncManager 1 at 0x1080) and returns its path.
func twoInputSMImage(t *testing.T) string {
	t.Helper()
	d := &sii.Device{
		Header: sii.Header{PDIControl: 0x0104, Version: 1,
			Identity: sii.Identity{VendorID: 2, ProductCode: 0x26B83052, RevisionNumber: 0x00100000}},
		Strings: []string{"EL9912", "12K. Dig. Eingang", "Input"},
		General: &sii.General{OrderIndex: 1, NameIndex: 2, PhysicalPorts: 0x0033},
		FMMUs:   []sii.FMMUUsage{sii.FMMUInputs, sii.FMMUInputs},
		SyncManagers: []sii.SyncManager{
			{StartAddress: 0x1000, Enable: 0x01, Type: sii.SMProcessDataIn},
			{StartAddress: 0x1080, Enable: 0x01, Type: sii.SMProcessDataIn},
		},
	}
	for c := range 12 {
		sm := uint8(0)
		if c >= 4 {
			sm = 1
		}
		d.TxPDOs = append(d.TxPDOs, sii.PDO{Index: 0x1A00 + uint16(c), SyncManager: sm, NameIndex: 3,
			Flags:   sii.PDOMandatory | sii.PDOFixedContent,
			Entries: []sii.PDOEntry{{Index: 0x6000 + 0x10*uint16(c), SubIndex: 1, NameIndex: 3, DataType: 1, BitLength: 1}}})
	}
	img, err := sii.Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "el9912.bin")
	if err := os.WriteFile(path, img, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withOffsets returns pdos with their entries' offsets counted from 0,
// one after the other: the layout of a slave whose SyncManagers of one
// direction form one run.
func withOffsets(pdos []PDO) []PDO {
	if len(pdos) == 0 {
		return nil
	}
	out := make([]PDO, len(pdos))
	at := 0
	for i, p := range pdos {
		out[i] = PDO{Index: p.Index, SM: p.SM, Entries: append([]PDOEntry(nil), p.Entries...)}
		for j := range out[i].Entries {
			out[i].Entries[j].Offset = at
			at += out[i].Entries[j].Bits
		}
	}
	return out
}
