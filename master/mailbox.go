package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// Mailbox SyncManager status bit (register 0x0805 + 8·i): the buffer holds
// a message that has not been read yet.
const smStatusMailboxFull = 0x08

// smStatusOffset is the offset of the status byte in a SyncManager block.
const smStatusOffset = 5

var (
	// ErrNoMailbox is returned for a mailbox transfer with a slave that
	// has no mailbox, or no CoE in it.
	ErrNoMailbox = errors.New("master: slave has no CoE mailbox")
	// ErrMailboxInactive is returned for a mailbox transfer with a slave
	// whose mailbox is not running: it is in INIT or BOOT (as far as the
	// master last saw its AL status).
	ErrMailboxInactive = errors.New("master: mailbox not active (slave not in PREOP, SAFEOP or OP)")
	// ErrMailboxTimeout is returned when a slave does not take a mailbox
	// request or does not answer it within Config.StateTimeout.
	ErrMailboxTimeout = errors.New("master: mailbox timeout")
	// ErrUnexpectedResponse is returned when a slave answers an SDO
	// request with something that does not belong to it.
	ErrUnexpectedResponse = errors.New("master: unexpected SDO response")
)

// SDOUpload reads object index:sub from the slave's CoE object dictionary
// (expedited, normal or segmented, whatever the slave chooses). The slave
// must be in PREOP or above. A slave that refuses gives a *coe.AbortError
// with the abort code and its meaning.
//
// Mailbox traffic is acyclic: like the bring-up, it must not overlap with
// Exchange (with a running cycle it goes through the acyclic queue,
// QueueAcyclic); while it runs,
// the cyclic mailbox polling leaves the slave's mailbox alone.
func (m *Master) SDOUpload(ctx context.Context, s *Slave, index uint16, sub uint8) ([]byte, error) {
	return m.sdoUpload(ctx, s, index, sub, false)
}

// SDOUploadComplete reads all sub-indexes of object index at once
// (complete access), starting with sub 0 or 1. Sub-index 0 travels as 16
// bits.
func (m *Master) SDOUploadComplete(ctx context.Context, s *Slave, index uint16, sub uint8) ([]byte, error) {
	return m.sdoUpload(ctx, s, index, sub, true)
}

// SDODownload writes data to object index:sub of the slave's CoE object
// dictionary: expedited up to 4 bytes, normal when the data fits into one
// mailbox message, segmented beyond (the first part travels with the
// initiate request, the rest in download segments with alternating
// toggle). A slave that refuses gives a *coe.AbortError.
func (m *Master) SDODownload(ctx context.Context, s *Slave, index uint16, sub uint8, data []byte) error {
	return m.sdoDownload(ctx, s, index, sub, data, false)
}

// SDODownloadComplete writes all sub-indexes of object index at once
// (complete access), starting with sub 0 or 1. With sub 0, data begins
// with sub-index 0 as 16 bits, as SDOUploadComplete returns it.
func (m *Master) SDODownloadComplete(ctx context.Context, s *Slave, index uint16, sub uint8, data []byte) error {
	return m.sdoDownload(ctx, s, index, sub, data, true)
}

func (m *Master) sdoDownload(ctx context.Context, s *Slave, index uint16, sub uint8, data []byte, complete bool) error {
	mbx, err := m.openMailbox(s)
	if err != nil {
		return err
	}
	defer mbx.close()
	fail := func(err error) error {
		return fmt.Errorf("master: %v: SDO download %#04x:%02x: %w", s, index, sub, err)
	}
	req := coe.SDO{Specifier: coe.RequestInitiateDownload, Index: index, SubIndex: sub, Complete: complete,
		SizeIndicated: true, Size: uint32(len(data)), Data: data}
	room := len(mbx.out) - coe.MailboxHeaderLen - coe.HeaderLen - coe.SDOHeaderLen
	switch {
	case len(data) > 0 && len(data) <= 4 && !complete:
		req.Expedited = true
	case len(data) > room:
		req.Data = data[:room]
	}
	resp, err := mbx.transfer(ctx, &req)
	if err != nil {
		return fail(err)
	}
	if resp.Specifier != coe.ResponseInitiateDownload || resp.Index != index || resp.SubIndex != sub {
		return fail(fmt.Errorf("%w: %+v", ErrUnexpectedResponse, resp))
	}
	rest := data[len(req.Data):]
	if req.Expedited {
		rest = nil
	}
	segment := len(mbx.out) - coe.MailboxHeaderLen - coe.HeaderLen - 1
	toggle := false
	for len(rest) > 0 {
		n := min(len(rest), segment)
		seg := coe.SDO{Specifier: coe.RequestDownloadSegment, Toggle: toggle, Last: n == len(rest), Data: rest[:n]}
		resp, err := mbx.transfer(ctx, &seg)
		if err != nil {
			return fail(err)
		}
		if resp.Specifier != coe.ResponseDownloadSegment || resp.Toggle != toggle {
			mbx.abort(ctx, index, sub, coe.AbortToggle)
			return fail(fmt.Errorf("%w: segment %+v, want toggle %v", ErrUnexpectedResponse, resp, toggle))
		}
		rest = rest[n:]
		toggle = !toggle
	}
	return nil
}

func (m *Master) sdoUpload(ctx context.Context, s *Slave, index uint16, sub uint8, complete bool) ([]byte, error) {
	mbx, err := m.openMailbox(s)
	if err != nil {
		return nil, err
	}
	defer mbx.close()
	fail := func(err error) error {
		return fmt.Errorf("master: %v: SDO upload %#04x:%02x: %w", s, index, sub, err)
	}
	resp, err := mbx.transfer(ctx, &coe.SDO{Specifier: coe.RequestInitiateUpload, Index: index, SubIndex: sub, Complete: complete})
	if err != nil {
		return nil, fail(err)
	}
	if resp.Specifier != coe.ResponseInitiateUpload || resp.Index != index || resp.SubIndex != sub {
		return nil, fail(fmt.Errorf("%w: %+v", ErrUnexpectedResponse, resp))
	}
	if resp.Expedited || !resp.SizeIndicated || uint32(len(resp.Data)) >= resp.Size {
		return append([]byte(nil), resp.Data...), nil
	}
	// Segmented: the rest comes in upload segments with alternating toggle.
	out := make([]byte, 0, min(resp.Size, 1<<16))
	out = append(out, resp.Data...)
	toggle := false
	for {
		seg, err := mbx.transfer(ctx, &coe.SDO{Specifier: coe.RequestUploadSegment, Toggle: toggle})
		if err != nil {
			return nil, fail(err)
		}
		if seg.Specifier != coe.ResponseUploadSegment || seg.Toggle != toggle {
			mbx.abort(ctx, index, sub, coe.AbortToggle)
			return nil, fail(fmt.Errorf("%w: segment %+v, want toggle %v", ErrUnexpectedResponse, seg, toggle))
		}
		out = append(out, seg.Data...)
		if uint32(len(out)) > resp.Size {
			mbx.abort(ctx, index, sub, coe.AbortLengthHigh)
			return nil, fail(fmt.Errorf("%w: %d bytes in segments, announced %d", ErrUnexpectedResponse, len(out), resp.Size))
		}
		if seg.Last {
			break
		}
		toggle = !toggle
	}
	if uint32(len(out)) != resp.Size {
		return nil, fail(fmt.Errorf("%w: %d bytes in segments, announced %d", ErrUnexpectedResponse, len(out), resp.Size))
	}
	return out, nil
}

// mailbox is one slave's standard mailbox for the duration of one SDO
// transfer: buffers the size of its SyncManagers and the request counter.
// The counter runs 1..7 and on from one transfer to the next (kept in the
// Slave): a slave may drop a request that repeats the previous counter as
// a duplicate.
//
// The exchange follows ETG.1000.4/.6: a request is written whole into the
// receive mailbox (SyncManager 0; working counter 0 means the slave has
// not taken the previous one yet, so it is written again); the answer is
// awaited by polling the send mailbox's status register (0x080D, bit 3
// "mailbox full") rather than the event registers, so no AL event mask
// setup is needed, and then read whole from SyncManager 1, which empties
// it. A read whose answer frame is lost after the slave handed the buffer
// over is recovered with the repeat handshake (see repeat). Messages the
// slave sends on its own (emergencies) may come before the answer; they
// are reported and the wait goes on.
type mailbox struct {
	m       *Master
	s       *Slave
	out, in []byte
	counter uint8
}

func (m *Master) openMailbox(s *Slave) (*mailbox, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	if !s.HasMailbox || s.Protocols&sii.ProtocolCoE == 0 || s.Mailbox.ReceiveSize < coe.MailboxHeaderLen+coe.HeaderLen+coe.SDOHeaderLen ||
		s.Mailbox.SendSize < coe.MailboxHeaderLen+coe.HeaderLen+coe.SDOHeaderLen {
		return nil, fmt.Errorf("master: %v: %w", s, ErrNoMailbox)
	}
	if st := s.State(); st != esc.StatePreOp && st != esc.StateSafeOp && st != esc.StateOp {
		return nil, fmt.Errorf("master: %v in %v: %w", s, st, ErrMailboxInactive)
	}
	s.claimMailbox()
	return &mailbox{m: m, s: s, out: make([]byte, s.Mailbox.ReceiveSize), in: make([]byte, s.Mailbox.SendSize), counter: s.mbxCounter}, nil
}

// close ends the transfer: the cyclic polling may read the slave's
// mailbox again.
func (b *mailbox) close() { b.s.releaseMailbox() }

// transfer sends one SDO request and returns the slave's SDO response. An
// abort from the slave becomes a *coe.AbortError, a mailbox error reply a
// *coe.MailboxError; emergencies that arrive meanwhile are logged.
func (b *mailbox) transfer(ctx context.Context, req *coe.SDO) (coe.SDO, error) {
	deadline, err := b.request(ctx, func(out []byte, counter uint8) (int, error) {
		return coe.EncodeMessage(out, counter, true, req)
	})
	if err != nil {
		return coe.SDO{}, err
	}
	msg, err := b.await(ctx, deadline, coe.ServiceSDOResponse)
	if err != nil {
		return coe.SDO{}, err
	}
	if msg.SDO.Specifier == coe.SpecifierAbort {
		return coe.SDO{}, &coe.AbortError{Index: msg.SDO.Index, SubIndex: msg.SDO.SubIndex, Code: msg.SDO.Abort}
	}
	return msg.SDO, nil
}

// request drops a stale message, encodes a request with the next counter
// into b.out and sends it. It returns the deadline for the answer.
func (b *mailbox) request(ctx context.Context, encode func(out []byte, counter uint8) (int, error)) (time.Time, error) {
	deadline := time.Now().Add(b.m.cfg.StateTimeout)
	if err := b.flush(ctx); err != nil {
		return deadline, err
	}
	b.counter = coe.NextCounter(b.counter)
	b.s.mbxCounter = b.counter
	clear(b.out)
	if _, err := encode(b.out, b.counter); err != nil {
		return deadline, err
	}
	return deadline, b.send(ctx, deadline)
}

// await receives mailbox messages until one of the given CoE service
// arrives and returns it (its data aliases b.in until the next receive).
// A mailbox error reply ends the wait with a *coe.MailboxError;
// emergencies are logged, other messages dropped with a warning.
func (b *mailbox) await(ctx context.Context, deadline time.Time, service coe.Service) (coe.Message, error) {
	for {
		msg, err := b.receive(ctx, deadline)
		if err != nil {
			return coe.Message{}, err
		}
		switch {
		case msg.Mailbox.Type == coe.TypeError:
			return coe.Message{}, &coe.MailboxError{Code: msg.MailboxError}
		case msg.Mailbox.Type != coe.TypeCoE:
			b.m.log.Warn("mailbox: ignoring a message of another protocol", "slave", b.s.String(), "type", msg.Mailbox.Type.String())
		case msg.CoE.Service == coe.ServiceEmergency:
			b.logEmergency(msg.Emergency)
		case msg.CoE.Service != service:
			b.m.log.Warn("mailbox: ignoring a CoE message", "slave", b.s.String(), "service", msg.CoE.Service.String())
		default:
			return msg, nil
		}
	}
}

// abort tells the slave that the master gives up a transfer (best effort:
// the slave does not answer an abort).
func (b *mailbox) abort(ctx context.Context, index uint16, sub uint8, code coe.AbortCode) {
	b.counter = coe.NextCounter(b.counter)
	b.s.mbxCounter = b.counter
	clear(b.out)
	if _, err := coe.EncodeMessage(b.out, b.counter, true, &coe.SDO{Specifier: coe.SpecifierAbort, Index: index, SubIndex: sub, Abort: code}); err != nil {
		return
	}
	if err := b.send(ctx, time.Now().Add(b.m.cfg.Timeout)); err != nil {
		b.m.log.Debug("mailbox: could not send SDO abort", "slave", b.s.String(), "err", err)
	}
}

// flush reads and drops a message the slave left in its send mailbox
// before a new request (a late answer or an emergency), so that the next
// message read belongs to the request.
func (b *mailbox) flush(ctx context.Context) error {
	full, err := b.full(ctx)
	if err != nil || !full {
		return err
	}
	if err := b.m.bus.FPRD(ctx, b.s.StationAddress, b.s.Mailbox.SendOffset, b.in); err != nil {
		return fmt.Errorf("read stale mailbox message: %w", err)
	}
	if msg, err := coe.Decode(b.in); err == nil && msg.Mailbox.Type == coe.TypeCoE && msg.CoE.Service == coe.ServiceEmergency {
		b.logEmergency(msg.Emergency)
	} else {
		b.m.log.Debug("mailbox: dropped a stale message", "slave", b.s.String())
	}
	return nil
}

// full reports whether the send mailbox (SyncManager 1) holds a message.
func (b *mailbox) full(ctx context.Context) (bool, error) {
	var st [1]byte
	reg := uint16(esc.RegSyncManager(1)) + smStatusOffset
	if err := b.m.bus.FPRD(ctx, b.s.StationAddress, reg, st[:]); err != nil {
		return false, fmt.Errorf("read mailbox status: %w", err)
	}
	return st[0]&smStatusMailboxFull != 0, nil
}

// send writes b.out into the receive mailbox (SyncManager 0), again while
// the slave has not taken the previous message (working counter 0).
func (b *mailbox) send(ctx context.Context, deadline time.Time) error {
	return writeMailbox(ctx, b.m.bus, b.s.StationAddress, b.s.Mailbox.ReceiveOffset, b.out, deadline)
}

// writeMailbox writes msg into the receive mailbox at offset of the slave
// at station, again while the slave has not taken the previous message
// (working counter 0), until deadline.
func writeMailbox(ctx context.Context, bus *Bus, station, offset uint16, msg []byte, deadline time.Time) error {
	for {
		err := bus.FPWR(ctx, station, offset, msg)
		var wkc *WKCError
		if !errors.As(err, &wkc) || wkc.Got != 0 {
			if err != nil {
				return fmt.Errorf("write mailbox request: %w", err)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("write mailbox request: receive mailbox stays full: %w", ErrMailboxTimeout)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// maxRepeats bounds the repeat requests for one mailbox answer.
const maxRepeats = 3

// receive waits until the send mailbox is full, reads and decodes it. When
// the read of a full mailbox fails (the answer frame was lost after the
// slave had handed the buffer over, so a retry finds it empty), it asks
// the slave to put the message back with a repeat request.
func (b *mailbox) receive(ctx context.Context, deadline time.Time) (coe.Message, error) {
	for repeats := 0; ; repeats++ {
		if err := b.waitFull(ctx, deadline); err != nil {
			return coe.Message{}, err
		}
		err := b.m.bus.FPRD(ctx, b.s.StationAddress, b.s.Mailbox.SendOffset, b.in)
		if err == nil {
			break
		}
		var wkc *WKCError
		lost := errors.Is(err, ErrNoResponse) || errors.As(err, &wkc) && wkc.Got == 0
		if !lost || repeats >= maxRepeats || ctx.Err() != nil {
			return coe.Message{}, fmt.Errorf("read mailbox answer: %w", err)
		}
		b.m.log.Warn("mailbox: answer lost, repeat request", "slave", b.s.String(), "err", err)
		if rerr := b.repeat(ctx, deadline); rerr != nil {
			return coe.Message{}, fmt.Errorf("read mailbox answer: %w (repeat request: %w)", err, rerr)
		}
	}
	msg, err := coe.Decode(b.in)
	if err != nil {
		return coe.Message{}, fmt.Errorf("decode mailbox answer: %w", err)
	}
	return msg, nil
}

// waitFull polls the send mailbox's status until it holds a message
// (bit 3 of 0x080D, "mailbox full").
func (b *mailbox) waitFull(ctx context.Context, deadline time.Time) error {
	for {
		full, err := b.full(ctx)
		if err != nil {
			return err
		}
		if full {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer in %v: %w", b.m.cfg.StateTimeout, ErrMailboxTimeout)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Registers of the send mailbox (SyncManager 1) for the repeat
// handshake: the master toggles the repeat request bit of the activate
// register (0x0806+8·n, bit 1); the slave's application puts its last
// message back into the buffer and toggles the repeat acknowledge bit of
// the PDI control register (0x0807+8·n, bit 1) to match.
const (
	smActivateOffset   = 6
	smPDIControlOffset = 7
	smRepeatAck        = 0x02
)

// repeat runs the repeat handshake on the send mailbox and returns once
// the slave has acknowledged it.
func (b *mailbox) repeat(ctx context.Context, deadline time.Time) error {
	base := uint16(esc.RegSyncManager(1))
	var act [1]byte
	if err := b.m.bus.FPRD(ctx, b.s.StationAddress, base+smActivateOffset, act[:]); err != nil {
		return fmt.Errorf("read SyncManager 1 activate: %w", err)
	}
	act[0] ^= esc.SMActivateRepeat
	want := act[0] & esc.SMActivateRepeat
	if err := b.m.bus.FPWR(ctx, b.s.StationAddress, base+smActivateOffset, act[:]); err != nil {
		return fmt.Errorf("toggle repeat request: %w", err)
	}
	for {
		var pdi [1]byte
		if err := b.m.bus.FPRD(ctx, b.s.StationAddress, base+smPDIControlOffset, pdi[:]); err != nil {
			return fmt.Errorf("read repeat acknowledge: %w", err)
		}
		if pdi[0]&smRepeatAck == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("repeat not acknowledged in %v: %w", b.m.cfg.StateTimeout, ErrMailboxTimeout)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// logEmergency reports an emergency message the slave sent: counted,
// queued for Master.Emergencies and logged.
func (b *mailbox) logEmergency(e coe.Emergency) {
	b.m.noteEmergency(b.s, e)
	b.m.log.Warn("CoE emergency", "slave", b.s.String(), "error_code", fmt.Sprintf("%#04x", e.ErrorCode),
		"error_register", fmt.Sprintf("%#02x", e.ErrorRegister), "data", fmt.Sprintf("% x", e.Data[:]))
}
