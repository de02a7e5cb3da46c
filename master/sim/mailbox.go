package sim

import (
	"encoding/binary"

	"github.com/ecagent/ecagent/master/esc"
)

// Mailbox types (ETG.1000.6, mailbox header).
const (
	mbxTypeError = 0x00
	mbxTypeCoE   = 0x03
)

// Mailbox error codes (ETG.1000.6, mailbox error reply).
const (
	mbxErrUnsupportedProtocol = 0x0002
	mbxErrServiceNotSupported = 0x0004
	mbxErrInvalidSize         = 0x0008
)

// CoE services.
const (
	coeSDORequest  = 2
	coeSDOResponse = 3
	coeSDOInfo     = 8
)

// SDO abort codes (ETG.1000.6, SDO abort codes).
const (
	abortToggle         = 0x05030000
	abortCommand        = 0x05040001
	abortUnsupported    = 0x06010000
	abortReadOnly       = 0x06010002
	abortNoObject       = 0x06020000
	abortLengthHigh     = 0x06070012
	abortLengthLow      = 0x06070013
	abortNoSubIndex     = 0x06090011
	abortValueRange     = 0x06090030
	abortDeviceState    = 0x08000022
	mailboxHeaderLen    = 6
	coeHeaderLen        = 2
	sdoHeaderLen        = 8
	maxMailboxBytes     = 2048
	segmentResponseBase = mailboxHeaderLen + coeHeaderLen + 1
)

// mailbox is the application controller's side of the mailbox: it takes a
// request out of the receive SyncManager a few frames after the master
// wrote it, answers CoE SDO requests from the object dictionary and puts
// the reply into the send SyncManager when that is empty.
type mailbox struct {
	d            *Device
	od           *objectDictionary
	delay        int
	outSM, inSM  int
	pending      bool
	armed        bool
	left         int
	ready        bool
	resp         [maxMailboxBytes]byte
	respLen      int
	counter      uint8
	scratch      [maxMailboxBytes]byte
	upload       []byte // rest of a segmented upload, aliasing uploadBuf
	uploadBuf    [maxMailboxBytes * 4]byte
	uploadToggle bool
}

func newMailbox(d *Device, od *objectDictionary, delay int) *mailbox {
	return &mailbox{d: d, od: od, delay: max(delay, 0), outSM: 0, inSM: 1}
}

// reset forgets everything in progress (the device went to INIT).
func (m *mailbox) reset() {
	m.pending, m.armed, m.ready, m.upload, m.counter = false, false, false, nil, 0
}

// received is called when the master has filled SyncManager sm.
func (m *mailbox) received(sm int) {
	if sm != m.outSM {
		return
	}
	m.pending, m.armed, m.left = true, true, m.delay
	if m.delay == 0 {
		m.pending = false
		m.serve()
		m.deliver()
	}
}

// tick advances the application controller by one frame.
func (m *mailbox) tick(uint64) {
	if m.pending {
		if m.armed {
			m.armed = false
		} else if m.left--; m.left <= 0 {
			m.pending = false
			m.serve()
		}
	}
	m.deliver()
}

// deliver puts a ready reply into the send SyncManager when it is empty.
func (m *mailbox) deliver() {
	if !m.ready || m.inSM >= m.d.nsm {
		return
	}
	s := &m.d.sms[m.inSM]
	if !s.on || s.pdiOff || s.full || !s.mailbox || s.ecatWrite {
		return
	}
	area := m.d.mem.b[s.start:s.end]
	n := copy(area, m.resp[:m.respLen])
	clear(area[n:])
	s.full, m.ready = true, false
	m.d.setSMStatus(m.inSM, smStatusFull|smStatusWriteEvent)
}

// serve takes the request out of the receive SyncManager and prepares the
// reply.
func (m *mailbox) serve() {
	if m.outSM >= m.d.nsm {
		return
	}
	s := &m.d.sms[m.outSM]
	if !s.full {
		return
	}
	req := m.d.mem.b[s.start:s.end]
	s.full = false
	m.d.setSMStatus(m.outSM, smStatusReadEvent)
	if m.replyCapacity() < coeHeaderLen+sdoHeaderLen+4 {
		return // no room for any reply: the application ignores the mailbox
	}
	if len(req) < mailboxHeaderLen {
		m.mailboxError(mbxErrInvalidSize)
		return
	}
	n := int(binary.LittleEndian.Uint16(req))
	if mailboxHeaderLen+n > len(req) {
		m.mailboxError(mbxErrInvalidSize)
		return
	}
	body := req[mailboxHeaderLen : mailboxHeaderLen+n]
	switch req[5] & 0x0F {
	case mbxTypeCoE:
		m.coe(body)
	default:
		m.mailboxError(mbxErrUnsupportedProtocol)
	}
}

// replyCapacity returns the most bytes a reply's mailbox data may hold.
func (m *mailbox) replyCapacity() int {
	if m.inSM >= m.d.nsm {
		return 0
	}
	s := &m.d.sms[m.inSM]
	return min(s.end-s.start, maxMailboxBytes) - mailboxHeaderLen
}

// reply prepares a mailbox message of the given type whose data the caller
// has written at m.resp[mailboxHeaderLen:], n bytes.
func (m *mailbox) reply(typ uint8, n int) {
	m.counter = m.counter%7 + 1
	binary.LittleEndian.PutUint16(m.resp[0:], uint16(n))
	m.resp[2], m.resp[3], m.resp[4] = 0, 0, 0
	m.resp[5] = typ | m.counter<<4
	m.respLen, m.ready = mailboxHeaderLen+n, true
}

func (m *mailbox) mailboxError(code uint16) {
	binary.LittleEndian.PutUint16(m.resp[mailboxHeaderLen:], 0x0001)
	binary.LittleEndian.PutUint16(m.resp[mailboxHeaderLen+2:], code)
	m.reply(mbxTypeError, 4)
}

// coe serves a CoE message (body starts with the CoE header).
func (m *mailbox) coe(body []byte) {
	if len(body) < coeHeaderLen {
		m.mailboxError(mbxErrInvalidSize)
		return
	}
	switch binary.LittleEndian.Uint16(body) >> 12 {
	case coeSDORequest:
		if len(body) < coeHeaderLen+sdoHeaderLen {
			m.mailboxError(mbxErrInvalidSize)
			return
		}
		m.sdo(body[coeHeaderLen:])
	case coeSDOInfo:
		// SDO information is not provided: answer with an SDO info error.
		out := m.resp[mailboxHeaderLen:]
		binary.LittleEndian.PutUint16(out, coeSDOInfo<<12)
		out[2], out[3], out[4], out[5] = 0x07, 0, 0, 0
		binary.LittleEndian.PutUint32(out[6:], abortUnsupported)
		m.reply(mbxTypeCoE, 10)
	default:
		m.mailboxError(mbxErrServiceNotSupported)
	}
}

// sdoReply starts an SDO response in m.resp and returns its 8-byte SDO
// header to fill.
func (m *mailbox) sdoReply() []byte {
	out := m.resp[mailboxHeaderLen:]
	binary.LittleEndian.PutUint16(out, coeSDOResponse<<12)
	h := out[coeHeaderLen : coeHeaderLen+sdoHeaderLen]
	clear(h)
	return h
}

func (m *mailbox) abort(index uint16, sub uint8, code uint32) {
	h := m.sdoReply()
	h[0] = 0x80
	binary.LittleEndian.PutUint16(h[1:], index)
	h[3] = sub
	binary.LittleEndian.PutUint32(h[4:], code)
	m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen)
}

// sdo serves an SDO request (req starts with the command byte).
func (m *mailbox) sdo(req []byte) {
	cmd := req[0]
	index := binary.LittleEndian.Uint16(req[1:])
	sub := req[3]
	complete := cmd&0x10 != 0
	switch cmd >> 5 {
	case 2: // initiate upload
		m.upload = nil
		val, code := m.read(index, sub, complete)
		if code != 0 {
			m.abort(index, sub, code)
			return
		}
		h := m.sdoReply()
		binary.LittleEndian.PutUint16(h[1:], index)
		h[3] = sub
		if len(val) <= 4 && !complete {
			h[0] = 0x43 | byte(4-len(val))<<2
			copy(h[4:], val)
			m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen)
			return
		}
		h[0] = 0x41 | cmd&0x10
		binary.LittleEndian.PutUint32(h[4:], uint32(len(val)))
		room := m.replyCapacity() - coeHeaderLen - sdoHeaderLen
		if room < 0 {
			room = 0
		}
		n := copy(m.resp[mailboxHeaderLen+coeHeaderLen+sdoHeaderLen:], val[:min(len(val), room)])
		if n < len(val) {
			rest := copy(m.uploadBuf[:], val[n:])
			m.upload, m.uploadToggle = m.uploadBuf[:rest], false
		}
		m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen+n)
	case 3: // upload segment
		if m.upload == nil {
			m.abort(index, sub, abortCommand)
			return
		}
		toggle := cmd&0x10 != 0
		if toggle != m.uploadToggle {
			m.upload = nil
			m.abort(index, sub, abortToggle)
			return
		}
		m.uploadToggle = !m.uploadToggle
		out := m.resp[mailboxHeaderLen:]
		binary.LittleEndian.PutUint16(out, coeSDOResponse<<12)
		room := m.replyCapacity() - coeHeaderLen - 1
		n := min(len(m.upload), room)
		c := cmd & 0x10
		if n == len(m.upload) {
			c |= 0x01
		}
		data := out[coeHeaderLen+1:]
		copy(data, m.upload[:n])
		size := n
		if n < 7 {
			c |= byte(7-n) << 1
			clear(data[n:7])
			size = 7
		}
		out[coeHeaderLen] = c
		m.upload = m.upload[n:]
		if len(m.upload) == 0 {
			m.upload = nil
		}
		m.reply(mbxTypeCoE, coeHeaderLen+1+size)
	case 1: // initiate download
		var data []byte
		switch {
		case cmd&0x02 != 0: // expedited
			size := 4
			if cmd&0x01 != 0 {
				size = 4 - int(cmd>>2&3)
			}
			data = req[4 : 4+size]
		default:
			size := int(binary.LittleEndian.Uint32(req[4:]))
			if sdoHeaderLen+size > len(req) {
				m.abort(index, sub, abortUnsupported) // segmented download
				return
			}
			data = req[sdoHeaderLen : sdoHeaderLen+size]
		}
		if code := m.write(index, sub, data, complete); code != 0 {
			m.abort(index, sub, code)
			return
		}
		h := m.sdoReply()
		h[0] = 0x60
		binary.LittleEndian.PutUint16(h[1:], index)
		h[3] = sub
		// The real EL3004 answers in the request's buffer: the data bytes
		// of the request stay in the response.
		copy(h[4:], req[4:8])
		m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen)
	case 4: // abort from the master
		m.upload = nil
	default:
		m.abort(index, sub, abortCommand)
	}
}

// value returns the current value of entry e of object index appended to
// buf. A process data entry reads the bits where the current PDO
// assignment puts it, or zeros when no assigned PDO maps it.
func (m *mailbox) value(index uint16, e *entry, buf []byte) []byte {
	if !e.process {
		return append(buf, e.value...)
	}
	at := len(buf)
	buf = append(buf, make([]byte, (e.bits+7)/8)...)
	for k := range m.d.pd.entries {
		pe := &m.d.pd.entries[k]
		if pe.index == index && pe.sub == e.sub {
			copyBits(buf[at:], 0, m.d.mem.b[:], m.d.smArea(pe.sm)*8+pe.bit, min(e.bits, pe.bits))
			break
		}
	}
	return buf
}

// read returns the value of index:sub (all sub-indexes for a complete
// access) or an abort code.
func (m *mailbox) read(index uint16, sub uint8, complete bool) ([]byte, uint32) {
	o := m.od.find(index)
	if o == nil {
		return nil, abortNoObject
	}
	buf := m.scratch[:0]
	if complete {
		if sub > 1 || o.code == codeVar {
			return nil, abortUnsupported
		}
		n := o.entries[0].value[0]
		if sub == 0 {
			buf = append(buf, n, 0) // sub-index 0 travels as 16 bits
		}
		for i := range o.entries[1:] {
			if e := &o.entries[1+i]; e.sub <= n {
				buf = m.value(index, e, buf)
			}
		}
		return buf, 0
	}
	e := o.entry(sub)
	if e == nil {
		return nil, abortNoSubIndex
	}
	return m.value(index, e, buf), 0
}

// write stores data into index:sub or returns an abort code.
func (m *mailbox) write(index uint16, sub uint8, data []byte, complete bool) uint32 {
	o := m.od.find(index)
	if o == nil {
		return abortNoObject
	}
	if complete {
		return abortUnsupported
	}
	e := o.entry(sub)
	switch {
	case e == nil:
		return abortNoSubIndex
	case e.process || e.access == readOnly:
		return abortReadOnly
	case e.access == writablePreOp && m.d.esm.state != esc.StatePreOp:
		return abortDeviceState
	case e.dataType == typeVisibleString:
		e.value = append(e.value[:0], data...)
		return 0
	case len(data) > len(e.value):
		return abortLengthHigh
	case len(data) < len(e.value):
		return abortLengthLow
	case sub == 0 && o.code != codeVar && int(data[0]) >= len(o.entries):
		return abortValueRange
	}
	copy(e.value, data)
	if index >= 0x1600 && index <= 0x1C2F { // PDO mapping or assignment
		m.d.layoutProcessData()
	}
	return 0
}
