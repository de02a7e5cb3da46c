package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/foe"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// ErrNoFoE is returned for an FoE transfer with a slave whose SII does not
// list FoE among its mailbox protocols.
var ErrNoFoE = errors.New("master: slave has no FoE")

// ErrNoBootstrap is returned by EnterBoot for a slave without a bootstrap
// mailbox (SII words 0x0014–0x0017 empty).
var ErrNoBootstrap = errors.New("master: slave has no bootstrap mailbox")

// foeBusyPause is the pause before sending a data packet again that a
// slave answered busy.
const foeBusyPause = time.Millisecond

// EnterBoot takes slave s to BOOT for a firmware update: to INIT, its
// mailbox SyncManagers set to the bootstrap mailbox of its SII (words
// 0x0014–0x0017, read from the EEPROM first: a slave without one is
// refused with ErrNoBootstrap before its state is touched), then INIT→BOOT (ETG.1000.6:
// BOOT is entered from INIT only; a slave whose SyncManagers do not match
// refuses with AL status code 0x0015). RequestSlaveState to INIT leaves
// BOOT again; the way up to PREOP sets the standard mailbox.
func (m *Master) EnterBoot(ctx context.Context, s *Slave) error {
	// What the SII says is checked before the slave's state is touched:
	// a slave without a bootstrap mailbox stays where it is (in OP under
	// a running cycle).
	mb, err := m.BootstrapMailbox(ctx, s)
	if err != nil {
		return err
	}
	if err := m.RequestSlaveState(ctx, s, esc.StateInit); err != nil {
		return err
	}
	var b [2 * esc.SyncManagerLen]byte
	esc.SyncManager{PhysicalStart: mb.ReceiveOffset, Length: mb.ReceiveSize,
		Control: mailboxReceiveControl, Activate: esc.SMActivateOn}.Encode(b[:])
	esc.SyncManager{PhysicalStart: mb.SendOffset, Length: mb.SendSize,
		Control: mailboxSendControl, Activate: esc.SMActivateOn}.Encode(b[esc.SyncManagerLen:])
	if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegSyncManager(0)), b[:]); err != nil {
		return fmt.Errorf("master: %v: configure bootstrap mailbox: %w", s, err)
	}
	return m.RequestSlaveState(ctx, s, esc.StateBootstrap)
}

// BootstrapMailbox returns the bootstrap mailbox of s as its SII gives it
// (words 0x0014–0x0017, read from the EEPROM now, which leaves the slave's
// state alone), or an error matching ErrNoBootstrap when it has none.
func (m *Master) BootstrapMailbox(ctx context.Context, s *Slave) (sii.Mailbox, error) {
	if !s.HasMailbox {
		return sii.Mailbox{}, fmt.Errorf("master: %v: %w", s, ErrNoBootstrap)
	}
	var words [16]byte // 0x0010–0x0017: the bootstrap mailbox is words 0x0014–0x0017
	if err := m.ReadEEPROMAt(ctx, s, 0x10, words[:]); err != nil {
		return sii.Mailbox{}, fmt.Errorf("master: %v: read bootstrap mailbox: %w", s, err)
	}
	mb := decodeBootstrap(words[8:])
	if mb.ReceiveSize == 0 || mb.SendSize == 0 {
		return sii.Mailbox{}, fmt.Errorf("master: %v: %w", s, ErrNoBootstrap)
	}
	return mb, nil
}

// decodeBootstrap reads the bootstrap mailbox from SII words 0x0014–0x0017
// (receive offset and size, send offset and size).
func decodeBootstrap(b []byte) sii.Mailbox {
	u := func(i int) uint16 { return uint16(b[i]) | uint16(b[i+1])<<8 }
	return sii.Mailbox{ReceiveOffset: u(0), ReceiveSize: u(2), SendOffset: u(4), SendSize: u(6)}
}

// FoEWrite writes data to slave s as file name over FoE (ETG.1000.6),
// with password (0 for none): a write request, then data packets as large
// as the slave's receive mailbox takes, each acknowledged; a packet
// shorter than that ends the file (an empty one if data fills the last
// exactly). A packet the slave answers busy is sent again. progress, if
// not nil, is called after each acknowledged packet with the bytes done
// and the total. The slave must be in BOOT (firmware, over the bootstrap
// mailbox; see EnterBoot) or in PREOP or above.
//
// An error of the slave is a *foe.Error; when the transfer ends on the
// master's side (ctx cancelled, a timeout, an unexpected answer) the slave
// is sent an FoE error so that it drops the partial file, and a new
// FoEWrite starts afresh.
func (m *Master) FoEWrite(ctx context.Context, s *Slave, name string, password uint32, data []byte, progress func(done, total int)) error {
	b, err := m.openFoE(ctx, s)
	if err != nil {
		return err
	}
	defer b.close()
	fail := func(err error) error {
		b.abortFoE(ctx, err)
		return fmt.Errorf("master: %v: FoE write %q: %w", s, name, err)
	}
	resp, err := b.exchangeFoE(ctx, foe.Message{Op: foe.OpWrite, Password: password, Name: name})
	if err != nil {
		return fail(err)
	}
	if resp.Op != foe.OpAck || resp.Packet != 0 {
		return fail(fmt.Errorf("%w: %v %d to the write request", ErrUnexpectedFoE, resp.Op, resp.Packet))
	}
	room := len(b.out) - foe.Overhead
	done := 0
	for packet := uint32(1); ; packet++ {
		n := min(room, len(data)-done)
		msg := foe.Message{Op: foe.OpData, Packet: packet, Data: data[done : done+n]}
		for {
			resp, err = b.exchangeFoE(ctx, msg)
			if err != nil {
				return fail(err)
			}
			if resp.Op != foe.OpBusy {
				break
			}
			if err := sleep(ctx, foeBusyPause); err != nil {
				return fail(err)
			}
		}
		if resp.Op != foe.OpAck || resp.Packet != packet {
			return fail(fmt.Errorf("%w: %v %d to data packet %d", ErrUnexpectedFoE, resp.Op, resp.Packet, packet))
		}
		done += n
		if progress != nil {
			progress(done, len(data))
		}
		if n < room {
			return nil
		}
	}
}

// FoERead reads file name from slave s over FoE (ETG.1000.6), with
// password (0 for none): a read request, then the slave's data packets,
// each acknowledged, up to the one shorter than its send mailbox takes.
// The slave must be in BOOT or in PREOP or above, as for FoEWrite. An
// error of the slave (such as not found, 0x8001) is a *foe.Error.
func (m *Master) FoERead(ctx context.Context, s *Slave, name string, password uint32) ([]byte, error) {
	b, err := m.openFoE(ctx, s)
	if err != nil {
		return nil, err
	}
	defer b.close()
	fail := func(err error) error {
		b.abortFoE(ctx, err)
		return fmt.Errorf("master: %v: FoE read %q: %w", s, name, err)
	}
	room := len(b.in) - foe.Overhead
	var out []byte
	msg := foe.Message{Op: foe.OpRead, Password: password, Name: name}
	for packet := uint32(1); ; packet++ {
		resp, err := b.exchangeFoE(ctx, msg)
		if err != nil {
			return nil, fail(err)
		}
		if resp.Op != foe.OpData || resp.Packet != packet {
			return nil, fail(fmt.Errorf("%w: %v %d, want data packet %d", ErrUnexpectedFoE, resp.Op, resp.Packet, packet))
		}
		out = append(out, resp.Data...)
		msg = foe.Message{Op: foe.OpAck, Packet: packet}
		if len(resp.Data) < room {
			// The last packet: acknowledge it, nothing follows.
			if err := b.sendFoE(ctx, msg); err != nil {
				return nil, fail(err)
			}
			return out, nil
		}
	}
}

// ErrUnexpectedFoE is returned when a slave answers an FoE message with
// one that does not belong to the transfer.
var ErrUnexpectedFoE = errors.New("master: unexpected FoE answer")

// foeMailbox is a mailbox for FoE: the SyncManagers as they are set on
// the slave now (the bootstrap mailbox in BOOT, the standard one above).
type foeMailbox struct {
	*mailbox
	receive, send uint16 // physical start of SM0 (master to slave) and SM1
}

// openFoE checks that s can take an FoE transfer and sets up its mailbox
// from the SyncManager registers.
func (m *Master) openFoE(ctx context.Context, s *Slave) (*foeMailbox, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	if !s.HasMailbox || s.Protocols&sii.ProtocolFoE == 0 {
		return nil, fmt.Errorf("master: %v: %w", s, ErrNoFoE)
	}
	switch s.State() {
	case esc.StateBootstrap, esc.StatePreOp, esc.StateSafeOp, esc.StateOp:
	default:
		return nil, fmt.Errorf("master: %v in %v: %w", s, s.State(), ErrMailboxInactive)
	}
	var regs [2 * esc.SyncManagerLen]byte
	if err := m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegSyncManager(0)), regs[:]); err != nil {
		return nil, fmt.Errorf("master: %v: read mailbox SyncManagers: %w", s, err)
	}
	rx, tx := esc.DecodeSyncManager(regs[:]), esc.DecodeSyncManager(regs[esc.SyncManagerLen:])
	if !rx.Enabled() || !tx.Enabled() || int(rx.Length) <= foe.Overhead || int(tx.Length) <= foe.Overhead {
		return nil, fmt.Errorf("master: %v: mailbox SyncManagers not set up (SM0 %d bytes, SM1 %d): %w",
			s, rx.Length, tx.Length, ErrMailboxInactive)
	}
	s.claimMailbox()
	return &foeMailbox{
		mailbox: &mailbox{m: m, s: s, out: make([]byte, rx.Length), in: make([]byte, tx.Length), counter: s.mbxCounter},
		receive: rx.PhysicalStart, send: tx.PhysicalStart,
	}, nil
}

// exchangeFoE sends msg and returns the slave's FoE answer; an FoE error
// message becomes a *foe.Error, a mailbox error reply a *coe.MailboxError.
// Emergencies that arrive meanwhile are logged.
func (b *foeMailbox) exchangeFoE(ctx context.Context, msg foe.Message) (foe.Message, error) {
	deadline := time.Now().Add(b.m.cfg.StateTimeout)
	if err := b.flushFoE(ctx); err != nil {
		return foe.Message{}, err
	}
	if err := b.sendFoE(ctx, msg); err != nil {
		return foe.Message{}, err
	}
	for {
		if err := b.receiveFoE(ctx, deadline); err != nil {
			return foe.Message{}, err
		}
		mh, err := coe.DecodeMailboxHeader(b.in)
		if err != nil {
			return foe.Message{}, err
		}
		switch mh.Type {
		case coe.TypeFoE:
			resp, err := foe.Decode(b.in)
			if err != nil {
				return foe.Message{}, err
			}
			if resp.Op == foe.OpError {
				return foe.Message{}, &foe.Error{Code: resp.Code, Text: string(resp.Data)}
			}
			return resp, nil
		case coe.TypeError, coe.TypeCoE:
			cm, err := coe.Decode(b.in)
			switch {
			case err != nil:
				return foe.Message{}, fmt.Errorf("decode mailbox answer: %w", err)
			case mh.Type == coe.TypeError:
				return foe.Message{}, &coe.MailboxError{Code: cm.MailboxError}
			case cm.CoE.Service == coe.ServiceEmergency:
				b.logEmergency(cm.Emergency)
				continue
			}
		}
		b.m.log.Warn("mailbox: ignoring a message during FoE", "slave", b.s.String(), "type", mh.Type.String())
	}
}

// sendFoE encodes msg with the next counter and writes it into the
// receive mailbox, again while the slave has not taken the previous one.
func (b *foeMailbox) sendFoE(ctx context.Context, msg foe.Message) error {
	b.counter = coe.NextCounter(b.counter)
	b.s.mbxCounter = b.counter
	clear(b.out)
	if _, err := foe.Encode(b.out, b.counter, msg); err != nil {
		return err
	}
	return writeMailbox(ctx, b.m.bus, b.s.StationAddress, b.receive, b.out, time.Now().Add(b.m.cfg.StateTimeout))
}

// receiveFoE waits for the send mailbox to fill and reads it into b.in; a
// lost answer is asked for again with the repeat handshake.
func (b *foeMailbox) receiveFoE(ctx context.Context, deadline time.Time) error {
	for repeats := 0; ; repeats++ {
		if err := b.waitFull(ctx, deadline); err != nil {
			return err
		}
		err := b.m.bus.FPRD(ctx, b.s.StationAddress, b.send, b.in)
		if err == nil {
			return nil
		}
		var wkc *WKCError
		lost := errors.Is(err, ErrNoResponse) || errors.As(err, &wkc) && wkc.Got == 0
		if !lost || repeats >= maxRepeats || ctx.Err() != nil {
			return fmt.Errorf("read mailbox answer: %w", err)
		}
		if rerr := b.repeat(ctx, deadline); rerr != nil {
			return fmt.Errorf("read mailbox answer: %w (repeat request: %w)", err, rerr)
		}
	}
}

// flushFoE drops a message left in the send mailbox (a late answer of an
// interrupted transfer), so that the next one read answers the request.
func (b *foeMailbox) flushFoE(ctx context.Context) error {
	full, err := b.full(ctx)
	if err != nil || !full {
		return err
	}
	if err := b.m.bus.FPRD(ctx, b.s.StationAddress, b.send, b.in); err != nil {
		return fmt.Errorf("read stale mailbox message: %w", err)
	}
	b.m.log.Debug("mailbox: dropped a stale message before FoE", "slave", b.s.String())
	return nil
}

// abortFoE tells the slave that the master gives up the transfer (best
// effort, even when ctx is done): an FoE error message, not answered. A
// transfer the slave ended itself (a *foe.Error) needs none.
func (b *foeMailbox) abortFoE(ctx context.Context, cause error) {
	if _, ok := errors.AsType[*foe.Error](cause); ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.m.cfg.Timeout*time.Duration(b.m.cfg.Retries+1))
	defer cancel()
	if err := b.sendFoE(ctx, foe.Message{Op: foe.OpError, Code: foe.ErrNotDefined, Data: []byte("master aborted")}); err != nil {
		b.m.log.Debug("mailbox: could not send FoE error", "slave", b.s.String(), "err", err)
	}
}
