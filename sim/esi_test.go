package sim

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/coe"
)

const (
	exampleESI = "../testdata/esi/example-ea3102.xml"
	driveESI   = "../ethercat/esi/testdata/cia402-drive.xml"
)

// TestESISpec: a --devices entry picks a device of an ESI file by order
// code or product code and revision; without a revision the newest.
func TestESISpec(t *testing.T) {
	for _, c := range []struct {
		spec    string
		rev     uint32
		mailbox bool
	}{
		{exampleESI, 0x00110000, true},
		{exampleESI + ":ea3102", 0x00110000, true},
		{exampleESI + ":#x0C1E0EA1@#x00100000", 0x00100000, false},
		{exampleESI + ":0x0c1e0ea1@1048576", 0x00100000, false},
		{exampleESI + ":EA3102@#x00110000", 0x00110000, true},
		{exampleESI + "@0x00100000", 0x00100000, false},
	} {
		d, err := NewDevice(c.spec)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		id := d.Identity()
		if d.Name() != "EA3102" || id.VendorID != 0x00ECA901 || id.ProductCode != 0x0C1E0EA1 || id.RevisionNumber != c.rev ||
			(d.mbx != nil) != c.mailbox {
			t.Errorf("%s: %s %+v, mailbox %v", c.spec, d.Name(), id, d.mbx != nil)
		}
		if n := d.Notes(); len(n) != 0 && c.mailbox {
			t.Errorf("%s: notes %q", c.spec, n)
		}
	}
	for _, c := range []struct{ spec, want string }{
		{exampleESI + ":EL3102", "describes no EL3102; it describes EA3102 (product 0x0c1e0ea1 revision 0x00100000), EA3102 (product 0x0c1e0ea1 revision 0x00110000)"},
		{exampleESI + ":EA3102@#x00120000", "describes no EA3102 revision 0x00120000"},
		{exampleESI + ":EA3102@next", `revision "next": write it as #x hex`},
		{exampleESI + ":EA3102:#x00110000", `is not FILE.xml[:DEVICE][@REVISION]`},
		{exampleESI + "@", `is not FILE.xml[:DEVICE][@REVISION]`},
		{"missing.xml", "ESI file: open missing.xml: no such file"},
	} {
		_, err := NewDevice(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.spec) {
			t.Errorf("%s: error %v, want one naming the entry and %q", c.spec, err, c.want)
		}
	}
	if _, err := NewDevice(exampleESI + ":EL3102"); !errors.Is(err, ErrESIDevice) {
		t.Errorf("a device the file does not describe: %v, want ErrESIDevice", err)
	}
	// What the reader did not take is said, not dropped.
	drive, err := NewDevice(driveESI)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(drive.Notes(), "\n"); !strings.Contains(n, "Device/Slots: ignored: slots and modules") {
		t.Errorf("the drive's notes do not say its slots were left out:\n%s", n)
	}
	if IsESISpec("EL3004") || IsESISpec("el2004.bin") || IsESISpec("dir.xml.d/x.bin") || !IsESISpec("A.XML:EL1@2") || !IsESISpec("a.xml@2") {
		t.Error("IsESISpec tells ESI entries wrong")
	}
}

// TestESIBadFile: a broken ESI is refused with the file, line and element.
func TestESIBadFile(t *testing.T) {
	src, err := os.ReadFile(exampleESI)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "broken.xml")
	bad := strings.Replace(string(src), `<Type ProductCode="#x0C1E0EA1" RevisionNo="#x00110000"`, `<Type ProductCode="#x0C1G0EA1" RevisionNo="#x00110000"`, 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = NewDevice(path)
	if err == nil || !strings.Contains(err.Error(), "broken.xml:39:") || !strings.Contains(err.Error(), "ProductCode") {
		t.Errorf("error %v, want the file, line 39 and ProductCode", err)
	}
}

// TestESIDictionary: the device serves the ESI's object dictionary: its
// defaults, names and access rights per state, and its process data from
// the process image.
func TestESIDictionary(t *testing.T) {
	seg := newSeg(t, []string{exampleESI})
	address(t, seg)
	mailboxSMs(t, seg, 0x1001)
	if st, _ := request(t, seg, 0x1001, 0x02); st != 0x02 {
		t.Fatalf("PREOP: %#04x", st)
	}
	dev := seg.Devices()[0]
	upload := func(index uint16, sub uint8) []byte {
		t.Helper()
		r := sdo(t, seg, 0x1001, []byte{0x40, byte(index), byte(index >> 8), sub, 0, 0, 0, 0})
		if r[2]&0xE0 != 0x40 {
			t.Fatalf("upload %#04x:%d: % x", index, sub, r)
		}
		if r[2]&0x02 != 0 { // expedited
			return r[6 : 6+4-int(r[2]>>2&3)]
		}
		n := binary.LittleEndian.Uint32(r[6:])
		return r[10 : 10+n]
	}
	download := func(index uint16, sub uint8, v uint16) uint32 {
		t.Helper()
		r := sdo(t, seg, 0x1001, []byte{0x2B, byte(index), byte(index >> 8), sub, byte(v), byte(v >> 8), 0, 0})
		if r[2] == 0x80 {
			return binary.LittleEndian.Uint32(r[6:])
		}
		return 0
	}
	for _, c := range []struct {
		index uint16
		sub   uint8
		want  string
	}{
		{0x1000, 0, "\x89\x13\x00\x00"}, // MDP 5001
		{0x1008, 0, "EA3102"},           // DefaultString
		{0x100A, 0, "07"},               // not the simulator's own
		{0x1018, 2, "\xa1\x0e\x1e\x0c"}, // product code
		{0x8000, 0x15, "\x02\x00"},      // DefaultValue #x0002
		{0x8000, 0x06, "\x01"},          // DefaultData 01
		{0x1C13, 0, "\x02"},             // two PDOs assigned
		{0x1A01, 9, "\x10\x11\x10\x60"}, // mapping entry 0x6010:11, 16 bits
		{0x6010, 0, "\x11"},             // subindex 0 of the ESI's record
	} {
		if got := upload(c.index, c.sub); string(got) != c.want {
			t.Errorf("%#04x:%#x = % x, want % x", c.index, c.sub, got, c.want)
		}
	}
	// The inputs read through their objects: channel 2's value is the
	// last 16 of 64 input bits.
	dev.SetInputs([]byte{0, 0, 0x34, 0x12, 0, 0, 0x78, 0x56})
	if got := upload(0x6010, 0x11); string(got) != "\x78\x56" {
		t.Errorf("0x6010:11 = % x, want the input 78 56", got)
	}
	if got := upload(0x6000, 0x11); string(got) != "\x34\x12" {
		t.Errorf("0x6000:11 = % x, want the input 34 12", got)
	}
	// Access rights: filter settings writable in PREOP only, the filter
	// switch always, the identity never.
	if code := download(0x8000, 0x15, 5); code != 0 {
		t.Errorf("0x8000:15 in PREOP: abort %#08x", code)
	}
	if code := download(0x1018, 1, 5); code != abortReadOnly {
		t.Errorf("0x1018:01: abort %#08x, want read only %#08x", code, abortReadOnly)
	}
	// SDO information: the ESI's names, types and access words.
	info := func(index uint16, sub uint8) coe.EntryDescription {
		t.Helper()
		mbxWrite(t, seg, 0x1001, coeSDOInfo, []byte{0x05, 0, 0, 0, byte(index), byte(index >> 8), sub, 0})
		r := mbxRead(t, seg, 0x1001)
		d, err := coe.DecodeEntryDescription(r[6:])
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct {
		index  uint16
		sub    uint8
		name   string
		typ    coe.DataType
		bits   uint16
		access coe.Access
	}{
		{0x8000, 0x15, "Filter settings", 0x0006, 16, coe.AccessRead | coe.AccessWritePreOp | coe.AccessBackup | coe.AccessSettings},
		{0x8000, 0x06, "Enable filter", 0x0001, 1, coe.AccessRead | coe.AccessWrite | coe.AccessBackup | coe.AccessSettings},
		{0x6000, 0x11, "Value", 0x0003, 16, coe.AccessRead | coe.AccessTxPDO},
		{0x6000, 0x03, "Limit 1", 0x0031, 2, coe.AccessRead | coe.AccessTxPDO},
		{0x1C13, 1, "SubIndex 001", 0x0006, 16, coe.AccessRead | coe.AccessWritePreOp},
	} {
		d := info(c.index, c.sub)
		if d.Name != c.name || d.DataType != c.typ || d.BitLength != c.bits || d.Access != c.access {
			t.Errorf("%#04x:%#x: %q %v %d bits %v, want %q %v %d bits %v", c.index, c.sub, d.Name, d.DataType, d.BitLength, d.Access,
				c.name, c.typ, c.bits, c.access)
		}
	}
	// In SAFEOP the PREOP-only setting refuses a write, the other takes it.
	configSM(t, seg, 0x1001, 3, 0x1180, 8, 0x20) // 64 input bits, the two TxPDOs
	if st, code := request(t, seg, 0x1001, 0x04); st != 0x04 {
		t.Fatalf("SAFEOP: %#04x, %v", st, code)
	}
	if code := download(0x8000, 0x15, 6); code != abortDeviceState {
		t.Errorf("0x8000:15 in SAFEOP: abort %#08x, want %#08x", code, abortDeviceState)
	}
	r := sdo(t, seg, 0x1001, []byte{0x2F, 0x00, 0x80, 0x06, 0, 0, 0, 0}) // one byte: the BOOL
	if r[2] != 0x60 {
		t.Errorf("0x8000:06 in SAFEOP: % x, want it written", r)
	}
}
