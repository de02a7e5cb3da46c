package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
)

func TestModelsReadThroughTheEEPROMInterface(t *testing.T) {
	for _, name := range Models() {
		t.Run(name, func(t *testing.T) {
			seg := newSeg(t, []string{name}, WithSIIBusyFrames(1))
			address(t, seg)
			d := seg.Devices()[0]
			img := readSII(t, seg, 0x1001, 512)
			if !bytes.Equal(img, d.SII()[:512]) {
				t.Fatal("EEPROM read through the registers differs from the image")
			}
			full, err := sii.Read(t.Context(), sii.Image(d.SII()), len(d.SII()))
			if err != nil {
				t.Fatal(err)
			}
			desc, err := sii.Parse(full)
			if err != nil {
				t.Fatalf("Parse: %v (a checksum error means a wrong CRC-8)", err)
			}
			if err := desc.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			id := desc.Header.Identity
			wantVendor := uint32(beckhoff)
			switch name {
			case "AKD":
				wantVendor = kollmorgen
			case "LAN9252":
				wantVendor = microchip
			}
			if id.VendorID != wantVendor || desc.OrderCode() != name || desc.Name() == "" {
				t.Errorf("identity %+v order %q name %q", id, desc.OrderCode(), desc.Name())
			}
			if d.Name() != name {
				t.Errorf("Name() = %q", d.Name())
			}
		})
	}
}

func TestModelsEqualRealImages(t *testing.T) {
	for _, name := range []string{"EK1100", "EL2004"} {
		real, err := os.ReadFile(filepath.Join(realHW, "sii", stringsToLower(name)+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewDevice(name)
		if err != nil {
			t.Fatal(err)
		}
		model := d.SII()
		end, err := sii.Read(t.Context(), sii.Image(real), len(real))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(model[:len(end)], end) {
			for i := range end {
				if model[i] != end[i] {
					t.Errorf("%s: model image differs from the real one first at byte %#x: %#02x, real %#02x", name, i, model[i], end[i])
					break
				}
			}
		}
	}
}

func stringsToLower(s string) string { return string(bytes.ToLower([]byte(s))) }

// siiReadsInCapture reconstructs, per station address, the EEPROM bytes a
// real master read in a capture: the word address of each read command
// (0x0502 with the address in 0x0504) and the data it then read at 0x0508.
func siiReadsInCapture(tb testing.TB, capture string) map[uint16]map[int]byte {
	tb.Helper()
	addr := map[uint16]int{}
	out := map[uint16]map[int]byte{}
	for _, p := range capturePairs(tb, capture) {
		req, resp := datagrams(p.req), datagrams(p.resp)
		for k := range min(len(req), len(resp)) {
			q, r := &req[k], &resp[k]
			if r.WKC == 0 || q.Command != r.Command || q.ADO() != r.ADO() {
				continue
			}
			adp := q.ADP()
			switch {
			case q.Command == wire.FPWR && q.ADO() == 0x0502 && len(q.Data) >= 6 && q.Data[1]&0x01 != 0:
				addr[adp] = int(binary.LittleEndian.Uint16(q.Data[2:]))
			case q.Command == wire.FPRD && q.ADO() == 0x0508:
				w, ok := addr[adp]
				if !ok {
					continue
				}
				if out[adp] == nil {
					out[adp] = map[int]byte{}
				}
				for i, b := range r.Data {
					out[adp][2*w+i] = b
				}
			}
		}
	}
	return out
}

func TestModelsMatchWhatMastersReadFromRealDevices(t *testing.T) {
	cases := []struct {
		capture string
		adp     uint16
		model   string
	}{
		{"soem-sdinfo-ek1100-el1004", 0x1001, "EK1100"},
		{"soem-sdinfo-ek1100-el1004", 0x1002, "EL1004"},
		{"ethercrab-ek1914-el3004-mailbox", 0x1000, "EK1914"},
		{"ethercrab-ek1914-el3004-mailbox", 0x1001, "EL3004"},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			read := siiReadsInCapture(t, c.capture)[c.adp]
			if len(read) < 64 {
				t.Fatalf("only %d bytes read in the capture", len(read))
			}
			d, err := NewDevice(c.model)
			if err != nil {
				t.Fatal(err)
			}
			img := d.SII()
			bad := 0
			for a, want := range read {
				got := byte(0xFF)
				if a < len(img) {
					got = img[a]
				}
				if got != want {
					bad++
					if bad <= 5 {
						t.Errorf("byte %#04x: model %#02x, real %#02x", a, got, want)
					}
				}
			}
			t.Logf("%d EEPROM bytes read by the real master, %d differ", len(read), bad)
		})
	}
}

func TestNewDevice(t *testing.T) {
	if _, err := NewDevice("EL9999"); !errors.Is(err, ErrUnknownDevice) {
		t.Errorf("unknown model: %v", err)
	}
	d, err := NewDevice("el2004")
	if err != nil || d.Name() != "EL2004" {
		t.Fatalf("lower case model: %v %v", d, err)
	}
	f, err := NewDevice(filepath.Join(realHW, "sii", "el2828.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name() != "EL2828" || f.Identity().ProductCode != 0x0B0C3052 || f.hasDC || f.chip.info.Type != 0x12 {
		t.Errorf("EL2828 from file: %q %+v DC %v type %#x", f.Name(), f.Identity(), f.hasDC, f.chip.info.Type)
	}
	if _, err := ParseDevices([]string{"EK1100", "nope.bin"}); !errors.Is(err, ErrUnknownDevice) {
		t.Errorf("ParseDevices with a bad spec: %v", err)
	}
	if _, err := DeviceFromSII(make([]byte, 10), "x"); err == nil {
		t.Error("a 10-byte image was accepted")
	}
}

func TestEEPROMInterface(t *testing.T) {
	seg := newSeg(t, []string{"EL1004"}, WithSIIBusyFrames(2))
	address(t, seg)
	ctl := func() uint16 {
		return binary.LittleEndian.Uint16(one(t, seg, phys(wire.FPRD, 0x1001, 0x0502, make([]byte, 2))).Data)
	}
	if c := ctl(); c != 0x0050 {
		t.Errorf("idle control %#04x, want 0x0050", c)
	}
	// A read stays busy for the frames configured, then delivers 8 bytes.
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0502, []byte{0x00, 0x01, 0x08, 0x00, 0x00, 0x00}))
	for i, want := range []uint16{0x8150, 0x8150, 0x0050} {
		if c := ctl(); c != want {
			t.Errorf("poll %d: %#04x, want %#04x", i, c, want)
		}
	}
	d := one(t, seg, phys(wire.FPRD, 0x1001, 0x0508, make([]byte, 8)))
	if want := []byte{0x02, 0, 0, 0, 0x52, 0x30, 0xEC, 0x03}; !bytes.Equal(d.Data, want) {
		t.Errorf("data % x, want % x", d.Data, want)
	}
	// Beyond the EEPROM: no acknowledge, command error.
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0502, []byte{0x00, 0x01, 0x00, 0x40, 0x00, 0x00}))
	if c := ctl(); c&0x2000 == 0 {
		t.Errorf("read beyond the EEPROM: %#04x without command error", c)
	}
	// A write without the write enable bit is refused; with it, it lands.
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0502, []byte{0x00, 0x02, 0x70, 0x00, 0x00, 0x00, 0xAA, 0x55}))
	if c := ctl(); c&0x2000 == 0 {
		t.Errorf("write without enable: %#04x", c)
	}
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0502, []byte{0x01, 0x02, 0x70, 0x00, 0x00, 0x00, 0xAA, 0x55}))
	for range 3 {
		ctl()
	}
	if img := seg.Devices()[0].SII(); img[0xE0] != 0xAA || img[0xE1] != 0x55 {
		t.Errorf("EEPROM write did not land: % x", img[0xE0:0xE2])
	}
	// While the PDI owns the EEPROM (0x0500 bit 0), commands are ignored.
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0500, []byte{0x01}))
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0502, []byte{0x00, 0x01, 0x00, 0x00, 0x00, 0x00}))
	if c := ctl(); c&0x8000 != 0 {
		t.Errorf("command ran while the PDI owns the EEPROM: %#04x", c)
	}
}
