package sim

import (
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/sii"
)

var updateProfileESI = flag.Bool("update-esi", false, "rewrite testdata/esi/profiles from the built-in profiles")

// profileESIDir holds the ESI files written from the built-in profiles.
const profileESIDir = "../testdata/esi/profiles"

// profileESIFiles lists, per file, the built-in profiles it describes:
// the devices the shipped captures were made with.
var profileESIFiles = []struct {
	file    string
	product uint32
}{
	{"ek1100.xml", 0x044C2C52},
	{"el1004.xml", 0x03EC3052},
	{"ek1914.xml", 0x077A2C52},
	{"el3004.xml", 0x0BBC3052},
}

// TestProfilesAsESI: the ESI files of testdata/esi/profiles state what
// the built-in profiles hold that ESI can carry (identity per revision,
// sync managers, FMMUs, PDOs, the dictionary the profile adds, the
// EEPROM's configuration words); -update-esi writes them again after a
// profile changes.
func TestProfilesAsESI(t *testing.T) {
	for _, f := range profileESIFiles {
		var devs []profile
		for _, p := range builtinProfiles() {
			if p.key.product == f.product && p.image != nil {
				devs = append(devs, p)
			}
		}
		if len(devs) == 0 {
			t.Fatalf("%s: no built-in profile of product %#08x", f.file, f.product)
		}
		got := renderESI(devs)
		path := filepath.Join(profileESIDir, f.file)
		if *updateProfileESI {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update-esi to write it)", err)
		}
		if string(want) != got {
			t.Errorf("%s no longer states the built-in profiles (run go test ./sim -run TestProfilesAsESI -update-esi and check the diff)", path)
		}
	}
}

// renderESI writes the profiles, revisions of one product, as an
// ETG.2000 EtherCATInfo document.
func renderESI(ps []profile) string {
	var b strings.Builder
	first := ps[0].image()
	w := func(depth int, format string, args ...any) {
		b.WriteString(strings.Repeat("\t", depth))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	w(0, `<?xml version="1.0" encoding="ISO-8859-1"?>`)
	w(0, `<!-- %s as ecagent's simulator knows it: written from its built-in profiles`, ps[0].spec.name)
	w(0, `     (sim/profile.go, sim/images.go) in the shape of ETG.2000, not from the`)
	w(0, `     vendor's ESI file (see README.md). -->`)
	w(0, `<EtherCATInfo xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="EtherCATInfo.xsd" Version="1.6">`)
	w(1, `<Vendor>`)
	w(2, `<Id>#x%08X</Id>`, first.Header.Identity.VendorID)
	w(2, `<Name>Beckhoff Automation GmbH &amp; Co. KG</Name>`)
	w(1, `</Vendor>`)
	w(1, `<Descriptions>`)
	group := str(first, first.General.GroupIndex)
	w(2, `<Groups>`)
	w(3, `<Group>`)
	w(4, `<Type>%s</Type>`, xmlText(group))
	w(4, `<Name LcId="1031">%s</Name>`, xmlText(strings.TrimRight(str(first, 3), " ")))
	w(3, `</Group>`)
	w(2, `</Groups>`)
	w(2, `<Devices>`)
	for _, p := range ps {
		renderDevice(w, p)
	}
	w(2, `</Devices>`)
	w(1, `</Descriptions>`)
	w(0, `</EtherCATInfo>`)
	return b.String()
}

// renderDevice writes one revision's Device element.
func renderDevice(w func(int, string, ...any), p profile) {
	d := p.image()
	g := d.General
	w(3, `<Device Physics="%s">`, physics(g.PhysicalPorts))
	w(4, `<Type ProductCode="#x%08X" RevisionNo="#x%08X">%s</Type>`, d.Header.Identity.ProductCode, d.Header.Identity.RevisionNumber, xmlText(d.OrderCode()))
	w(4, `<Name LcId="1031"><![CDATA[%s]]></Name>`, d.Name())
	w(4, `<Info>`)
	w(5, `<Electrical>`)
	w(6, `<EBusCurrent>%d</EBusCurrent>`, g.EBusCurrent)
	w(5, `</Electrical>`)
	w(4, `</Info>`)
	w(4, `<GroupType>%s</GroupType>`, xmlText(str(d, g.GroupIndex)))
	if od := profileDictionary(p); len(od.objects) > 0 {
		renderDictionary(w, od)
	}
	for _, f := range d.FMMUs {
		switch f {
		case sii.FMMUOutputs:
			w(4, `<Fmmu>Outputs</Fmmu>`)
		case sii.FMMUInputs:
			w(4, `<Fmmu>Inputs</Fmmu>`)
		case sii.FMMUSyncManagerStatus:
			w(4, `<Fmmu>MBoxState</Fmmu>`)
		}
	}
	for _, s := range d.SyncManagers {
		size := ""
		if s.Length > 0 {
			size = fmt.Sprintf(` DefaultSize="%d"`, s.Length)
		}
		w(4, `<Sm StartAddress="#x%04X" ControlByte="#x%02X"%s Enable="%d">%s</Sm>`, s.StartAddress, s.Control, size, s.Enable&1, smType(s.Type))
	}
	renderPDOs(w, d, "RxPdo", d.RxPDOs)
	renderPDOs(w, d, "TxPdo", d.TxPDOs)
	if d.Header.HasMailbox() {
		w(4, `<Mailbox DataLinkLayer="%t">`, g.Flags&sii.GeneralMailboxDataLinkLayer != 0)
		if d.Header.MailboxProtocols&sii.ProtocolCoE != 0 {
			w(5, `<CoE SdoInfo="%t" PdoAssign="%t" PdoConfig="%t"/>`, g.CoEDetails&sii.CoESDOInfo != 0,
				g.CoEDetails&sii.CoEPDOAssign != 0, g.CoEDetails&sii.CoEPDOConfig != 0)
		}
		if d.Header.MailboxProtocols&sii.ProtocolFoE != 0 {
			w(5, `<FoE/>`)
		}
		w(4, `</Mailbox>`)
	}
	img, err := sii.Encode(d)
	if err != nil {
		panic(err)
	}
	w(4, `<Eeprom>`)
	w(5, `<ByteSize>%d</ByteSize>`, (int(d.Header.EEPROMSize)+1)*1024/8)
	w(5, `<ConfigData>%s</ConfigData>`, strings.ToUpper(hex.EncodeToString(img[:14])))
	w(4, `</Eeprom>`)
	w(3, `</Device>`)
}

// physics renders the SII's port types as ESI's Physics attribute.
func physics(pp sii.PhysicalPorts) string {
	var s []byte
	for i := range 4 {
		switch pp.Port(i) {
		case sii.PortMII:
			s = append(s, 'K')
		case sii.PortEBus:
			s = append(s, 'Y')
		default:
			s = append(s, ' ')
		}
	}
	return strings.TrimRight(string(s), " ")
}

func smType(t sii.SyncManagerType) string {
	switch t {
	case sii.SMMailboxOut:
		return "MBoxOut"
	case sii.SMMailboxIn:
		return "MBoxIn"
	case sii.SMProcessDataOut:
		return "Outputs"
	case sii.SMProcessDataIn:
		return "Inputs"
	}
	return ""
}

// esiTypeNames are the ETG.2000 names of the CoE base types the profiles use.
var esiTypeNames = map[uint16]string{typeBool: "BOOL", typeInt16: "INT", typeUint8: "USINT", typeUint16: "UINT",
	typeUint32: "UDINT", 0x31: "BIT2"}

func renderPDOs(w func(int, string, ...any), d *sii.Device, kind string, pdos []sii.PDO) {
	for _, p := range pdos {
		attrs := ""
		if p.Flags&sii.PDOFixedContent != 0 {
			attrs += ` Fixed="1"`
		}
		if p.Flags&sii.PDOMandatory != 0 {
			attrs += ` Mandatory="1"`
		}
		if p.SyncManager != sii.NoSyncManager {
			attrs += fmt.Sprintf(` Sm="%d"`, p.SyncManager)
		}
		w(4, `<%s%s>`, kind, attrs)
		w(5, `<Index>#x%04x</Index>`, p.Index)
		w(5, `<Name>%s</Name>`, xmlText(str(d, p.NameIndex)))
		for _, e := range p.Entries {
			w(5, `<Entry>`)
			w(6, `<Index>#x%x</Index>`, e.Index)
			if e.Index != 0 {
				w(6, `<SubIndex>%d</SubIndex>`, e.SubIndex)
			}
			w(6, `<BitLen>%d</BitLen>`, e.BitLength)
			if e.Index != 0 {
				w(6, `<Name>%s</Name>`, xmlText(str(d, e.NameIndex)))
				w(6, `<DataType>%s</DataType>`, esiTypeNames[uint16(e.DataType)])
			}
			w(5, `</Entry>`)
		}
		w(4, `</%s>`, kind)
	}
}

// profileDictionary returns the objects the profile adds to those the
// SII gives (a device's own, such as the EL3004's code word).
func profileDictionary(p profile) *objectDictionary {
	od := &objectDictionary{}
	if p.spec.objects != nil {
		p.spec.objects(od)
	}
	return od
}

// renderDictionary writes the profile's VAR objects with their data types.
func renderDictionary(w func(int, string, ...any), od *objectDictionary) {
	types := map[string]int{}
	var order []string
	name := func(e entry) string {
		if e.dataType == typeVisibleString {
			return fmt.Sprintf("STRING(%d)", len(e.value))
		}
		n, ok := esiTypeNames[e.dataType]
		if !ok {
			panic(fmt.Sprintf("no ESI name for data type %#04x", e.dataType))
		}
		return n
	}
	for _, o := range od.objects {
		if o.code != codeVar || len(o.entries) != 1 {
			panic(fmt.Sprintf("object %#04x: only VAR objects are rendered", o.index))
		}
		n := name(o.entries[0])
		if _, ok := types[n]; !ok {
			types[n] = o.entries[0].bits
			if o.entries[0].dataType == typeVisibleString {
				types[n] = 8 * len(o.entries[0].value)
			}
			order = append(order, n)
		}
	}
	w(4, `<Profile>`)
	w(5, `<ProfileNo>5001</ProfileNo>`)
	w(5, `<Dictionary>`)
	w(6, `<DataTypes>`)
	for _, n := range order {
		w(7, `<DataType>`)
		w(8, `<Name>%s</Name>`, n)
		w(8, `<BitSize>%d</BitSize>`, types[n])
		w(7, `</DataType>`)
	}
	w(6, `</DataTypes>`)
	w(6, `<Objects>`)
	for _, o := range od.objects {
		e := o.entries[0]
		w(7, `<Object>`)
		w(8, `<Index>#x%04x</Index>`, o.index)
		w(8, `<Name>%s</Name>`, xmlText(o.name))
		w(8, `<Type>%s</Type>`, name(e))
		w(8, `<BitSize>%d</BitSize>`, types[name(e)])
		w(8, `<Info>`)
		if e.dataType == typeVisibleString {
			w(9, `<DefaultString>%s</DefaultString>`, xmlText(string(e.value)))
		} else {
			var v uint64
			buf := make([]byte, 8)
			copy(buf, e.value)
			v = binary.LittleEndian.Uint64(buf)
			w(9, `<DefaultValue>#x%0*X</DefaultValue>`, 2*len(e.value), v)
		}
		w(8, `</Info>`)
		access := "ro"
		if e.access != readOnly {
			access = "rw"
		}
		w(8, `<Flags>`)
		w(9, `<Access>%s</Access>`, access)
		w(8, `</Flags>`)
		w(7, `</Object>`)
	}
	w(6, `</Objects>`)
	w(5, `</Dictionary>`)
	w(4, `</Profile>`)
}

// xmlText escapes s for XML character data.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// str returns string i of d's Strings category, "" for none.
func str(d *sii.Device, i uint8) string {
	s, _ := d.StringAt(i)
	return s
}

// TestESIDeviceTakesTheRealLayoutOnlyWhenAlike: a device from an ESI that
// describes a profile's device as the profile does has the real unit's
// EEPROM bytes (which no ESI carries); one whose ESI says otherwise (here
// a PDO entry's name) keeps the image generated from its ESI and says why.
func TestESIDeviceTakesTheRealLayoutOnlyWhenAlike(t *testing.T) {
	path := filepath.Join(profileESIDir, "el1004.xml")
	p, ok := profileByName("EL1004")
	if !ok {
		t.Fatal("no EL1004 profile")
	}
	want, err := sii.Encode(p.image())
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewESIDevice(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.SII(); string(got) != string(want) {
		t.Errorf("EL1004 from its ESI: the EEPROM is not the real unit's layout of the profile")
	}
	if !slices.Contains(d.Notes(), esiLayoutNote) {
		t.Errorf("notes %q do not say where the layout came from", d.Notes())
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "el1004.xml")
	changed := strings.Replace(string(b), "<Name>Input</Name>", "<Name>Eingang</Name>", 1)
	if changed == string(b) {
		t.Fatal("no entry named Input in the EL1004's ESI")
	}
	if err := os.WriteFile(other, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = NewESIDevice(other)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := sii.Parse(d.SII())
	if err != nil {
		t.Fatal(err)
	}
	if name, _ := desc.StringAt(desc.TxPDOs[0].Entries[0].NameIndex); name != "Eingang" {
		t.Errorf("an ESI unlike the profile: the first entry is named %q, want the ESI's \"Eingang\"", name)
	}
	if notes := strings.Join(d.Notes(), "\n"); !strings.Contains(notes, `"Eingang"`) || !strings.Contains(notes, "not the real unit's layout") {
		t.Errorf("notes do not say why the image is the ESI's:\n%s", notes)
	}
}
