package sim

import (
	"encoding/binary"

	"github.com/ecagent/ecagent/ethercat/coe"
)

// infoState is an SDO information response being sent in fragments.
type infoState struct {
	op   coe.InfoOpCode
	rest []byte // data not sent yet, aliasing buf
	left uint16 // fragments after the next one
	buf  [2 + 2*1024 + maxMailboxBytes]byte
}

// Data types of records that have a standard structure (ETG.1000.6).
const (
	typePDOMapping = 0x0021
	typeIdentity   = 0x0023
)

// sdoInfo serves an SDO information request (req starts with the SDO
// information header): get OD list, get object description, get entry
// description. The answer may need several fragments; they are queued as
// the send queue drains.
func (m *mailbox) sdoInfo(req []byte) {
	h, err := coe.DecodeInfoHeader(req)
	if err != nil || len(req) < coe.InfoHeaderLen+2 {
		m.infoError(abortCommand)
		return
	}
	body := req[coe.InfoHeaderLen:]
	arg := binary.LittleEndian.Uint16(body)
	out := m.info.buf[:0]
	switch h.OpCode {
	case coe.InfoListRequest:
		out = m.appendODList(out, arg)
	case coe.InfoObjectRequest:
		o := m.od.find(arg)
		if o == nil {
			m.infoError(abortNoObject)
			return
		}
		out = coe.AppendObjectDescription(out, describeObject(o))
	case coe.InfoEntryRequest:
		if len(body) < 4 {
			m.infoError(abortCommand)
			return
		}
		o := m.od.find(arg)
		if o == nil {
			m.infoError(abortNoObject)
			return
		}
		e := o.entry(body[2])
		if e == nil {
			m.infoError(abortNoSubIndex)
			return
		}
		out = coe.AppendEntryDescription(out, m.describeEntry(o, e))
	default:
		m.infoError(abortCommand)
		return
	}
	if len(out) > len(m.info.buf) {
		m.infoError(abortOutOfMemory) // appending outgrew the buffer
		return
	}
	room := m.infoRoom()
	m.info.op, m.info.rest = h.OpCode+1, out
	m.info.left = uint16((len(out)+room-1)/room - 1)
	if len(out) == 0 {
		m.info.left = 0
	}
	m.fillInfo()
}

// infoRoom returns how many bytes of SDO information data one message
// carries.
func (m *mailbox) infoRoom() int {
	return max(m.replyCapacity()-coeHeaderLen-coe.InfoHeaderLen, 2)
}

// fillInfo queues the next fragments of an SDO information response while
// the send queue has room.
func (m *mailbox) fillInfo() {
	for m.info.rest != nil && m.queueFree() > 0 {
		n := min(len(m.info.rest), m.infoRoom())
		h := coe.InfoHeader{OpCode: m.info.op, Incomplete: n < len(m.info.rest), FragmentsLeft: m.info.left}
		size, err := coe.EncodeInfoFragment(m.resp[:], 0, h, m.info.rest[:n])
		if err != nil {
			m.info.rest = nil
			return
		}
		m.info.rest = m.info.rest[n:]
		if len(m.info.rest) == 0 {
			m.info.rest = nil
		}
		if m.info.left > 0 {
			m.info.left--
		}
		m.reply(mbxTypeCoE, size-mailboxHeaderLen)
	}
}

// infoError answers with an SDO information error carrying an abort code.
func (m *mailbox) infoError(code uint32) {
	m.info.rest = nil
	out := m.resp[mailboxHeaderLen:]
	coe.Header{Service: coe.ServiceSDOInfo}.Encode(out)
	coe.InfoHeader{OpCode: coe.InfoErrorRequest}.Encode(out[coeHeaderLen:])
	binary.LittleEndian.PutUint32(out[coeHeaderLen+coe.InfoHeaderLen:], code)
	m.reply(mbxTypeCoE, coeHeaderLen+coe.InfoHeaderLen+4)
}

// appendODList appends a get OD list response's data for list type t:
// 0 the number of objects in each list (all, RxPDO mappable, TxPDO
// mappable, backup, settings), 1 all objects, 2 and 3 the objects with
// RxPDO or TxPDO mappable entries, 4 and 5 the backup and settings objects
// (none here).
func (m *mailbox) appendODList(dst []byte, t uint16) []byte {
	if t == 0 {
		var counts [5]uint16
		for i := range m.od.objects {
			o := &m.od.objects[i]
			counts[0]++
			for k, bit := range [2]coe.Access{coe.AccessRxPDO, coe.AccessTxPDO} {
				if m.objectAccess(o)&bit != 0 {
					counts[1+k]++
				}
			}
		}
		return coe.AppendODList(dst, t, counts[:])
	}
	dst = binary.LittleEndian.AppendUint16(dst, t)
	for i := range m.od.objects {
		o := &m.od.objects[i]
		a := m.objectAccess(o)
		if t == 1 || t == 2 && a&coe.AccessRxPDO != 0 || t == 3 && a&coe.AccessTxPDO != 0 {
			dst = binary.LittleEndian.AppendUint16(dst, o.index)
		}
	}
	return dst
}

// objectAccess ORs the access words of o's entries.
func (m *mailbox) objectAccess(o *object) coe.Access {
	var a coe.Access
	for k := range o.entries {
		a |= m.entryAccess(o.index, &o.entries[k])
	}
	return a
}

// describeObject returns what get object description tells about o. A
// record's data type names its structure where a standard one exists.
func describeObject(o *object) coe.ObjectDescription {
	d := coe.ObjectDescription{Index: o.index, ObjectCode: coe.ObjectCode(o.code), Name: o.name}
	if n := len(o.entries); n > 0 {
		d.MaxSubIndex = o.entries[n-1].sub
	}
	switch {
	case o.code == codeVar && len(o.entries) > 0:
		d.DataType = coe.DataType(o.entries[0].dataType)
	case o.code == codeArray && len(o.entries) > 1:
		d.DataType = coe.DataType(o.entries[1].dataType)
	case o.index == 0x1018:
		d.DataType = typeIdentity
	case o.index >= 0x1600 && o.index <= 0x1BFF:
		d.DataType = typePDOMapping
	}
	return d
}

// describeEntry returns what get entry description tells about entry e
// of object o.
func (m *mailbox) describeEntry(o *object, e *entry) coe.EntryDescription {
	bits := e.bits
	if e.dataType == typeVisibleString {
		bits = 8 * len(e.value)
	}
	return coe.EntryDescription{Index: o.index, SubIndex: e.sub, DataType: coe.DataType(e.dataType),
		BitLength: uint16(bits), Access: m.entryAccess(o.index, e), Name: e.name}
}

// entryAccess returns the access word of entry e of object index: every
// entry is readable; the write access follows the dictionary; a process
// data entry is mappable into RxPDOs or TxPDOs as the dictionary's PDO
// mapping objects (0x1600… and 0x1A00…) map it, and into TxPDOs when
// none does (inputs are the common case).
func (m *mailbox) entryAccess(index uint16, e *entry) coe.Access {
	if e.rights != 0 {
		return e.rights
	}
	a := coe.AccessRead
	switch e.access {
	case writablePreOp:
		a |= coe.AccessWritePreOp
	case writableAlways:
		a |= coe.AccessWrite
	}
	if e.process {
		rx, tx := m.od.mappedBy(index, e.sub)
		if rx {
			a |= coe.AccessRxPDO
		}
		if tx || !rx {
			a |= coe.AccessTxPDO
		}
	}
	return a
}

// mappedBy reports whether an RxPDO or a TxPDO mapping object of the
// dictionary maps index:sub.
func (od *objectDictionary) mappedBy(index uint16, sub uint8) (rx, tx bool) {
	want := uint32(index)<<16 | uint32(sub)<<8
	for i := range od.objects {
		o := &od.objects[i]
		if o.index < 0x1600 || o.index > 0x1BFF || o.index >= 0x1800 && o.index < 0x1A00 {
			continue
		}
		for k := 1; k < len(o.entries); k++ {
			v := o.entries[k].value
			if len(v) == 4 && binary.LittleEndian.Uint32(v)&^0xFF == want {
				if o.index < 0x1800 {
					rx = true
				} else {
					tx = true
				}
			}
		}
	}
	return rx, tx
}
