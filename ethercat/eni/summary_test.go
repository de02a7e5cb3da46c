package eni

import (
	"fmt"
	"strings"
)

// summary renders a configuration as text, every field the reader
// fills, for the golden files: a change to what is read shows as a diff.
func summary(c *Config) string {
	var b strings.Builder
	m := c.Master
	fmt.Fprintf(&b, "file %s version %q\nmaster %q dst %v src %v ethertype %#04x mailboxstates %+v eoe %+v\n",
		c.Name, c.Version, m.Name, m.Destination, m.Source, m.EtherType, m.MailboxStates, m.EoE)
	initCmdsSummary(&b, "  ", m.InitCmds)
	for i := range c.Slaves {
		slaveSummary(&b, &c.Slaves[i])
	}
	for _, cy := range c.Cyclic {
		fmt.Fprintf(&b, "\ncyclic %q cycle %v µs\n", cy.Comment, deref(cy.CycleTime))
		for _, f := range cy.Frames {
			fmt.Fprintf(&b, "  frame %q\n", f.Comment)
			for _, cmd := range f.Cmds {
				fmt.Fprintf(&b, "    %v %+v len %d data %x cnt %v in %v out %v states %v %q line %d\n", cmd.Cmd, cmd.Address, cmd.DataLength, cmd.Data,
					deref(cmd.Cnt), deref(cmd.InputOffs), deref(cmd.OutputOffs), cmd.States, cmd.Comment, cmd.Line)
			}
		}
	}
	if pi := c.ProcessImage; pi != nil {
		for _, im := range []struct {
			name string
			im   Image
		}{{"inputs", pi.Inputs}, {"outputs", pi.Outputs}} {
			fmt.Fprintf(&b, "\n%s %d bytes\n", im.name, im.im.ByteSize)
			for _, v := range im.im.Variables {
				fmt.Fprintf(&b, "  %q %s %d@%d %q line %d\n", v.Name, v.DataType, v.BitSize, v.BitOffs, v.Comment, v.Line)
			}
		}
	}
	for _, w := range c.Warnings {
		fmt.Fprintf(&b, "warning %s\n", w)
	}
	return b.String()
}

func slaveSummary(b *strings.Builder, s *Slave) {
	i := s.Info
	pos, ok := i.Position()
	fmt.Fprintf(b, "\nslave %q line %d phys %v autoinc %v (position %d %v) id %+v physics %q vendor %#x product %#08x revision %#08x serial %v %q\n",
		i.Name, s.Line, deref(i.PhysAddr), deref(i.AutoIncAddr), pos, ok, i.Identification, i.Physics, i.VendorID, i.ProductCode,
		i.RevisionNo, deref(i.SerialNo), i.ProductRevision)
	for _, p := range s.PreviousPorts {
		fmt.Fprintf(b, "  previous port %s of %v selected %v\n", p.Port, deref(p.PhysAddr), p.Selected)
	}
	if dc := s.DC; dc != nil {
		fmt.Fprintf(b, "  dc potential %v reference %v cycle0 %v cycle1 %v shift %v assign %v\n", dc.PotentialReferenceClock,
			dc.ReferenceClock, deref(dc.CycleTime0), deref(dc.CycleTime1), deref(dc.ShiftTime), deref(dc.AssignActivate))
	}
	if pd := s.ProcessData; pd != nil {
		fmt.Fprintf(b, "  send %+v recv %+v\n", pd.Send, pd.Recv)
		for _, sm := range pd.SyncManagers {
			fmt.Fprintf(b, "  sm%d %s start %#04x control %#02x enable %v size %v/%v/%v pdos %#04x\n", sm.No, sm.Type, sm.StartAddress,
				sm.ControlByte, sm.Enable, deref(sm.DefaultSize), deref(sm.MinSize), deref(sm.MaxSize), sm.PDOs)
		}
		for _, p := range append(append([]PDO(nil), pd.RxPDOs...), pd.TxPDOs...) {
			fmt.Fprintf(b, "  pdo %#04x %q sm %d fixed %v mandatory %v exclude %#04x line %d\n", p.Index, p.Name, p.SyncManager, p.Fixed,
				p.Mandatory, p.Exclude, p.Line)
			for _, e := range p.Entries {
				fmt.Fprintf(b, "    %#04x:%02x %d bits %q %s %q\n", e.Index, e.SubIndex, e.BitLen, e.Name, e.DataType, e.Comment)
			}
		}
	}
	if m := s.Mailbox; m != nil {
		fmt.Fprintf(b, "  mailbox dll %v send %+v recv %+v poll %v statusbit %v boot %+v protocols %v\n", m.DataLinkLayer, m.Send, m.Recv,
			deref(m.PollTime), deref(m.StatusBitAddr), m.Bootstrap, m.Protocols)
		if m.CoE != nil {
			fmt.Fprintf(b, "  coe profile %+v\n", m.CoE.Profile)
			for _, c := range m.CoE.InitCmds {
				fmt.Fprintf(b, "    sdo %v ccs %d %#04x:%02x data %x ca %v fixed %v disabled %v timeout %d %q line %d\n", c.Transitions, c.Ccs,
					c.Index, c.SubIndex, c.Data, c.CompleteAccess, c.Fixed, c.Disabled, c.Timeout, c.Comment, c.Line)
			}
		}
	}
	initCmdsSummary(b, "  ", s.InitCmds)
}

func initCmdsSummary(b *strings.Builder, indent string, cmds []InitCmd) {
	for _, c := range cmds {
		fmt.Fprintf(b, "%scmd %v before %v %v %+v data %x cnt %v retries %d timeout %d requires %q %q line %d\n", indent, c.Transitions,
			c.BeforeSlave, c.Cmd, c.Address, c.Data, deref(c.Cnt), c.Retries, c.Timeout, c.Requires, c.Comment, c.Line)
		if v := c.Validate; v != nil {
			fmt.Fprintf(b, "%s  validate %s %x mask %x timeout %d\n", indent, v.Type, v.Data, v.DataMask, v.Timeout)
		}
	}
}

// deref renders an optional value, "-" for none.
func deref[T any](p *T) any {
	if p == nil {
		return "-"
	}
	return *p
}
