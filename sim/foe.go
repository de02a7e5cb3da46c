package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// The application controller's FoE server (ETG.1000.6, File access over
// EtherCAT), as a drive's boot loader runs it: in BOOT, over the bootstrap
// mailbox (SII words 0x0014–0x0017), it stores a written file (the
// firmware) and gives a stored file back on a read. Outside BOOT it
// refuses with "bootstrap only" (0x8008), as firmware loaders do.
//
// A write: write request → ack 0; data n → ack n, a packet shorter than
// the mailbox takes ends the file, which replaces the stored one of that
// name. A data packet that repeats the last one (the master lost the ack)
// is acknowledged again and not stored twice; any other packet number is
// an error (0x8005). A read: read request → data 1; ack n → data n+1, the
// ack of the short packet ends it; an unknown name is "not found"
// (0x8001). A new request, an error from the master, or the device
// leaving BOOT ends the transfer in progress without storing anything,
// so a retry starts afresh.

// FoE opcodes and error codes (ETG.1000.6).
const (
	mbxTypeFoE       = 0x04
	foeHeaderLen     = 6
	foeRead          = 1
	foeWrite         = 2
	foeData          = 3
	foeAck           = 4
	foeError         = 5
	foeBusy          = 6
	foeErrNotFound   = 0x8001
	foeErrIllegal    = 0x8004
	foeErrPacket     = 0x8005
	foeErrBootOnly   = 0x8008
	foeMaxFileLength = 16 << 20
	foeErrDiskFull   = 0x8003
)

// flash is a device's non-volatile file store: it outlives power cycles
// (deviceSpec holds it).
type flash struct {
	mu    sync.Mutex
	files map[string][]byte
}

// foeState is the transfer in progress.
type foeState struct {
	op      int    // 0, foeRead or foeWrite
	name    string // the file
	packet  uint32 // write: last packet stored; read: last packet sent
	buf     []byte // write: data so far
	rest    []byte // read: data not sent yet
	last    bool   // read: the packet sent was the short one
	busy    int    // data packets to answer busy (FoEBusy)
	errAt   uint32 // data packet to refuse (FoEErrorAt), 0: none
	errCode uint32
}

// foe serves an FoE message (body starts with the FoE header).
func (m *mailbox) foe(body []byte) {
	f := &m.foeState
	if len(body) < foeHeaderLen {
		m.mailboxError(mbxErrInvalidSize)
		return
	}
	op, field, data := body[0], binary.LittleEndian.Uint32(body[2:]), body[foeHeaderLen:]
	if m.d.esm.state != esc.StateBootstrap {
		m.foeFail(foeErrBootOnly)
		return
	}
	switch {
	case op == foeWrite:
		f.op, f.name, f.packet, f.buf = foeWrite, string(data), 0, f.buf[:0]
		m.foeReply(foeAck, 0, nil)
	case op == foeRead:
		m.d.spec.flash.mu.Lock()
		file, ok := m.d.spec.flash.files[string(data)]
		m.d.spec.flash.mu.Unlock()
		if !ok {
			m.foeFail(foeErrNotFound)
			return
		}
		f.op, f.name, f.packet, f.rest = foeRead, string(data), 0, file
		m.foeSendNext()
	case op == foeData && f.op == foeWrite:
		m.foeData(field, data)
	case op == foeAck && f.op == foeRead && field == f.packet:
		if f.last {
			f.op = 0
			return
		}
		m.foeSendNext()
	case op == foeError:
		f.op = 0 // the master gives up: nothing is stored
	case op == foeAck && f.op == foeRead:
		m.foeFail(foeErrPacket)
	default:
		m.foeFail(foeErrIllegal)
	}
}

// foeData takes data packet n of a write.
func (m *mailbox) foeData(n uint32, data []byte) {
	f := &m.foeState
	switch {
	case n == f.packet && n > 0:
		m.foeReply(foeAck, n, nil) // a repeat: the master lost the ack
		return
	case n != f.packet+1:
		m.foeFail(foeErrPacket)
		return
	case f.busy > 0:
		f.busy--
		m.foeReply(foeBusy, 0, nil) // the master sends the packet again
		return
	case n == f.errAt:
		f.errAt = 0
		m.foeFail(f.errCode)
		return
	case len(f.buf)+len(data) > foeMaxFileLength:
		m.foeFail(foeErrDiskFull)
		return
	}
	f.buf = append(f.buf, data...)
	f.packet = n
	if room := m.d.sms[m.outSM].end - m.d.sms[m.outSM].start - mailboxHeaderLen - foeHeaderLen; len(data) < room {
		fl := m.d.spec.flash
		fl.mu.Lock()
		if fl.files == nil {
			fl.files = map[string][]byte{}
		}
		fl.files[f.name] = slices.Clone(f.buf)
		fl.mu.Unlock()
		f.op = 0
	}
	m.foeReply(foeAck, n, nil)
}

// foeSendNext sends the next data packet of a read: as much as the send
// mailbox takes; a shorter one (possibly empty) is the last.
func (m *mailbox) foeSendNext() {
	f := &m.foeState
	room := m.replyCapacity() - foeHeaderLen
	n := min(len(f.rest), room)
	f.packet++
	f.last = n < room
	m.foeReply(foeData, f.packet, f.rest[:n])
	f.rest = f.rest[n:]
}

// foeFail ends the transfer with an FoE error message.
func (m *mailbox) foeFail(code uint32) {
	m.foeState.op = 0
	m.foeReply(foeError, code, nil)
}

// foeReply queues an FoE message.
func (m *mailbox) foeReply(op uint8, field uint32, data []byte) {
	b := m.resp[mailboxHeaderLen:]
	b[0], b[1] = op, 0
	binary.LittleEndian.PutUint32(b[2:], field)
	n := copy(b[foeHeaderLen:], data)
	m.reply(mbxTypeFoE, foeHeaderLen+n)
}

// resetFoE ends a transfer in progress (the device left BOOT or went to
// INIT); the stored files and the armed faults stay.
func (m *mailbox) resetFoE() {
	m.foeState.op, m.foeState.buf, m.foeState.rest = 0, m.foeState.buf[:0], nil
}

// hasFoE reports whether the device serves FoE: its SII lists the protocol.
func (d *Device) hasFoE() bool {
	return d.mbx != nil && d.spec.flash != nil && d.sii.Header.MailboxProtocols.Has(sii.ProtocolFoE)
}

// File returns a copy of the file name the device stored through FoE, and
// whether it has one.
func (d *Device) File(name string) ([]byte, bool) {
	if d.spec.flash == nil {
		return nil, false
	}
	d.spec.flash.mu.Lock()
	defer d.spec.flash.mu.Unlock()
	b, ok := d.spec.flash.files[name]
	return slices.Clone(b), ok
}

// Files returns the names of the files the device stored through FoE, sorted.
func (d *Device) Files() []string {
	if d.spec.flash == nil {
		return nil
	}
	d.spec.flash.mu.Lock()
	defer d.spec.flash.mu.Unlock()
	return slices.Sorted(maps.Keys(d.spec.flash.files))
}

// FoEBusy makes the device answer the next n FoE data packets of a write
// with busy, as a boot loader erasing flash does; the master must send
// each again.
func (d *Device) FoEBusy(n int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.hasFoE() {
		return fmt.Errorf("sim: %s: FoE busy: %w", d.name, ErrNoFoE)
	}
	d.mbx.foeState.busy = max(n, 0)
	return nil
}

// FoEErrorAt makes the device refuse data packet packet (1 the first) of
// the next FoE write with error code code (e.g. 0x8003 disk full), once.
func (d *Device) FoEErrorAt(packet, code uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.hasFoE() {
		return fmt.Errorf("sim: %s: FoE error: %w", d.name, ErrNoFoE)
	}
	d.mbx.foeState.errAt, d.mbx.foeState.errCode = packet, code
	return nil
}

// ErrNoFoE is matched by the errors of FoE faults on a device without FoE.
var ErrNoFoE = errors.New("sim: device has no FoE")
