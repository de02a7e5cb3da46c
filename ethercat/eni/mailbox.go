package eni

import "github.com/ecagent/ecagent/ethercat/internal/etgxml"

// readMailbox reads a slave's Mailbox element.
func readMailbox(x *etgxml.Errors, e *etgxml.Element) *Mailbox {
	m := &Mailbox{
		DataLinkLayer: etgxml.BoolAttr(x, e, "DataLinkLayer"),
		Send:          readArea(x, etgxml.Need(x, e, "Send")),
	}
	recv := e.Child("Recv")
	if recv == nil {
		recv = e.Child("Receive") // as SOEM's sample writes it
	}
	if recv == nil {
		x.At(e, "", "", ErrMissing, "required <Recv> missing")
	}
	m.Recv = readArea(x, recv)
	m.PollTime = optUint[uint32](x, recv.Child("PollTime"))
	m.StatusBitAddr = optUint[uint32](x, recv.Child("StatusBitAddr"))
	if b := e.Child("BootStrap"); b != nil {
		m.Bootstrap = &Bootstrap{Send: readArea(x, etgxml.Need(x, b, "Send")), Recv: readArea(x, etgxml.Need(x, b, "Recv"))}
	}
	for _, p := range e.Children("Protocol") {
		m.Protocols = append(m.Protocols, etgxml.OneOf(x, p, "AoE", "EoE", "CoE", "FoE", "SoE", "VoE"))
	}
	if c := e.Child("CoE"); c != nil {
		m.CoE = &CoE{}
		for _, ic := range c.Child("InitCmds").Children("InitCmd") {
			m.CoE.InitCmds = append(m.CoE.InitCmds, readCoEInitCmd(x, ic))
		}
		if p := c.Child("Profile"); p != nil {
			m.CoE.Profile = &Profile{ProfileNo: etgxml.Uint[uint32](x, p.Child("ProfileNo"))}
			for _, ch := range p.Children("ChannelInfo") {
				m.CoE.Profile.Channels = append(m.CoE.Profile.Channels, etgxml.Uint[uint32](x, etgxml.Need(x, ch, "ProfileNo")))
			}
		}
	}
	return m
}

// readArea reads a mailbox's Start and Length; zero when e is nil.
func readArea(x *etgxml.Errors, e *etgxml.Element) MailboxArea {
	if e == nil {
		return MailboxArea{}
	}
	return MailboxArea{
		Start:  etgxml.Uint[uint16](x, etgxml.Need(x, e, "Start")),
		Length: etgxml.Uint[uint16](x, etgxml.Need(x, e, "Length")),
	}
}

// readCoEInitCmd reads one CoE init command.
func readCoEInitCmd(x *etgxml.Errors, e *etgxml.Element) CoEInitCmd {
	c := CoEInitCmd{Line: e.Line,
		Transitions:    etgxml.Transitions(x, e),
		Comment:        e.Child("Comment").Text(),
		Timeout:        etgxml.Uint[uint32](x, etgxml.Need(x, e, "Timeout")),
		Index:          etgxml.Uint[uint16](x, etgxml.Need(x, e, "Index")),
		SubIndex:       etgxml.Uint[uint8](x, etgxml.Need(x, e, "SubIndex")),
		Data:           etgxml.Hex(x, e.Child("Data")),
		CompleteAccess: etgxml.BoolAttr(x, e, "CompleteAccess"),
		Fixed:          etgxml.BoolAttr(x, e, "Fixed"),
		Disabled:       etgxml.Bool(x, e.Child("Disabled")),
	}
	ccs := etgxml.Need(x, e, "Ccs")
	c.Ccs = etgxml.Uint[uint8](x, ccs)
	switch {
	case ccs != nil && c.Ccs != 1 && c.Ccs != 2:
		x.At(ccs, "", ccs.Text(), ErrValue, "allowed: 1 (SDO download, a write) or 2 (upload, a read)")
	case c.Ccs == 1 && len(c.Data) == 0:
		x.At(e, "", "", ErrMissing, "required <Data> missing: an SDO download (Ccs 1) writes it")
	}
	return c
}
