package eni

import (
	"bytes"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// readMaster reads the Master element.
func readMaster(x *etgxml.Errors, e *etgxml.Element) Master {
	info := etgxml.Need(x, e, "Info")
	m := Master{
		Name:        info.Child("Name").Text(),
		Destination: readMAC(x, info.Child("Destination")),
		Source:      readMAC(x, info.Child("Source")),
		EtherType:   readEtherType(x, info.Child("EtherType")),
		InitCmds:    readInitCmds(x, e.Child("InitCmds")),
	}
	if s := e.Child("MailboxStates"); s != nil {
		m.MailboxStates = &MailboxStates{
			StartAddr: etgxml.Bits[uint32](x, etgxml.Need(x, s, "StartAddr")),
			Count:     etgxml.Uint[uint32](x, etgxml.Need(x, s, "Count")),
		}
	}
	if s := e.Child("EoE"); s != nil {
		m.EoE = &MasterEoE{
			MaxPorts:  etgxml.Uint[uint32](x, s.Child("MaxPorts")),
			MaxFrames: etgxml.Uint[uint32](x, s.Child("MaxFrames")),
			MaxMACs:   etgxml.Uint[uint32](x, s.Child("MaxMACs")),
		}
	}
	return m
}

// readMAC reads a MAC address written as 12 hex digits; nil when absent.
func readMAC(x *etgxml.Errors, e *etgxml.Element) []byte {
	b := etgxml.Hex(x, e)
	if b != nil && len(b) != 6 {
		x.At(e, "", e.Text(), ErrValue, "a MAC address is 6 bytes (12 hex digits)")
		return nil
	}
	return b
}

// readEtherType reads the frames' EtherType: EtherCAT's 88a4, in network
// order or byte-swapped as TwinCAT writes it; 0x88A4 when absent.
func readEtherType(x *etgxml.Errors, e *etgxml.Element) uint16 {
	if e == nil {
		return 0x88A4
	}
	b := etgxml.Hex(x, e)
	if !bytes.Equal(b, []byte{0x88, 0xA4}) && !bytes.Equal(b, []byte{0xA4, 0x88}) && b != nil {
		x.At(e, "", e.Text(), ErrValue, "the EtherType of EtherCAT is 88a4 (a488 byte-swapped, as TwinCAT writes it)")
	}
	return 0x88A4
}

// readInitCmds reads the InitCmd children of an InitCmds element.
func readInitCmds(x *etgxml.Errors, e *etgxml.Element) []InitCmd {
	var out []InitCmd
	for _, c := range e.Children("InitCmd") {
		out = append(out, readInitCmd(x, c))
	}
	return out
}

// readInitCmd reads one register init command.
func readInitCmd(x *etgxml.Errors, e *etgxml.Element) InitCmd {
	c := InitCmd{Line: e.Line,
		Transitions: etgxml.Transitions(x, e),
		BeforeSlave: etgxml.Bool(x, e.Child("BeforeSlave")),
		Comment:     e.Child("Comment").Text(),
		Cmd:         readCommand(x, e),
		Retries:     etgxml.Uint[uint16](x, e.Child("Retries")),
		Timeout:     etgxml.Uint[uint32](x, e.Child("Timeout")),
	}
	if r := e.Child("Requires"); r != nil {
		c.Requires = etgxml.OneOf(x, r, "frame", "cycle")
	}
	c.Address = readAddress(x, e, c.Cmd)
	c.Data = readData(x, e, true)
	c.Cnt = optUint[uint16](x, e.Child("Cnt"))
	if v := e.Child("Validate"); v != nil {
		c.Validate = readValidate(x, v, len(c.Data))
	}
	return c
}

// readCommand reads the Cmd element: a command number 0…14.
func readCommand(x *etgxml.Errors, e *etgxml.Element) Command {
	el := etgxml.Need(x, e, "Cmd")
	c := etgxml.Uint[uint8](x, el)
	if c > uint8(FRMW) {
		x.At(el, "", el.Text(), ErrValue, "allowed: a command from 0 (NOP) to 14 (FRMW)")
		return NOP
	}
	return Command(c)
}

// readAddress reads a datagram's address: Addr for a logical command,
// Adp and Ado for the others (Adp may be left out of a broadcast or NOP).
func readAddress(x *etgxml.Errors, e *etgxml.Element, cmd Command) Address {
	addr, adp, ado := e.Child("Addr"), e.Child("Adp"), e.Child("Ado")
	if cmd.Logical() {
		if adp != nil || ado != nil {
			x.At(e, "", "", ErrValue, "%v is a logical command: it is addressed by <Addr>, not <Adp>/<Ado>", cmd)
		}
		return Address{Logical: true, Addr: etgxml.Bits[uint32](x, etgxml.Need(x, e, "Addr"))}
	}
	if addr != nil {
		x.At(addr, "", addr.Text(), ErrValue, "<Addr> is for the logical commands (LRD, LWR, LRW), not %v: give <Adp> and <Ado>", cmd)
	}
	if adp == nil && cmd != NOP && cmd != BRD && cmd != BWR && cmd != BRW {
		x.At(e, "", "", ErrMissing, "required <Adp> missing: %v addresses one slave", cmd)
	}
	return Address{Adp: etgxml.Bits[uint16](x, adp), Ado: etgxml.Uint[uint16](x, etgxml.Need(x, e, "Ado"))}
}

// readData reads a datagram's data: the Data element, or DataLength zero
// bytes; one of them is required when need is set.
func readData(x *etgxml.Errors, e *etgxml.Element, need bool) []byte {
	data, length := e.Child("Data"), e.Child("DataLength")
	switch {
	case data != nil && length != nil:
		x.At(e, "", "", ErrValue, "<Data> and <DataLength> are exclusive: give one")
	case data != nil:
		b := etgxml.Hex(x, data)
		if len(b) > maxDatagram {
			x.At(data, "", "", ErrValue, "%d bytes of data do not fit a datagram (at most %d)", len(b), maxDatagram)
		}
		return b
	case length != nil:
		n := etgxml.Uint[uint16](x, length)
		if n > maxDatagram {
			x.At(length, "", length.Text(), ErrValue, "a datagram holds at most %d bytes", maxDatagram)
			return nil
		}
		return make([]byte, n)
	case need:
		x.At(e, "", "", ErrMissing, "required <Data> or <DataLength> missing")
	}
	return nil
}

// readValidate reads a Validate element of a command of n data bytes.
func readValidate(x *etgxml.Errors, e *etgxml.Element, n int) *Validate {
	v := &Validate{
		Data:     etgxml.Hex(x, etgxml.Need(x, e, "Data")),
		DataMask: etgxml.Hex(x, e.Child("DataMask")),
		Timeout:  etgxml.Uint[uint32](x, etgxml.Need(x, e, "Timeout")),
		Type:     "EQ",
	}
	if t, ok := e.Attr("Type"); ok {
		v.Type = t
	}
	if v.DataMask != nil && len(v.DataMask) != len(v.Data) {
		x.At(e.Child("DataMask"), "", "", ErrValue, "the mask has %d bytes, the data %d: they must match", len(v.DataMask), len(v.Data))
	}
	if len(v.Data) > n {
		x.At(e, "", "", ErrValue, "%d bytes to compare, but the command reads %d", len(v.Data), n)
	}
	return v
}

// optUint reads an optional unsigned element; nil when absent.
func optUint[T etgxml.Unsigned](x *etgxml.Errors, e *etgxml.Element) *T {
	if e == nil {
		return nil
	}
	v := etgxml.Uint[T](x, e)
	return &v
}

// optInt reads an optional signed element; nil when absent.
func optInt[T etgxml.Signed](x *etgxml.Errors, e *etgxml.Element) *T {
	if e == nil {
		return nil
	}
	v := etgxml.Int[T](x, e)
	return &v
}

// optBits reads an optional unsigned element that may be written as a
// negative bit pattern; nil when absent.
func optBits[T etgxml.Unsigned](x *etgxml.Errors, e *etgxml.Element) *T {
	if e == nil {
		return nil
	}
	v := etgxml.Bits[T](x, e)
	return &v
}
