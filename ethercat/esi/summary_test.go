package esi

import (
	"fmt"
	"strings"
)

// summary renders a file as text, every field the reader fills, for the
// golden files: a change to what is read shows as a diff.
func summary(f *File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "file %s version %q\nvendor %#08x %q image %d bytes\n", f.Name, f.Version, f.Vendor.ID, f.Vendor.Name, len(f.Vendor.ImageData16x14))
	for _, g := range f.Groups {
		fmt.Fprintf(&b, "group %s %q parent %q sort %d image %d bytes\n", g.Type, g.Name, g.ParentGroup, g.SortOrder, len(g.ImageData16x14))
	}
	for i := range f.Devices {
		deviceSummary(&b, &f.Devices[i])
	}
	for _, w := range f.Warnings {
		fmt.Fprintf(&b, "warning %s\n", w)
	}
	return b.String()
}

func deviceSummary(b *strings.Builder, d *Device) {
	fmt.Fprintf(b, "\ndevice %s product %#08x revision %#08x check %q physics %q invisible %v group %s line %d\n",
		d.Type, d.ProductCode, d.RevisionNo, d.CheckRevisionNo, d.Physics, d.Invisible, d.GroupType, d.Line)
	fmt.Fprintf(b, "  name %q image %q/%d bytes\n  info %+v\n", d.Name, d.Image16x14, len(d.ImageData16x14), d.Info)
	for i, s := range d.SyncManagers {
		fmt.Fprintf(b, "  sm%d %+v\n", i, s)
	}
	for i, f := range d.FMMUs {
		fmt.Fprintf(b, "  fmmu%d %v sm %d su %d opOnly %v\n", i, f.Usage, f.SyncManager, f.SyncUnit, f.OpOnly)
	}
	for _, p := range d.RxPDOs {
		pdoSummary(b, "rxpdo", p)
	}
	for _, p := range d.TxPDOs {
		pdoSummary(b, "txpdo", p)
	}
	if m := d.Mailbox; m != nil {
		fmt.Fprintf(b, "  mailbox dll %v rt %v protocols %#02x eoe %+v soe %+v\n", m.DataLinkLayer, m.RealTimeMode, uint16(m.Protocols), m.EoE, m.SoE)
		if c := m.CoE; c != nil {
			fmt.Fprintf(b, "  coe info %v assign %v config %v upload %v ca %v segmented %v diag %v\n",
				c.SdoInfo, c.PdoAssign, c.PdoConfig, c.PdoUpload, c.CompleteAccess, c.SegmentedSdo, c.DiagHistory)
			for _, ic := range c.InitCmds {
				fmt.Fprintf(b, "    initcmd %v %#04x:%02x data %x ca %v fixed %v %q line %d\n",
					ic.Transitions, ic.Index, ic.SubIndex, ic.Data, ic.CompleteAccess, ic.Fixed, ic.Comment, ic.Line)
			}
		}
	}
	if d.DC != nil {
		for _, m := range d.DC.OpModes {
			fmt.Fprintf(b, "  opmode %q %q assign %#04x sync0 %+v/%+v sync1 %+v/%+v sms %+v\n", m.Name, m.Desc, m.AssignActivate,
				m.CycleTimeSync0, m.ShiftTimeSync0, m.CycleTimeSync1, m.ShiftTimeSync1, m.SyncManagers)
		}
	}
	if e := d.EEPROM; e != nil {
		fmt.Fprintf(b, "  eeprom %d bytes config %x bootstrap %x data %d bytes pdi %v categories %+v\n",
			e.ByteSize, e.ConfigData, e.BootStrap, len(e.Data), e.AssignToPdi, e.Categories)
	}
	for _, p := range d.Profiles {
		fmt.Fprintf(b, "  profile %d addinfo %d channels %+v\n", p.ProfileNo, p.AddInfo, p.Channels)
		dictionarySummary(b, p.Dictionary)
	}
}

func pdoSummary(b *strings.Builder, kind string, p PDO) {
	fmt.Fprintf(b, "  %s %#04x %q sm %d su %d fixed %v mandatory %v virtual %v exclude %#04x, %d bits, line %d\n",
		kind, p.Index, p.Name, p.SyncManager, p.SyncUnit, p.Fixed, p.Mandatory, p.Virtual, p.Exclude, p.BitLen(), p.Line)
	for _, e := range p.Entries {
		fmt.Fprintf(b, "    %#04x:%02x %d bits %q %s fixed %v\n", e.Index, e.SubIndex, e.BitLen, e.Name, e.DataType, e.Fixed)
	}
}

func dictionarySummary(b *strings.Builder, d *Dictionary) {
	if d == nil {
		return
	}
	for _, t := range d.DataTypes {
		fmt.Fprintf(b, "    type %s base %q %d bits arrays %+v subitems %d enums %d\n", t.Name, t.BaseType, t.BitSize, t.Arrays, len(t.SubItems), len(t.Enums))
	}
	for _, o := range d.Objects {
		fmt.Fprintf(b, "    object %#04x %q %s %v %d bits flags %+v unit %#x line %d\n", o.Index, o.Name, o.Type, o.Kind, o.BitSize, o.Flags, o.Info.Unit, o.Line)
		for _, e := range o.Entries {
			fmt.Fprintf(b, "      :%02x %q %s/%s %d@%d %v %v restrictions %q/%q default %x\n", e.SubIndex, e.Name, e.DataType, e.BaseType,
				e.BitSize, e.BitOffs, e.Flags.Access, e.Flags.PDOMapping, e.Flags.ReadRestrictions, e.Flags.WriteRestrictions, e.Default)
		}
	}
}
