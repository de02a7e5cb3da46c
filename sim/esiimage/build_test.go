package esiimage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esi"
	"github.com/ecagent/ecagent/ethercat/sii"
)

const (
	exampleESI  = "../../testdata/esi/example-ea3102.xml"
	beckhoffEL2 = "../../ethercat/esi/testdata/beckhoff/Beckhoff EL2xxx.xml"
	driveESI    = "../../ethercat/esi/testdata/cia402-drive.xml"
	realSII     = "../../testdata/real-hw/sii"
)

// device reads the file and returns it with its device of revision rev.
func device(t *testing.T, path string, rev uint32) (*esi.File, *esi.Device) {
	t.Helper()
	f, err := esi.ReadFile(path, esi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Devices {
		if f.Devices[i].RevisionNo == rev {
			return f, &f.Devices[i]
		}
	}
	t.Fatalf("%s: no device of revision %#x", path, rev)
	return nil, nil
}

// TestRoundTrip generates the image of the hand-written analog input
// terminal and reads it back with the master's SII parser: the ESI's
// identity, mailbox, sync managers, FMMUs, PDOs with their entries and
// names, and DC modes.
func TestRoundTrip(t *testing.T) {
	f, dev := device(t, exampleESI, 0x00110000)
	if len(f.Warnings) != 0 {
		t.Errorf("the hand-written ESI has what the reader does not take: %v", f.Warnings)
	}
	img, err := Build(f, dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Notes) != 0 {
		t.Errorf("notes: %q", img.Notes)
	}
	d, err := sii.Parse(img.Bytes)
	if err != nil {
		t.Fatalf("the master's parser: %v", err)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
	if want := (sii.Identity{VendorID: 0x00ECA901, ProductCode: 0x0C1E0EA1, RevisionNumber: 0x00110000}); d.Header.Identity != want {
		t.Errorf("identity %+v, want %+v", d.Header.Identity, want)
	}
	if len(img.Bytes) != 2048 || d.Header.EEPROMSize != 15 {
		t.Errorf("image %d bytes, EEPROM size word %d; Eeprom/ByteSize says 2048 (15)", len(img.Bytes), d.Header.EEPROMSize)
	}
	if d.Header.PDIControl != 0x0E08 || d.Header.SyncImpulseLength != 0x1388 {
		t.Errorf("ConfigData: PDI control %#04x, sync impulse %#04x", d.Header.PDIControl, d.Header.SyncImpulseLength)
	}
	if mb := d.Header.StandardMailbox; mb != (sii.Mailbox{ReceiveOffset: 0x1000, ReceiveSize: 128, SendOffset: 0x1080, SendSize: 128}) {
		t.Errorf("standard mailbox %+v", mb)
	}
	if p := d.Header.MailboxProtocols; p != sii.ProtocolCoE {
		t.Errorf("protocols %v, want CoE", p)
	}
	if d.OrderCode() != "EA3102" || d.Name() != "EA3102 2Ch. Ana. Input +/-10V" {
		t.Errorf("order code %q, name %q", d.OrderCode(), d.Name())
	}
	g := d.General
	if g.CoEDetails != sii.CoESDO|sii.CoESDOInfo|sii.CoECompleteAccess || g.EBusCurrent != 130 ||
		g.PhysicalPorts != 0x33 || g.Flags != sii.GeneralMailboxDataLinkLayer {
		t.Errorf("general %+v", *g)
	}
	if s, _ := d.StringAt(g.GroupIndex); s != "AnaIn" {
		t.Errorf("group %q", s)
	}
	if s, _ := d.StringAt(g.Reserved0E[0]); s != "Analog Input Terminals" {
		t.Errorf("group name %q", s)
	}
	wantFMMU := []sii.FMMUUsage{sii.FMMUOutputs, sii.FMMUInputs, sii.FMMUSyncManagerStatus}
	if !equal(d.FMMUs, wantFMMU) {
		t.Errorf("FMMUs %v, want %v", d.FMMUs, wantFMMU)
	}
	wantSM := []sii.SyncManager{
		{StartAddress: 0x1000, Length: 128, Control: 0x26, Enable: 1, Type: sii.SMMailboxOut},
		{StartAddress: 0x1080, Length: 128, Control: 0x22, Enable: 1, Type: sii.SMMailboxIn},
		{StartAddress: 0x1100, Control: 0x24, Type: sii.SMProcessDataOut},
		{StartAddress: 0x1180, Control: 0x20, Enable: 1, Type: sii.SMProcessDataIn},
	}
	if !equal(d.SyncManagers, wantSM) {
		t.Errorf("sync managers %+v\nwant %+v", d.SyncManagers, wantSM)
	}
	if len(d.RxPDOs) != 0 || len(d.TxPDOs) != len(dev.TxPDOs) {
		t.Fatalf("%d RxPDOs, %d TxPDOs", len(d.RxPDOs), len(d.TxPDOs))
	}
	for i, p := range d.TxPDOs {
		e := dev.TxPDOs[i]
		name, _ := d.StringAt(p.NameIndex)
		if p.Index != e.Index || int(p.SyncManager) != e.SyncManager || name != e.Name.String() ||
			p.Flags != sii.PDOMandatory|sii.PDOFixedContent || len(p.Entries) != len(e.Entries) {
			t.Errorf("TxPDO %d: %+v, want from %+v", i, p, e)
			continue
		}
		for k, pe := range p.Entries {
			ee := e.Entries[k]
			name, _ := d.StringAt(pe.NameIndex)
			if pe.Index != ee.Index || pe.SubIndex != ee.SubIndex || int(pe.BitLength) != int(ee.BitLen) || name != ee.Name.String() {
				t.Errorf("TxPDO %#04x entry %d: %+v %q, want %+v", p.Index, k, pe, name, ee)
			}
		}
	}
	types := []uint8{1, 1, 0x31, 0x31, 1, 0, 1, 1, 3} // BOOL, BIT2, a gap, INT
	for k, pe := range d.TxPDOs[0].Entries {
		if pe.DataType != types[k] {
			t.Errorf("entry %d: data type %#02x, want %#02x", k, pe.DataType, types[k])
		}
	}
	if d.InputBits() != 64 || d.OutputBits() != 0 {
		t.Errorf("%d input bits, %d output bits; want 64, 0", d.InputBits(), d.OutputBits())
	}
	if len(d.DC) != 2 || d.DC[1].AssignActivate != 0x0300 || d.DC[1].Sync0CycleFactor != 1 || d.DC[0].AssignActivate != 0 {
		t.Errorf("DC %+v", d.DC)
	}
	if s, _ := d.StringAt(d.DC[1].NameIndex); s != "DcSync" {
		t.Errorf("DC mode 1 is %q", s)
	}
}

// TestLikeTheRealEL2004 generates the EL2004's image from the
// Beckhoff-shaped ESI and compares it with the EEPROM of a real EL2004:
// the same sync manager, FMMU, PDOs, strings where the ESI
// has them (the real image carries the German names; the generated one
// the English, see Build).
func TestLikeTheRealEL2004(t *testing.T) {
	f, dev := device(t, beckhoffEL2, 0x00100000)
	img, err := Build(f, dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Notes) != 0 {
		t.Errorf("notes: %q", img.Notes) // a 16-byte ConfigData is words 0-7, as the tools write it
	}
	raw, err := os.ReadFile(filepath.Join(realSII, "el2004.bin"))
	if err != nil {
		t.Fatal(err)
	}
	real, err := sii.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	got := img.Device
	// The header's configuration words come from Eeprom/ConfigData as
	// they are; the abridged ESI's are not the real terminal's, so they
	// are not compared.
	if got.Header.Identity.VendorID != real.Header.Identity.VendorID || got.Header.Identity.ProductCode != real.Header.Identity.ProductCode {
		t.Errorf("identity %+v, real %+v", got.Header.Identity, real.Header.Identity)
	}
	if len(img.Bytes) != len(raw) {
		t.Errorf("%d bytes, the real EEPROM %d", len(img.Bytes), len(raw))
	}
	if !equal(got.FMMUs, real.FMMUs) {
		t.Errorf("FMMUs %v, real %v", got.FMMUs, real.FMMUs)
	}
	// The real SM has enable 0x09 (enable in OP only too): the abridged
	// ESI does not say OpOnly, so only that bit may differ.
	if len(got.SyncManagers) != 1 || got.SyncManagers[0].StartAddress != 0x0F00 || got.SyncManagers[0].Control != real.SyncManagers[0].Control ||
		got.SyncManagers[0].Type != real.SyncManagers[0].Type || got.SyncManagers[0].Enable&^0x08 != real.SyncManagers[0].Enable&^0x08 {
		t.Errorf("sync managers %+v, real %+v", got.SyncManagers, real.SyncManagers)
	}
	if len(got.RxPDOs) != len(real.RxPDOs) {
		t.Fatalf("%d RxPDOs, real %d", len(got.RxPDOs), len(real.RxPDOs))
	}
	for i, p := range got.RxPDOs {
		r := real.RxPDOs[i]
		pn, _ := got.StringAt(p.NameIndex)
		rn, _ := real.StringAt(r.NameIndex)
		if p.Index != r.Index || p.SyncManager != r.SyncManager || p.Flags != r.Flags || pn != rn || len(p.Entries) != len(r.Entries) {
			t.Errorf("RxPDO %d: %+v %q, real %+v %q", i, p, pn, r, rn)
			continue
		}
		for k := range p.Entries {
			a, b := p.Entries[k], r.Entries[k]
			an, _ := got.StringAt(a.NameIndex)
			bn, _ := real.StringAt(b.NameIndex)
			a.NameIndex, b.NameIndex = 0, 0
			if a != b || an != bn {
				t.Errorf("RxPDO %#04x entry %d: %+v %q, real %+v %q", p.Index, k, a, an, b, bn)
			}
		}
	}
	g, r := got.General, real.General
	if g.EBusCurrent != r.EBusCurrent || g.PhysicalPorts != r.PhysicalPorts || g.CoEDetails != r.CoEDetails || g.Flags != r.Flags {
		t.Errorf("general %+v\nreal    %+v", *g, *r)
	}
	if got.OrderCode() != real.OrderCode() {
		t.Errorf("order code %q, real %q", got.OrderCode(), real.OrderCode())
	}
	for _, idx := range [][2]uint8{{g.GroupIndex, r.GroupIndex}, {g.OrderIndex, r.OrderIndex}, {1, 1}, {2, 2}} {
		a, _ := got.StringAt(idx[0])
		b, _ := real.StringAt(idx[1])
		if a != b {
			t.Errorf("string %d %q, real string %d %q", idx[0], a, idx[1], b)
		}
	}
}

// TestNegativeShift: a DC mode's negative SYNC0 shift (the EL3102's
// input-based mode) is written as its two's complement, not dropped.
func TestNegativeShift(t *testing.T) {
	f, dev := device(t, "../../ethercat/esi/testdata/beckhoff/Beckhoff EL3xxx.xml", 0x00140000)
	img, err := Build(f, dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Notes) != 0 {
		t.Errorf("notes: %q", img.Notes)
	}
	found := false
	for i, m := range dev.DC.OpModes {
		if m.ShiftTimeSync0.Value < 0 {
			found = true
			if got := int32(img.Device.DC[i].ShiftTime0); int64(got) != m.ShiftTimeSync0.Value {
				t.Errorf("mode %s: shift %d, want %d", m.Name, got, m.ShiftTimeSync0.Value)
			}
		}
	}
	if !found {
		t.Fatal("the EL3102 has no mode with a negative shift: the test tests nothing")
	}
}

// TestDrive generates the CiA 402 drive's image: bootstrap mailbox,
// protocols, the drive profile's channel, an unassigned PDO.
func TestDrive(t *testing.T) {
	f, dev := device(t, driveESI, 131072)
	img, err := Build(f, dev)
	if err != nil {
		t.Fatal(err)
	}
	d, err := sii.Parse(img.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	h := d.Header
	if h.BootstrapMailbox != (sii.Mailbox{ReceiveOffset: 0x1000, ReceiveSize: 0x400, SendOffset: 0x1400, SendSize: 0x400}) {
		t.Errorf("bootstrap mailbox %+v", h.BootstrapMailbox)
	}
	if h.StandardMailbox != (sii.Mailbox{ReceiveOffset: 4096, ReceiveSize: 1024, SendOffset: 5120, SendSize: 1024}) {
		t.Errorf("standard mailbox %+v", h.StandardMailbox)
	}
	if !h.MailboxProtocols.Has(sii.ProtocolCoE|sii.ProtocolEoE|sii.ProtocolFoE) || d.General.DS402Channels != 1 ||
		d.General.FoEDetails != 1 || d.General.EoEDetails != 1 {
		t.Errorf("protocols %v, general %+v", h.MailboxProtocols, *d.General)
	}
	if len(d.RxPDOs) != 2 || d.RxPDOs[0].SyncManager != 2 || d.RxPDOs[1].SyncManager != sii.NoSyncManager {
		t.Errorf("RxPDOs %+v", d.RxPDOs)
	}
	if d.OutputBits() != 8*14 || d.InputBits() != 8*16 {
		t.Errorf("%d output bits, %d input bits", d.OutputBits(), d.InputBits())
	}
	if len(h.Reserved05) == 0 || d.Header.EEPROMSize != 31 {
		t.Errorf("EEPROM size word %d, want 31 (4096 bytes)", d.Header.EEPROMSize)
	}
}

// TestRefused: descriptions no SII image holds are refused with the
// device, the element and the limit named.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		name, edit, want string
	}{
		{"entry past 255 bits", `<BitLen>16</BitLen>
						<Name>Value</Name>`, "TxPdo 0x1a01 entry 0x6010:17 is 300 bits, an SII PDO entry holds at most 255"},
		{"image of another device", `<ConfigData>080E00CC8813FF00</ConfigData>`, "Eeprom/Data holds vendor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := os.ReadFile(exampleESI)
			if err != nil {
				t.Fatal(err)
			}
			var repl string
			switch c.name {
			case "entry past 255 bits":
				repl = strings.Replace(c.edit, "16", "300", 1)
			default:
				raw, err := os.ReadFile(filepath.Join(realSII, "el2004.bin"))
				if err != nil {
					t.Fatal(err)
				}
				repl = "<Data>" + strings.ToUpper(hex(raw)) + "</Data>"
			}
			if !bytes.Contains(src, []byte(c.edit)) {
				t.Fatalf("the file has no %q", c.edit)
			}
			at := bytes.LastIndex(src, []byte(c.edit)) // in the second device
			src = append(src[:at:at], append([]byte(repl), src[at+len(c.edit):]...)...)
			f, err := esi.Read(bytes.NewReader(src), "edited.xml", esi.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Build(f, &f.Devices[1])
			if !errors.Is(err, ErrDescription) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "EA3102") {
				t.Errorf("error %v, want ErrDescription naming EA3102 and %q", err, c.want)
			}
		})
	}
}

func hex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
