package sim

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esi"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/sim/esiimage"
)

// FuzzESIDevice feeds ESI files to the reader and every device read to
// the SII image generator and the device builder: nothing panics; an
// image either comes out and reads back with the master's SII parser to
// the description's identity and PDO count, or the error says the
// description cannot be written (esiimage.ErrDescription); a device built
// from it has the description's identity.
func FuzzESIDevice(f *testing.F) {
	for _, p := range []string{exampleESI, driveESI} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`<EtherCATInfo><Vendor><Id>2</Id></Vendor><Descriptions><Devices><Device Physics="KKQ">` +
		`<Type ProductCode="1" RevisionNo="1">D</Type><Fmmu>DynamicInputs</Fmmu><Sm StartAddress="#x1000" DefaultSize="0">MBoxOut</Sm>` +
		`<TxPdo Sm="9"><Index>#x1a00</Index><Entry><Index>#x6000</Index><SubIndex>1</SubIndex><BitLen>300</BitLen><DataType>DTX</DataType></Entry></TxPdo>` +
		`<Mailbox><CoE/></Mailbox><Dc><OpMode><Name>X</Name><AssignActivate>#x300</AssignActivate><CycleTimeSync0>-1</CycleTimeSync0></OpMode></Dc>` +
		`<Eeprom><ByteSize>64</ByteSize><Data>00</Data></Eeprom></Device></Devices></Descriptions></EtherCATInfo>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := esi.Read(bytes.NewReader(data), "fuzz.xml", esi.Options{MaxFileBytes: 1 << 20})
		if err != nil {
			return
		}
		for i := range file.Devices {
			dev := &file.Devices[i]
			img, err := esiimage.Build(file, dev)
			if err != nil {
				if !errors.Is(err, esiimage.ErrDescription) {
					t.Fatalf("device %d: an error that does not say the description cannot be written: %v", i, err)
				}
				continue
			}
			d, err := sii.Parse(img.Bytes)
			var crc *sii.ChecksumError
			if err != nil && !errors.As(err, &crc) {
				t.Fatalf("device %d: the generated image does not parse: %v", i, err)
			}
			id := d.Header.Identity
			if id.VendorID != file.Vendor.ID || id.ProductCode != dev.ProductCode || id.RevisionNumber != dev.RevisionNo {
				t.Fatalf("device %d: identity %+v, the description's %#x %#x %#x", i, id, file.Vendor.ID, dev.ProductCode, dev.RevisionNo)
			}
			if dev.EEPROM == nil || len(dev.EEPROM.Data) == 0 {
				if len(d.TxPDOs) != len(dev.TxPDOs) || len(d.RxPDOs) != len(dev.RxPDOs) {
					t.Fatalf("device %d: %d/%d PDOs, the description has %d/%d", i, len(d.TxPDOs), len(d.RxPDOs), len(dev.TxPDOs), len(dev.RxPDOs))
				}
			}
			sd, err := DeviceFromESI(file, dev)
			if err != nil {
				continue // e.g. an image the simulated ESC cannot load: said, not panicked
			}
			if sd.Identity() != id {
				t.Fatalf("device %d: simulated identity %+v, image %+v", i, sd.Identity(), id)
			}
		}
	})
}
