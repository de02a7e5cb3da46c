package sim

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// The application controller's side of the simulated mailbox: taking
// requests out of the receive SyncManager, the queue of messages for the
// send SyncManager, the repeat handshake and emergencies. The SDO server
// is in sdo.go and sdo_values.go, SDO information in sdoinfo.go.

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
	delay       int  // frames before a request is served, when framed
	framed      bool // count frames (WithMailboxDelay), not time
	fw          firmware
	dueAt       int64 // segment time the pending request is served
	outSM, inSM int
	pending     bool
	armed       bool
	left        int
	resp        [maxMailboxBytes]byte // the reply being built
	counter     uint8                 // of the last message sent, 1..7
	// requestCounter is the counter of the last request taken from the master
	// (0: none since INIT, or a master that does not count).
	requestCounter uint8
	scratch        [maxMailboxBytes]byte

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
	foeState foeState
}

func newMailbox(d *Device, od *objectDictionary, delay int, fw firmware) *mailbox {
	return &mailbox{d: d, od: od, delay: max(delay, 0), fw: fw, outSM: 0, inSM: 1}
}

// wakeMailbox makes the mailbox look for work on the next frame.
func (d *Device) wakeMailbox() { d.mbxWake = d.mbx != nil }

// idle reports whether the mailbox has nothing to do until an event wakes
// it (Device.mbxWake): no request pending, no message waiting, no SDO
// information fragments left, no repeat request unanswered.
func (m *mailbox) idle() bool {
	if m.pending || m.queued > 0 || m.info.rest != nil {
		return false
	}
	if m.inSM >= m.d.nsm {
		return true
	}
	base := int(esc.RegSyncManager(m.inSM))
	return m.d.mem.b[base+smActivateOffset]&smRepeatBit == m.d.mem.b[base+smPDIControlOffset]&smRepeatBit
}

// reset forgets everything in progress (the device went to INIT): queued
// messages, transfers, the repeat handshake.
func (m *mailbox) reset() {
	m.pending, m.armed, m.upload, m.counter, m.requestCounter = false, false, nil, 0, 0
	m.head, m.queued, m.last.n = 0, 0, 0
	m.download.active, m.info.rest = false, nil
	m.resetFoE()
	if m.inSM < m.d.nsm {
		m.d.mem.b[int(esc.RegSyncManager(m.inSM))+smPDIControlOffset] &^= smRepeatBit
	}
}

// received is called when the master has filled SyncManager sm at
// segment time now.
func (m *mailbox) received(sm int, now int64) {
	if sm != m.outSM {
		return
	}
	m.d.mbxWake = true
	m.pending, m.armed, m.left = true, true, m.delay
	took := m.fw.mailbox.draw(m.d.rng)
	m.dueAt = now + took
	if (m.framed && m.delay == 0) || (!m.framed && took == 0) {
		m.pending = false
		m.serve()
		m.deliver()
	}
}

// advance serves a pending request whose time is over at segment time now.
func (m *mailbox) advance(now int64) {
	if m.framed || !m.pending || now < m.dueAt {
		return
	}
	m.pending = false
	m.serve()
	m.deliver()
}

// tick advances the application controller by one frame.
func (m *mailbox) tick(uint64) {
	if m.pending && m.framed {
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
	m.d.mbxWake = true
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
	// The mailbox data link layer (ETG.1000.4): a master that counts its
	// requests (1..7) sends a repeated request with the counter of the
	// previous one — it lost the frame that carried the first copy back,
	// or found the mailbox still full — and the application takes the
	// repeat out of the SyncManager without serving it again; counter 0
	// (a master that does not count) is served every time.
	c := req[5] >> 4 & 0x07
	if c != 0 && c == m.requestCounter {
		return
	}
	m.requestCounter = c
	body := req[mailboxHeaderLen : mailboxHeaderLen+n]
	switch typ := req[5] & 0x0F; {
	case typ == mbxTypeCoE && m.d.esm.state != esc.StateBootstrap:
		// In BOOT only FoE runs (ETG.1000.6, bootstrap mailbox).
		m.coe(body)
	case typ == mbxTypeFoE && m.d.hasFoE():
		m.foe(body)
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
