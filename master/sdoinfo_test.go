package master_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
)

// TestSDOInfoEL3004 reads the EL3004's object dictionary through the SDO
// information service and checks it against what the objects hold: every
// listed object has a description, every entry one whose size matches the
// value an upload returns.
func TestSDOInfoEL3004(t *testing.T) {
	m, _ := simbus.Start(t, []string{"EK1100", "EL3004", smallMailboxEL4132(t), "EL4132"}, master.Config{})
	ctx := context.Background()
	el3004, small, el4132 := m.Slaves()[1], m.Slaves()[2], m.Slaves()[3]

	list, err := m.SDOInfoList(ctx, el3004)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []uint16{0x1000, 0x1008, 0x1018, 0x1A00, 0x1C00, 0x1C13, 0x6000, 0xF008} {
		if !slices.Contains(list, want) {
			t.Errorf("OD list %04x lacks %#04x", list, want)
		}
	}
	if !slices.IsSorted(list) {
		t.Errorf("OD list %04x is not in index order", list)
	}

	objects := []struct {
		index uint16
		want  coe.ObjectDescription
	}{
		{0x1018, coe.ObjectDescription{Index: 0x1018, DataType: 0x0023, MaxSubIndex: 4, ObjectCode: coe.ObjectRecord, Name: "Identity"}},
		{0x1008, coe.ObjectDescription{Index: 0x1008, DataType: 0x0009, ObjectCode: coe.ObjectVar, Name: "Device name"}},
		{0x1C13, coe.ObjectDescription{Index: 0x1C13, DataType: 0x0006, MaxSubIndex: 8, ObjectCode: coe.ObjectArray, Name: "TxPDO assign"}},
	}
	for _, c := range objects {
		if got, err := m.SDOInfoObject(ctx, el3004, c.index); err != nil || got != c.want {
			t.Errorf("SDOInfoObject(%#04x) = %+v, %v; want %+v", c.index, got, err, c.want)
		}
	}
	entries := []struct {
		index uint16
		sub   uint8
		want  coe.EntryDescription
	}{
		{0x1018, 2, coe.EntryDescription{Index: 0x1018, SubIndex: 2, DataType: 0x0007, BitLength: 32, Access: coe.AccessRead, Name: "Product code"}},
		{0x1C13, 0, coe.EntryDescription{Index: 0x1C13, SubIndex: 0, DataType: 0x0005, BitLength: 8,
			Access: coe.AccessRead | coe.AccessWritePreOp, Name: "SubIndex 000"}},
		{0xF008, 0, coe.EntryDescription{Index: 0xF008, DataType: 0x0007, BitLength: 32, Access: coe.AccessRead | coe.AccessWrite, Name: "Code word"}},
	}
	for _, c := range entries {
		if got, err := m.SDOInfoEntry(ctx, el3004, c.index, c.sub); err != nil || got != c.want {
			t.Errorf("SDOInfoEntry(%#04x:%d) = %+v, %v; want %+v", c.index, c.sub, got, err, c.want)
		}
	}
	// Process data: inputs map into TxPDOs, the EL4132's outputs into
	// RxPDOs.
	for _, c := range []struct {
		slave *master.Slave
		index uint16
		sub   uint8
		want  coe.Access
	}{
		{el3004, 0x6000, 0x11, coe.AccessRead | coe.AccessTxPDO},
		{el4132, 0x7000, 0x01, coe.AccessRead | coe.AccessRxPDO},
	} {
		if e, err := m.SDOInfoEntry(ctx, c.slave, c.index, c.sub); err != nil || e.Access != c.want {
			t.Errorf("%v %#04x:%02x: access %v, %v; want %v", c.slave, c.index, c.sub, e.Access, err, c.want)
		}
	}
	if s := (coe.AccessRead | coe.AccessWritePreOp).String(); s != "rwr-r-" {
		t.Errorf("access string %q, want rwr-r-", s)
	}

	// The whole dictionary: descriptions agree with the values. Sub-index
	// ranges may have gaps (the inputs' 0x6000:11 follows 0x6000:07); a
	// gap is one for uploads too.
	var ae *coe.AbortError
	for _, index := range list {
		o, err := m.SDOInfoObject(ctx, el3004, index)
		if err != nil || o.Index != index || o.Name == "" {
			t.Errorf("SDOInfoObject(%#04x) = %+v, %v", index, o, err)
			continue
		}
		for sub := range int(o.MaxSubIndex) + 1 {
			e, err := m.SDOInfoEntry(ctx, el3004, index, uint8(sub))
			if errors.As(err, &ae) && ae.Code == coe.AbortNoSubIndex && sub != 0 && sub != int(o.MaxSubIndex) {
				if _, err := m.SDOUpload(ctx, el3004, index, uint8(sub)); !errors.As(err, &ae) || ae.Code != coe.AbortNoSubIndex {
					t.Errorf("%#04x:%d has no description but uploads: %v", index, sub, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("SDOInfoEntry(%#04x:%d): %v", index, sub, err)
				continue
			}
			v, err := m.SDOUpload(ctx, el3004, index, uint8(sub))
			if err != nil {
				t.Errorf("SDOUpload(%#04x:%d): %v", index, sub, err)
				continue
			}
			if want := (int(e.BitLength) + 7) / 8; len(v) != want {
				t.Errorf("%#04x:%d %q: %d bits described, upload gives %d bytes", index, sub, e.Name, e.BitLength, len(v))
			}
		}
	}

	// SDO information errors carry abort codes.
	if _, err := m.SDOInfoObject(ctx, el3004, 0x5555); !errors.As(err, &ae) || ae.Code != coe.AbortNoObject {
		t.Errorf("description of a missing object: %v, want abort %v", err, coe.AbortNoObject)
	}
	if _, err := m.SDOInfoEntry(ctx, el3004, 0x1018, 9); !errors.As(err, &ae) || ae.Code != coe.AbortNoSubIndex {
		t.Errorf("description of a missing entry: %v, want abort %v", err, coe.AbortNoSubIndex)
	}

	// Through a 24-byte mailbox the list comes in 6-index fragments and
	// the device name's description in several more; both join up.
	full, err := m.SDOInfoList(ctx, el4132)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.SDOInfoList(ctx, small); err != nil || !slices.Equal(got, full) {
		t.Errorf("fragmented OD list = %04x, %v; want %04x", got, err, full)
	}
	name, err := m.SDOUpload(ctx, small, 0x1008, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := m.SDOInfoEntry(ctx, small, 0x1008, 0); err != nil || e.Name != "Device name" || int(e.BitLength) != 8*len(name) {
		t.Errorf("fragmented entry description = %+v, %v", e, err)
	}
	// The mailbox works normally afterwards.
	if got, err := m.SDOUpload(ctx, small, 0x1018, 1); err != nil || !bytes.Equal(got, []byte{2, 0, 0, 0}) {
		t.Errorf("upload after SDO information = % x, %v", got, err)
	}
}
