package sim

import (
	"encoding/binary"
	"errors"
	"fmt"

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
	coeEmergency   = 1
	coeSDORequest  = 2
	coeSDOResponse = 3
	coeSDOInfo     = 8
)

// SDO abort codes (ETG.1000.6, SDO abort codes).
const (
	abortToggle         = 0x05030000
	abortCommand        = 0x05040001
	abortOutOfMemory    = 0x05040005
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

// replyQueueLen is how many messages the application controller keeps
// ready behind the one in the send SyncManager: an emergency and the SDO
// reply it interrupted, or a few SDO information fragments.
const replyQueueLen = 4

// message is one mailbox message, header included.
type message struct {
	b [maxMailboxBytes]byte
	n int
}

// mailbox is the application controller's side of the mailbox: it takes a
// request out of the receive SyncManager a few frames after the master
// wrote it, answers CoE SDO and SDO information requests from the object
// dictionary and puts its messages, in order, into the send SyncManager
// whenever that is empty. It keeps the last message it put there and
// offers it again when the master toggles the repeat request.
type mailbox struct {
	d           *Device
	od          *objectDictionary
	delay       int
	outSM, inSM int
	pending     bool
	armed       bool
	left        int
	resp        [maxMailboxBytes]byte // the reply being built
	counter     uint8
	scratch     [maxMailboxBytes]byte

	queue  [replyQueueLen]message // ready messages, oldest at head
	head   int
	queued int
	last   message // the last message put into the send SyncManager
	// dropped counts emergencies lost because the queue was full.
	dropped int

	upload       []byte // rest of a segmented upload, aliasing uploadBuf
	uploadBuf    [maxMailboxBytes * 4]byte
	uploadToggle bool

	download downloadState
	info     infoState
}

// downloadState is a segmented download in progress.
type downloadState struct {
	active   bool
	index    uint16
	sub      uint8
	complete bool
	toggle   bool
	size     int
	data     []byte // received so far, aliasing buf
	buf      [maxMailboxBytes * 4]byte
}

func newMailbox(d *Device, od *objectDictionary, delay int) *mailbox {
	return &mailbox{d: d, od: od, delay: max(delay, 0), outSM: 0, inSM: 1}
}

// reset forgets everything in progress (the device went to INIT): queued
// messages, transfers, the repeat handshake.
func (m *mailbox) reset() {
	m.pending, m.armed, m.upload, m.counter = false, false, nil, 0
	m.head, m.queued, m.last.n = 0, 0, 0
	m.download.active, m.info.rest = false, nil
	if m.inSM < m.d.nsm {
		m.d.mem.b[int(esc.RegSyncManager(m.inSM))+smPDIControlOffset] &^= smRepeatBit
	}
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
	m.checkRepeat()
	m.deliver()
}

// Repeat handshake bits: the master's repeat request in the send
// SyncManager's activate register (0x0806+8n), the application's
// acknowledge in its PDI control register (0x0807+8n).
const (
	smActivateOffset   = 6
	smPDIControlOffset = 7
	smRepeatBit        = 0x02
)

// checkRepeat answers a toggled repeat request: the last message goes back
// into the send SyncManager (unless it still holds it, the master's read
// never having reached the device) and the acknowledge follows the
// request.
func (m *mailbox) checkRepeat() {
	if m.inSM >= m.d.nsm {
		return
	}
	base := int(esc.RegSyncManager(m.inSM))
	req := m.d.mem.b[base+smActivateOffset] & smRepeatBit
	if m.d.mem.b[base+smPDIControlOffset]&smRepeatBit == req {
		return
	}
	s := &m.d.sms[m.inSM]
	if !s.on || s.pdiOff || !s.mailbox || s.ecatWrite {
		return
	}
	if !s.full && m.last.n > 0 {
		m.offer(&m.last)
	}
	m.d.mem.b[base+smPDIControlOffset] = m.d.mem.b[base+smPDIControlOffset]&^smRepeatBit | req
}

// deliver puts the oldest ready message into the send SyncManager when it
// is empty, after topping the queue up with SDO information fragments.
func (m *mailbox) deliver() {
	m.fillInfo()
	if m.queued == 0 || m.inSM >= m.d.nsm {
		return
	}
	s := &m.d.sms[m.inSM]
	if !s.on || s.pdiOff || s.full || !s.mailbox || s.ecatWrite {
		return
	}
	q := &m.queue[m.head]
	m.head, m.queued = (m.head+1)%replyQueueLen, m.queued-1
	m.last.n = copy(m.last.b[:], q.b[:q.n])
	m.offer(&m.last)
}

// offer writes msg into the (empty) send SyncManager and marks it full.
func (m *mailbox) offer(msg *message) {
	s := &m.d.sms[m.inSM]
	area := m.d.mem.b[s.start:s.end]
	n := copy(area, msg.b[:msg.n])
	clear(area[n:])
	s.full = true
	m.d.setSMStatus(m.inSM, smStatusFull|smStatusWriteEvent)
}

// queueFree reports how many more messages the queue takes.
func (m *mailbox) queueFree() int { return replyQueueLen - m.queued }

// enqueue puts a finished message (header included, n bytes of src) at
// the end of the queue; it reports false when the queue is full.
func (m *mailbox) enqueue(src []byte) bool {
	if m.queued == replyQueueLen {
		return false
	}
	q := &m.queue[(m.head+m.queued)%replyQueueLen]
	q.n = copy(q.b[:], src)
	m.queued++
	return true
}

// emergency queues a CoE emergency message behind the messages already
// waiting (an SDO reply that is not read yet stays in front of it). It is
// dropped, and counted in m.dropped, when the queue is full.
func (m *mailbox) emergency(code uint16, reg uint8, data [5]byte) {
	var b [mailboxHeaderLen + coeHeaderLen + 8]byte
	m.counter = m.counter%7 + 1
	binary.LittleEndian.PutUint16(b[0:], coeHeaderLen+8)
	b[5] = mbxTypeCoE | m.counter<<4
	binary.LittleEndian.PutUint16(b[mailboxHeaderLen:], coeEmergency<<12)
	e := b[mailboxHeaderLen+coeHeaderLen:]
	binary.LittleEndian.PutUint16(e, code)
	e[2] = reg
	copy(e[3:], data[:])
	if !m.enqueue(b[:]) {
		m.dropped++
	}
}

// ErrNoCoE is returned by SendEmergency for a device without a CoE
// mailbox.
var ErrNoCoE = errors.New("sim: device has no CoE mailbox")

// ErrMailboxQueueFull is returned by SendEmergency when the device's
// messages for the master are piling up unread.
var ErrMailboxQueueFull = errors.New("sim: mailbox send queue full")

// SendEmergency makes the device send a CoE emergency message (CiA 301
// error code, error register, five manufacturer specific bytes): it goes
// into the send mailbox behind the messages already waiting there, as a
// device's application would queue it.
func (d *Device) SendEmergency(code uint16, reg uint8, data [5]byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mbx == nil {
		return fmt.Errorf("sim: %s: emergency %#04x: %w", d.name, code, ErrNoCoE)
	}
	if d.mbx.queueFree() == 0 {
		return fmt.Errorf("sim: %s: emergency %#04x: %w", d.name, code, ErrMailboxQueueFull)
	}
	d.mbx.emergency(code, reg, data)
	d.mbx.deliver()
	return nil
}

// serve takes the request out of the receive SyncManager and queues the
// reply. While the queue is full (messages the master does not read) the
// request stays in the receive SyncManager, which keeps it closed to the
// master's next write, and serve tries again on the next frame.
func (m *mailbox) serve() {
	if m.outSM >= m.d.nsm {
		return
	}
	s := &m.d.sms[m.outSM]
	if !s.full {
		return
	}
	if m.queueFree() == 0 {
		m.pending, m.left = true, 0
		return
	}
	req := m.d.mem.b[s.start:s.end]
	s.full = false
	m.info.rest = nil // a new request ends an SDO information response
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
	if !m.enqueue(m.resp[:mailboxHeaderLen+n]) {
		m.dropped++
	}
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
		m.sdoInfo(body[coeHeaderLen:])
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
		m.download.active = false
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
			data = req[sdoHeaderLen:]
			if size > len(data) {
				m.startDownload(index, sub, complete, size, data, req)
				return
			}
			data = data[:size]
		}
		if code := m.write(index, sub, data, complete); code != 0 {
			m.abort(index, sub, code)
			return
		}
		m.downloadReply(index, sub, req)
	case 0: // download segment
		m.downloadSegment(cmd, req)
	case 4: // abort from the master
		m.upload, m.download.active = nil, false
	default:
		m.abort(index, sub, abortCommand)
	}
}

// downloadReply answers a successful initiate download request.
func (m *mailbox) downloadReply(index uint16, sub uint8, req []byte) {
	h := m.sdoReply()
	h[0] = 0x60
	binary.LittleEndian.PutUint16(h[1:], index)
	h[3] = sub
	// The real EL3004 answers in the request's buffer: the data bytes
	// of the request stay in the response.
	copy(h[4:], req[4:8])
	m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen)
}

// startDownload begins a segmented download: the initiate request
// announced size bytes and carried the first part, data.
func (m *mailbox) startDownload(index uint16, sub uint8, complete bool, size int, data, req []byte) {
	switch {
	case m.od.find(index) == nil:
		m.abort(index, sub, abortNoObject)
		return
	case size > len(m.download.buf):
		m.abort(index, sub, abortOutOfMemory)
		return
	}
	dl := &m.download
	dl.active, dl.index, dl.sub, dl.complete, dl.toggle, dl.size = true, index, sub, complete, false, size
	dl.data = append(dl.buf[:0], data...)
	m.downloadReply(index, sub, req)
}

// downloadSegment serves a download segment request: the toggle must
// alternate, starting with 0; the last segment writes the object.
func (m *mailbox) downloadSegment(cmd byte, req []byte) {
	dl := &m.download
	if !dl.active {
		m.abort(0, 0, abortCommand)
		return
	}
	if toggle := cmd&0x10 != 0; toggle != dl.toggle {
		dl.active = false
		m.abort(dl.index, dl.sub, abortToggle)
		return
	}
	data := req[1:]
	if len(data) <= 7 {
		n := 7 - int(cmd>>1&0x07)
		data = data[:min(n, len(data))]
	}
	if len(dl.data)+len(data) > dl.size {
		dl.active = false
		m.abort(dl.index, dl.sub, abortLengthHigh)
		return
	}
	dl.data = append(dl.data, data...)
	if cmd&0x01 != 0 { // last segment
		dl.active = false
		code := uint32(abortLengthLow)
		if len(dl.data) == dl.size {
			code = m.write(dl.index, dl.sub, dl.data, dl.complete)
		}
		if code != 0 {
			m.abort(dl.index, dl.sub, code)
			return
		}
	}
	h := m.sdoReply()
	h[0] = 0x20 | cmd&0x10
	m.reply(mbxTypeCoE, coeHeaderLen+sdoHeaderLen)
	dl.toggle = !dl.toggle
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
		return m.writeComplete(o, sub, data)
	}
	e := o.entry(sub)
	if code := m.writable(e); code != 0 {
		return code
	}
	switch {
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
	if code := m.d.pdoWriteAbort(m.od, index, sub, data); code != 0 {
		return code
	}
	copy(e.value, data)
	m.written(index)
	return 0
}

// written follows a successful write of object index.
func (m *mailbox) written(index uint16) {
	if index >= 0x1600 && index <= 0x1C2F { // PDO mapping or assignment
		m.d.layoutProcessData()
	}
}

// writable returns the abort code for writing entry e now, or 0.
func (m *mailbox) writable(e *entry) uint32 {
	switch {
	case e == nil:
		return abortNoSubIndex
	case e.process || e.access == readOnly:
		return abortReadOnly
	case e.access == writablePreOp && m.d.esm.state != esc.StatePreOp:
		return abortDeviceState
	}
	return 0
}

// writeComplete stores a complete access download into o: from sub-index
// 0 (its value travels as 16 bits, then sub-indexes 1..value) or from
// sub-index 1 (sub-indexes 1..current count). Every entry must be
// writable and the data exactly as long as their values; nothing changes
// otherwise.
func (m *mailbox) writeComplete(o *object, sub uint8, data []byte) uint32 {
	if sub > 1 || o.code == codeVar || len(o.entries) == 0 {
		return abortUnsupported
	}
	n := int(o.entries[0].value[0])
	if sub == 0 {
		if len(data) < 2 {
			return abortLengthLow
		}
		if code := m.writable(&o.entries[0]); code != 0 {
			return code
		}
		n, data = int(data[0]), data[2:]
	}
	need := 0
	for k := 1; k <= n; k++ {
		e := o.entry(uint8(k))
		if e == nil {
			return abortValueRange
		}
		if code := m.writable(e); code != 0 {
			return code
		}
		need += len(e.value)
	}
	switch {
	case len(data) > need:
		return abortLengthHigh
	case len(data) < need:
		return abortLengthLow
	}
	if code := m.d.pdoCompleteWriteAbort(m.od, o.index, n, data); code != 0 {
		return code
	}
	if sub == 0 {
		o.entries[0].value[0] = uint8(n)
	}
	for k := 1; k <= n; k++ {
		e := o.entry(uint8(k))
		data = data[copy(e.value, data):]
	}
	m.written(o.index)
	return 0
}
