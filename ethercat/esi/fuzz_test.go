package esi

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// fuzzSeeds are small files in every shape the reader takes, so that the
// fuzzer starts from each path and stays fast; the whole test files are
// seeds too, as the reader's reference.
func fuzzSeeds(tb testing.TB) [][]byte {
	seeds := [][]byte{
		[]byte(esiOf(2, 0x044C2C52, "EK1100", 0x00120000, 0x00110000)),
		[]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><EtherCATInfo><Vendor><Id>#x2</Id><Name>B` + "\xe4" + `</Name></Vendor>` +
			`<Descriptions><Groups><Group><Type>G</Type><Name LcId="1031">g</Name></Group></Groups><Devices>` +
			`<Device Physics="YY"><Type ProductCode="#x10" RevisionNo="1">A</Type><GroupType>G</GroupType>` +
			`<Fmmu Sm="2">Outputs</Fmmu><Sm StartAddress="#x1100" ControlByte="#x64" Enable="1" DefaultSize="2">Outputs</Sm>` +
			`<RxPdo Fixed="1" Sm="2"><Index>#x1600</Index><Name>C</Name><Exclude>#x1601</Exclude><Entry><Index>#x7000</Index><SubIndex>1</SubIndex><BitLen>16</BitLen><Name>O</Name><DataType>INT</DataType></Entry><Entry><Index>0</Index><BitLen>8</BitLen></Entry></RxPdo>` +
			`<Mailbox DataLinkLayer="true"><CoE SdoInfo="1" PdoAssign="0"><InitCmd><Transition>PS</Transition><Index>#x8000</Index><SubIndex>1</SubIndex><Data>01</Data></InitCmd></CoE><EoE IP="true"/><FoE/></Mailbox>` +
			`<Dc><OpMode><Name>DcSync</Name><AssignActivate>#x300</AssignActivate><CycleTimeSync0 Factor="1">0</CycleTimeSync0><ShiftTimeSync0 Input="1">-5</ShiftTimeSync0><Sm No="2"><Pdo>#x1600</Pdo></Sm></OpMode></Dc>` +
			`<Eeprom><ByteSize>2048</ByteSize><ConfigData>0A0B</ConfigData><Category><CatNo>30</CatNo><Data>00</Data></Category></Eeprom>` +
			`</Device></Devices></Descriptions></EtherCATInfo>`),
		[]byte(`<EtherCATInfo><Vendor><Id>2</Id></Vendor><Descriptions><Devices><Device><Type ProductCode="1" RevisionNo="1">D</Type>` +
			`<Profile><ProfileNo>5001</ProfileNo><Dictionary><DataTypes>` +
			`<DataType><Name>DTA</Name><BaseType>UINT</BaseType><BitSize>32</BitSize><ArrayInfo><LBound>1</LBound><Elements>2</Elements></ArrayInfo></DataType>` +
			`<DataType><Name>DTR</Name><BitSize>48</BitSize><SubItem><SubIdx>0</SubIdx><Name>SubIndex 000</Name><Type>USINT</Type><BitSize>8</BitSize><BitOffs>0</BitOffs><Flags><Access>ro</Access></Flags></SubItem>` +
			`<SubItem><Name>Elements</Name><Type>DTA</Type><BitSize>32</BitSize><BitOffs>16</BitOffs><Flags><Access>rw</Access><PdoMapping>T</PdoMapping></Flags></SubItem></DataType>` +
			`<DataType><Name>DTE</Name><BaseType>USINT</BaseType><BitSize>8</BitSize><EnumInfo><Text>a</Text><Enum>1</Enum></EnumInfo></DataType>` +
			`</DataTypes><Objects><Object><Index>#x1c12</Index><Name>A</Name><Type>DTR</Type><BitSize>48</BitSize><Info><SubItem><Name>SubIndex 000</Name><Info><DefaultData>01</DefaultData></Info></SubItem>` +
			`<SubItem><Name>SubIndex 001</Name><Info><DefaultValue>#x1600</DefaultValue></Info></SubItem></Info></Object>` +
			`<Object><Index>#x2000</Index><Name>E</Name><Type>DTE</Type><BitSize>8</BitSize><Info><DefaultValue>-1</DefaultValue></Info><Flags><Access>rw</Access></Flags></Object>` +
			`<Object><Index>#x2001</Index><Name>F</Name><Type>DTA</Type><BitSize>48</BitSize></Object>` +
			`<Object><Index>#x2002</Index><Name>R</Name><Type>REAL</Type><BitSize>32</BitSize><Info><DefaultValue>1.5</DefaultValue></Info></Object>` +
			`</Objects></Dictionary></Profile></Device></Devices></Descriptions></EtherCATInfo>`),
		[]byte(`<e:EtherCATInfo xmlns:e="urn:x"><e:Vendor><e:Id>2</e:Id></e:Vendor></e:EtherCATInfo>`),
		[]byte("\xEF\xBB\xBF<!DOCTYPE EtherCATInfo><EtherCATInfo Version=\"1.6\"><Vendor><Id>2</Id></Vendor><InfoReference>x.xml</InfoReference></EtherCATInfo>"),
	}
	for _, p := range testFiles[:3] {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// FuzzESI checks that Read never panics, that an error always comes with
// no File and says where it is (an *Error), that whatever Read takes a
// Catalog takes too and finds again by its keys, and that every device
// read again alone from where the scan located it is the device read
// with the whole file.
func FuzzESI(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	opt := Options{MaxFileBytes: 1 << 20, MaxElements: 1 << 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Read(bytes.NewReader(b), "fuzz.xml", opt)
		if err != nil {
			if file != nil {
				t.Fatalf("a File came with %v", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error without a place: %v", err)
			}
			return
		}
		if file == nil {
			t.Fatal("no File and no error")
		}
		_ = summary(file)
		c := NewCatalog(opt)
		if err := c.Add(bytes.NewReader(b), "fuzz.xml"); err != nil {
			t.Fatalf("Read took it, Catalog.Add says %v", err)
		}
		for _, d := range file.Devices {
			m, err := c.Lookup(file.Vendor.ID, d.ProductCode, d.RevisionNo)
			if err != nil || !m.Exact {
				t.Fatalf("device %s %#x/%#x not found again: %+v", d.Type, d.ProductCode, d.RevisionNo, m)
			}
		}
		checkReadAgain(t, b, opt)
	})
}

// checkReadAgain scans b and reads every device located again alone,
// which must give the device the scan gave.
func checkReadAgain(t *testing.T, b []byte, opt Options) {
	_, err := scanAt(bytes.NewReader(b), "fuzz.xml", opt, func(_ *File, d *Device, loc etgxml.Location, ok bool) error {
		if !ok {
			return nil
		}
		again, err := readDeviceAt(bytes.NewReader(b), "fuzz.xml", loc, opt)
		if err != nil {
			t.Fatalf("device %s at %+v: %v", d.Type, loc, err)
		}
		if got, want := deviceText(again), deviceText(d); got != want {
			t.Fatalf("device %s at %+v read again differs:\n%s", d.Type, loc, firstDiff(got, want))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Read took it, the scan says %v", err)
	}
}
