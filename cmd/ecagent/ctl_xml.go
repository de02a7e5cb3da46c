package main

import (
	"context"
	"encoding/xml"
	"fmt"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

// esiInfo is the ESI-shaped description xml prints (ETG.2000's
// EtherCATInfo, the elements the bus can tell).
type esiInfo struct {
	XMLName      xml.Name     `xml:"EtherCATInfo"`
	Comment      string       `xml:",comment"`
	Vendor       esiVendor    `xml:"Vendor"`
	Descriptions esiDescripts `xml:"Descriptions"`
}

type esiVendor struct {
	ID string `xml:"Id"`
}

type esiDescripts struct {
	Devices []esiDevice `xml:"Devices>Device"`
}

type esiDevice struct {
	Comment string      `xml:",comment"`
	Type    esiType     `xml:"Type"`
	Name    string      `xml:"Name"`
	Objects []esiObject `xml:"Profile>Dictionary>Objects>Object,omitempty"`
	Sm      []esiSm     `xml:"Sm"`
	RxPdo   []esiPdo    `xml:"RxPdo"`
	TxPdo   []esiPdo    `xml:"TxPdo"`
	Mailbox *esiMailbox `xml:"Mailbox,omitempty"`
}

type esiType struct {
	ProductCode string `xml:"ProductCode,attr"`
	RevisionNo  string `xml:"RevisionNo,attr"`
	Name        string `xml:",chardata"`
}

type esiSm struct {
	StartAddress   string `xml:"StartAddress,attr"`
	ControlByte    string `xml:"ControlByte,attr"`
	DefaultSize    int    `xml:"DefaultSize,attr"`
	Enable         int    `xml:"Enable,attr"`
	Classification string `xml:",chardata"`
}

type esiPdo struct {
	Sm    int        `xml:"Sm,attr"`
	Fixed string     `xml:"Fixed,attr,omitempty"`
	Index string     `xml:"Index"`
	Entry []esiEntry `xml:"Entry"`
}

type esiEntry struct {
	Index    string `xml:"Index"`
	SubIndex int    `xml:"SubIndex,omitempty"`
	BitLen   int    `xml:"BitLen"`
}

type esiMailbox struct {
	CoE *struct{} `xml:"CoE,omitempty"`
	FoE *struct{} `xml:"FoE,omitempty"`
	EoE *struct{} `xml:"EoE,omitempty"`
	SoE *struct{} `xml:"SoE,omitempty"`
}

type esiObject struct {
	Index    string       `xml:"Index"`
	Name     string       `xml:"Name"`
	Type     string       `xml:"Type"`
	BitSize  int          `xml:"BitSize"`
	SubItems []esiSubItem `xml:"Info>SubItem,omitempty"`
	Access   string       `xml:"Flags>Access,omitempty"`
}

type esiSubItem struct {
	SubIdx  string `xml:"SubIdx"`
	Name    string `xml:"Name"`
	Type    string `xml:"Type"`
	BitSize int    `xml:"BitSize"`
	Access  string `xml:"Flags>Access"`
}

func xmlCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "xml", help{
		usage: "-p N",
		about: "Print an ESI-shaped description (EtherCATInfo) of a slave from what the bus tells: " +
			"identity and name from its SII, SyncManagers and PDOs as mapped, mailbox protocols, and " +
			"the CoE object dictionary (SDO information), like `ethercat xml`.",
		groups: ctlGroups(),
		notes: "It is a starting point, not the vendor's ESI: what only the ESI holds (units, " +
			"descriptions, default values, module slots) is missing. On a segment opened here the " +
			"bus is brought up first. " + ctlNotes,
		examples: []string{"ecagent xml -p 5 > el4132.xml"},
	})
	c := addCtlFlags(fs)
	slave, err := c.oneSlave(fs, args)
	if err != nil {
		return err
	}
	c.bringUp = true
	var list maintenance.SlavesResult
	var pdos maintenance.PDOsResult
	var dict maintenance.SDOInfoResult
	reqs := []maintenance.Request{{Op: maintenance.OpSlaves}, {Op: maintenance.OpPDOs}, {Op: maintenance.OpSDOInfo, Slave: slave}}
	if err := c.call(ctx, e, "xml", reqs, &list, &pdos, &dict); err != nil {
		return err
	}
	pos0 := reqs[2].Slave
	if pos0 < 0 || pos0 >= len(list.Slaves) {
		return fmt.Errorf("xml: slave %d: the segment has %d slaves", pos0, len(list.Slaves))
	}
	info := esiFromBus(list.Slaves[pos0], pdos, dict)
	if c.at.simulated {
		info.Comment = " " + simulatedLine[2:] + " "
	}
	if *c.json {
		return c.print(e.stdout, &info, nil)
	}
	out, err := xml.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("xml: %w", err)
	}
	_, err = fmt.Fprintf(e.stdout, "%s%s\n", xml.Header, out)
	return err
}

// hexESI writes a number as ESI does: #x followed by hex digits.
func hexESI(v uint64, digits int) string { return fmt.Sprintf("#x%0*x", digits, v) }

// esiFromBus describes slave s from the bus: its identity, its mapped
// process data and its object dictionary.
func esiFromBus(s maintenance.SlaveInfo, pdos maintenance.PDOsResult, dict maintenance.SDOInfoResult) esiInfo {
	name := s.OrderCode
	if name == "" {
		name = s.Name
	}
	dev := esiDevice{
		Comment: fmt.Sprintf(" from the bus by 'ecagent xml': slave %d, station %#04x ", s.Position, s.Station),
		Type:    esiType{ProductCode: hexESI(uint64(s.Product), 8), RevisionNo: hexESI(uint64(s.Revision), 8), Name: name},
		Name:    s.Name,
	}
	if mb := s.Mailbox; mb != nil {
		dev.Sm = append(dev.Sm,
			esiSm{StartAddress: hexESI(uint64(mb.RxOffset), 4), ControlByte: "#x26", DefaultSize: int(mb.RxSize), Enable: 1, Classification: "MBoxOut"},
			esiSm{StartAddress: hexESI(uint64(mb.TxOffset), 4), ControlByte: "#x22", DefaultSize: int(mb.TxSize), Enable: 1, Classification: "MBoxIn"})
		dev.Mailbox = &esiMailbox{}
		for _, p := range []struct {
			name string
			set  **struct{}
		}{{"CoE", &dev.Mailbox.CoE}, {"FoE", &dev.Mailbox.FoE}, {"EoE", &dev.Mailbox.EoE}, {"SoE", &dev.Mailbox.SoE}} {
			if containsWord(s.Protocols, p.name) {
				*p.set = &struct{}{}
			}
		}
	}
	for _, sp := range pdos.Slaves {
		if sp.Position != s.Position {
			continue
		}
		for _, sm := range sp.SyncManagers {
			class := "Inputs"
			if sm.Control&0x0C == 0x04 { // written by the master
				class = "Outputs"
			}
			dev.Sm = append(dev.Sm, esiSm{StartAddress: hexESI(uint64(sm.Start), 4), ControlByte: hexESI(uint64(sm.Control), 2),
				DefaultSize: sm.Bytes, Enable: 1, Classification: class})
		}
		conv := func(p maintenance.PDOInfo) esiPdo {
			out := esiPdo{Sm: p.SM, Index: hexESI(uint64(p.Index), 4)}
			for _, en := range p.Entries {
				out.Entry = append(out.Entry, esiEntry{Index: hexESI(uint64(en.Index), 4), SubIndex: int(en.SubIndex), BitLen: en.Bits})
			}
			return out
		}
		for _, p := range sp.RxPDOs {
			dev.RxPdo = append(dev.RxPdo, conv(p))
		}
		for _, p := range sp.TxPDOs {
			dev.TxPdo = append(dev.TxPdo, conv(p))
		}
	}
	for _, o := range dict.Objects {
		obj := esiObject{Index: hexESI(uint64(o.Index), 4), Name: o.Name, Type: o.ObjectCode}
		for _, en := range o.Entries {
			if o.MaxSub == 0 && en.Sub == 0 {
				obj.Type, obj.BitSize, obj.Access = en.TypeName, int(en.BitLength), esiAccess(en.Access)
				continue
			}
			obj.BitSize += int(en.BitLength)
			obj.SubItems = append(obj.SubItems, esiSubItem{SubIdx: hexESI(uint64(en.Sub), 2), Name: en.Name,
				Type: en.TypeName, BitSize: int(en.BitLength), Access: esiAccess(en.Access)})
		}
		dev.Objects = append(dev.Objects, obj)
	}
	return esiInfo{Vendor: esiVendor{ID: hexESI(uint64(s.Vendor), 8)}, Descriptions: esiDescripts{Devices: []esiDevice{dev}}}
}

// esiAccess turns the access of an SDO information entry (rwrwrw for
// PREOP, SAFEOP, OP) into ESI's ro or rw.
func esiAccess(a string) string {
	for i := 1; i < len(a); i += 2 {
		if a[i] == 'w' {
			return "rw"
		}
	}
	return "ro"
}

// containsWord reports whether the space- or comma-separated list s has w.
func containsWord(s, w string) bool {
	word := ""
	for _, r := range s + " " {
		if r == ' ' || r == ',' || r == '|' || r == '+' {
			if word == w {
				return true
			}
			word = ""
			continue
		}
		word += string(r)
	}
	return false
}
