// Package esiimage generates the SII EEPROM image of a device from its ESI
// description (ETG.2000 EtherCATInfo), the way the vendors' configuration
// tools write a device's EEPROM from it (ETG.2010): the header from the
// Eeprom element's ConfigData and BootStrap, the identity, the mailbox
// from the mailbox sync managers and the protocols from the Mailbox
// element, then the categories Strings, General, FMMU, SyncManager, TxPDO,
// RxPDO and DC, and the vendor categories the ESI gives (Eeprom/Category).
//
// The simulator builds a device from the image ([Build]) when a user names
// an ESI file instead of a built-in model; a master's SII parser reads the
// image back to the ESI's identity, sync managers and PDOs.
package esiimage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esi"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// Image is an SII image generated from an ESI device description.
type Image struct {
	Device *sii.Device // the image as package sii describes it
	Bytes  []byte      // the EEPROM content, sii.Encode of Device
	// Notes say what of the description the image does not hold or holds
	// otherwise than the file says (an EEPROM grown past Eeprom/ByteSize,
	// an FMMU usage the SII has no code for), once each.
	Notes []string
}

// ErrDescription is matched (errors.Is) by Build's errors for a
// description that no SII image can hold.
var ErrDescription = errors.New("the device description cannot be written to an SII image")

// Build generates the SII image of dev, a device of file (whose vendor and
// groups it takes; the file's Devices are not used). A description that gives the whole image (Eeprom/Data) gets
// that image, as the tools write it; its identity must be the
// description's.
func Build(file *esi.File, dev *esi.Device) (*Image, error) {
	vendor := file.Vendor.ID
	what := fmt.Sprintf("ESI device %s (product %#08x revision %#08x)", dev.Type, dev.ProductCode, dev.RevisionNo)
	if ee := dev.EEPROM; ee != nil && len(ee.Data) > 0 {
		return fromData(what, dev, vendor, ee.Data)
	}
	b := builder{dev: dev, what: what}
	for _, g := range file.Groups {
		if g.Type == dev.GroupType {
			b.group = g.Name.String()
		}
	}
	d, err := b.device(vendor)
	if err != nil {
		return nil, err
	}
	img, err := sii.Encode(d)
	if err != nil && d.Header.EEPROMSize != 0 {
		// Eeprom/ByteSize too small for what the description holds, or
		// past what a word address reaches: the smallest size that holds
		// the image instead, and say so.
		d.Header.EEPROMSize = 0
		if img, err = sii.Encode(d); err == nil {
			b.note("the image needs more than Eeprom/ByteSize %d bytes, or that size is not an EEPROM's: the image is %d bytes", dev.EEPROM.ByteSize, len(img))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", what, ErrDescription, err)
	}
	if p, perr := sii.Parse(img); perr == nil {
		d = p // the Device as a master's parser reads it, categories recorded
	}
	return &Image{Device: d, Bytes: img, Notes: b.notes}, nil
}

// fromData takes the whole image an ESI gives.
func fromData(what string, dev *esi.Device, vendor uint32, data []byte) (*Image, error) {
	d, err := sii.Parse(data)
	var crc *sii.ChecksumError
	if err != nil && !errors.As(err, &crc) {
		return nil, fmt.Errorf("%s: Eeprom/Data: %w: %w", what, ErrDescription, err)
	}
	id := d.Header.Identity
	if id.VendorID != vendor || id.ProductCode != dev.ProductCode || id.RevisionNumber != dev.RevisionNo {
		return nil, fmt.Errorf("%s: %w: Eeprom/Data holds vendor %#08x product %#08x revision %#08x, another device",
			what, ErrDescription, id.VendorID, id.ProductCode, id.RevisionNumber)
	}
	img := &Image{Device: d, Bytes: append([]byte(nil), data...)}
	if crc != nil {
		img.Notes = append(img.Notes, "Eeprom/Data: "+crc.Error())
	}
	return img, nil
}

// builder collects the strings and notes of one image.
type builder struct {
	dev     *esi.Device
	what    string
	group   string // the name of the device's group
	strings []string
	index   map[string]uint8
	notes   []string
	err     error
}

func (b *builder) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	for _, o := range b.notes {
		if o == n {
			return
		}
	}
	b.notes = append(b.notes, n)
}

// str returns the string index of s, adding it once; 0 for "".
func (b *builder) str(s string) uint8 {
	if s == "" {
		return 0
	}
	if len(s) > 0xFF {
		b.note("a string of %d bytes is cut to 255, the most an SII string holds: %.40q…", len(s), s)
		s = s[:0xFF]
	}
	if i, ok := b.index[s]; ok {
		return i
	}
	if len(b.strings) == 0xFF {
		if b.err == nil {
			b.err = fmt.Errorf("%s: %w: more than 255 distinct names (device, PDOs, entries, DC modes), the most the SII's Strings category holds", b.what, ErrDescription)
		}
		return 0
	}
	if b.index == nil {
		b.index = map[string]uint8{}
	}
	b.strings = append(b.strings, s)
	b.index[s] = uint8(len(b.strings))
	return uint8(len(b.strings))
}

// device builds the sii.Device: the strings in the order the vendors'
// images have them (order code, group, group name, device name, image,
// then DC modes, PDOs and their entries as they come).
func (b *builder) device(vendor uint32) (*sii.Device, error) {
	dev := b.dev
	d := &sii.Device{Header: b.header(vendor)}
	g := &sii.General{}
	g.OrderIndex = b.str(dev.Type)
	g.GroupIndex = b.str(dev.GroupType)
	d.General = g
	b.general(g)
	for _, f := range dev.FMMUs {
		d.FMMUs = append(d.FMMUs, b.fmmu(f))
	}
	for _, s := range dev.SyncManagers {
		d.SyncManagers = append(d.SyncManagers, syncManager(s))
	}
	if dev.DC != nil {
		for _, m := range dev.DC.OpModes {
			d.DC = append(d.DC, b.dcSync(m))
		}
	}
	var err error
	if d.TxPDOs, err = b.pdos("TxPdo", dev.TxPDOs); err != nil {
		return nil, err
	}
	if d.RxPDOs, err = b.pdos("RxPdo", dev.RxPDOs); err != nil {
		return nil, err
	}
	if b.err != nil {
		return nil, b.err
	}
	d.Strings = b.strings
	if ee := dev.EEPROM; ee != nil && len(ee.Categories) > 0 {
		d.Categories = canonicalCategories(d)
		for _, c := range ee.Categories {
			if len(c.Data)%2 != 0 {
				return nil, fmt.Errorf("%s: %w: Eeprom/Category type %d holds %d bytes, not whole words", b.what, ErrDescription, c.Type, len(c.Data))
			}
			d.Categories = append(d.Categories, sii.Category{Type: sii.CategoryType(c.Type), Raw: append([]byte{}, c.Data...)})
		}
	}
	return d, nil
}

// canonicalCategories places the interpreted categories in the order
// sii.Encode writes them when it is left to choose, so that the vendor
// categories follow them.
func canonicalCategories(d *sii.Device) []sii.Category {
	var cs []sii.Category
	add := func(t sii.CategoryType, n int) {
		if n > 0 {
			cs = append(cs, sii.Category{Type: t, Count: n})
		}
	}
	add(sii.CategoryStrings, len(d.Strings))
	add(sii.CategoryGeneral, 32)
	add(sii.CategoryFMMU, len(d.FMMUs))
	add(sii.CategorySyncManager, len(d.SyncManagers))
	add(sii.CategoryTxPDO, len(d.TxPDOs))
	add(sii.CategoryRxPDO, len(d.RxPDOs))
	add(sii.CategoryDC, len(d.DC))
	return cs
}

// general fills the General category from the description: names, the
// mailbox protocols' details, the E-bus current, the ports.
func (b *builder) general(g *sii.General) {
	dev := b.dev
	g.Reserved0E[0] = b.str(b.group) // the group's name: Beckhoff's and Kollmorgen's images have it here
	g.NameIndex = b.str(dev.Name.String())
	g.ImageIndex = b.str(dev.Image16x14)
	if mb := dev.Mailbox; mb != nil {
		if c := mb.CoE; c != nil || mb.Protocols&esi.ProtocolCoE != 0 {
			g.CoEDetails = sii.CoESDO
			if c != nil {
				for _, f := range []struct {
					on  bool
					bit sii.CoEDetails
				}{{c.SdoInfo, sii.CoESDOInfo}, {c.PdoAssign, sii.CoEPDOAssign}, {c.PdoConfig, sii.CoEPDOConfig},
					{c.PdoUpload, sii.CoEStartupUpload}, {c.CompleteAccess, sii.CoECompleteAccess}} {
					if f.on {
						g.CoEDetails |= f.bit
					}
				}
			}
		}
		if mb.Protocols&esi.ProtocolFoE != 0 {
			g.FoEDetails = 1
		}
		if mb.Protocols&esi.ProtocolEoE != 0 {
			g.EoEDetails = 1
		}
		if mb.SoE != nil {
			g.SoEChannels = mb.SoE.ChannelCount
		}
		if mb.DataLinkLayer {
			g.Flags |= sii.GeneralMailboxDataLinkLayer
		}
	}
	for _, p := range dev.Profiles {
		if p.ProfileNo == 402 {
			g.DS402Channels = max(g.DS402Channels, 1)
		}
		for _, c := range p.Channels {
			if c.ProfileNo == 402 {
				g.DS402Channels++
			}
		}
	}
	if dev.Info.IdentificationAdo != 0 {
		g.Flags |= sii.GeneralIdentPhysicalMemory
		g.PhysicalMemoryAddress = dev.Info.IdentificationAdo
	}
	if dev.Info.EBusCurrent < -0x8000 || dev.Info.EBusCurrent > 0x7FFF {
		b.note("Info/Electrical/EBusCurrent %d mA does not fit the SII's 16 bits: written as 0", dev.Info.EBusCurrent)
	} else {
		g.EBusCurrent = int16(dev.Info.EBusCurrent)
	}
	g.PhysicalPorts = b.ports()
}

// ports converts Device@Physics, one letter per port (Y E-bus, K MII
// 100BASE-TX, F 100BASE-FX, H MII with fast hot connect), to the General
// category's port nibbles.
func (b *builder) ports() sii.PhysicalPorts {
	var p sii.PhysicalPorts
	for i, c := range b.dev.Physics {
		if i >= 4 {
			b.note("Physics %q names more than 4 ports: the SII describes 4", b.dev.Physics)
			break
		}
		var t uint16
		switch c {
		case 'Y', 'y':
			t = sii.PortEBus
		case 'K', 'k', 'F', 'f', 'H', 'h':
			t = sii.PortMII
		case ' ':
		default:
			b.note("Physics %q: port %d %q is not Y, K, F or H: written as unused", b.dev.Physics, i, c)
		}
		p |= sii.PhysicalPorts(t << (4 * i))
	}
	return p
}

// fmmu converts an FMMU usage.
func (b *builder) fmmu(f esi.FMMU) sii.FMMUUsage {
	switch f.Usage {
	case esi.FMMUOutputs:
		return sii.FMMUOutputs
	case esi.FMMUInputs:
		return sii.FMMUInputs
	case esi.FMMUMailboxState:
		return sii.FMMUSyncManagerStatus
	case esi.FMMUDynamicInputs, esi.FMMUDynamicOutputs:
		b.note("Fmmu %s has no SII usage code: written as unused", f.Usage)
	}
	return sii.FMMUUnused
}

// syncManager converts one Sm element: start, default size, control
// byte, the enable bits (enable, virtual, enable in OP only) and the type.
func syncManager(s esi.SyncManager) sii.SyncManager {
	out := sii.SyncManager{StartAddress: s.StartAddress, Length: s.DefaultSize, Control: s.ControlByte}
	if s.Enable {
		out.Enable |= 0x01
	}
	if s.Virtual {
		out.Enable |= 0x04
	}
	if s.OpOnly {
		out.Enable |= 0x08
	}
	switch s.Type {
	case esi.SMMailboxOut:
		out.Type = sii.SMMailboxOut
	case esi.SMMailboxIn:
		out.Type = sii.SMMailboxIn
	case esi.SMOutputs:
		out.Type = sii.SMProcessDataOut
	case esi.SMInputs:
		out.Type = sii.SMProcessDataIn
	}
	return out
}

// pdos converts the TxPdo or RxPdo elements.
func (b *builder) pdos(kind string, ps []esi.PDO) ([]sii.PDO, error) {
	var out []sii.PDO
	for _, p := range ps {
		q := sii.PDO{Index: p.Index, SyncManager: sii.NoSyncManager, NameIndex: b.str(p.Name.String())}
		if p.SyncManager != esi.NoSyncManager {
			q.SyncManager = uint8(p.SyncManager)
		}
		if p.SyncUnit > 0 {
			q.DCSync = uint8(p.SyncUnit)
		}
		if p.Mandatory {
			q.Flags |= sii.PDOMandatory
		}
		if p.Fixed {
			q.Flags |= sii.PDOFixedContent
		}
		if p.Virtual {
			q.Flags |= sii.PDOVirtualContent
		}
		if len(p.Entries) > 0xFF {
			return nil, fmt.Errorf("%s: %w: %s %#04x has %d entries, an SII PDO holds 255", b.what, ErrDescription, kind, p.Index, len(p.Entries))
		}
		for _, e := range p.Entries {
			if e.BitLen > 0xFF {
				return nil, fmt.Errorf("%s: %w: %s %#04x entry %#04x:%d is %d bits, an SII PDO entry holds at most 255",
					b.what, ErrDescription, kind, p.Index, e.Index, e.SubIndex, e.BitLen)
			}
			q.Entries = append(q.Entries, sii.PDOEntry{Index: e.Index, SubIndex: e.SubIndex,
				NameIndex: b.str(e.Name.String()), DataType: b.entryType(kind, p.Index, e), BitLength: uint8(e.BitLen)})
		}
		out = append(out, q)
	}
	return out, nil
}

// entryType returns the SII data type byte of a PDO entry: the CoE index
// of its base type, else of the type the dictionary aliases it to.
func (b *builder) entryType(kind string, pdo uint16, e esi.PDOEntry) uint8 {
	if e.Padding() || e.DataType == "" {
		return 0
	}
	name := e.DataType
	if t := b.dev.Dictionary().DataType(name); t != nil && t.BaseType != "" && len(t.Arrays) == 0 {
		if _, ok := coe.TypeByName(name); !ok {
			name = t.BaseType
		}
	}
	t, ok := coe.TypeByName(name)
	if !ok || t > 0xFF {
		b.note("%s %#04x entry %#04x:%d: data type %q has no SII code: written as 0", kind, pdo, e.Index, e.SubIndex, e.DataType)
		return 0
	}
	return uint8(t)
}

// dcSync converts one DC operation mode.
func (b *builder) dcSync(m esi.OpMode) sii.DCSync {
	// A negative time (a shift before the SYNC event) is written as its
	// 32-bit two's complement, as a master reads it back as a signed value.
	u32 := func(what string, v int64) uint32 {
		if v < -0x80000000 || v > 0xFFFFFFFF {
			b.note("Dc/OpMode %s: %s %d ns does not fit the SII's 32 bits: written as 0", m.Name, what, v)
			return 0
		}
		return uint32(v)
	}
	i16 := func(what string, t esi.SyncTime) int16 {
		if !t.HasFactor {
			return 0
		}
		if t.Factor < -0x8000 || t.Factor > 0x7FFF {
			b.note("Dc/OpMode %s: %s factor %d does not fit the SII's 16 bits: written as 0", m.Name, what, t.Factor)
			return 0
		}
		return int16(t.Factor)
	}
	return sii.DCSync{
		CycleTime0:       u32("CycleTimeSync0", m.CycleTimeSync0.Value),
		ShiftTime0:       u32("ShiftTimeSync0", m.ShiftTimeSync0.Value),
		ShiftTime1:       u32("ShiftTimeSync1", m.ShiftTimeSync1.Value),
		Sync1CycleFactor: i16("CycleTimeSync1", m.CycleTimeSync1),
		AssignActivate:   m.AssignActivate,
		Sync0CycleFactor: i16("CycleTimeSync0", m.CycleTimeSync0),
		NameIndex:        b.str(m.Name),
		DescIndex:        b.str(strings.TrimSpace(m.Desc)),
	}
}
