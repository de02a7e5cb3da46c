package master

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master/dc"
)

// siiIdentityWord is the first SII word of the identity (vendor, product
// code, revision, serial number: words 0x08–0x0F).
const siiIdentityWord = 0x08

// ReconnectReport tells what Reconnect found and did.
type ReconnectReport struct {
	Position int
	// Identity is the returning device's, read from its SII.
	Identity Identity
	// Replaced reports a device of the same vendor, product code and
	// revision with another serial number than at bring-up: an identical
	// terminal put in for a broken one. It is accepted (the process image
	// fits it); the caller should log it.
	Replaced bool
	// PreviousAddress is the station address the device had when found:
	// 0 after a power cycle, the configured one after a link break only.
	PreviousAddress uint16
	// Addressed reports that the call wrote the configured station
	// address to the device at the position (it may have gone further):
	// after an error too, a device found later at that address in SAFEOP
	// or OP was configured by this call, not one that kept its
	// configuration through the loss.
	Addressed bool
	// Took is the time from the first frame to OP.
	Took time.Duration
	// Cycles is how many cycles the bus ran meanwhile (0 without a
	// running cycle): the reconnect's length in the measure a saturated
	// host does not stretch, since every datagram of it rides in a cycle.
	Cycles uint64
}

// String renders the identity as the logs and errors do.
func (id Identity) String() string {
	return fmt.Sprintf("vendor %#08x product %#08x revision %#08x serial %#08x",
		id.VendorID, id.ProductCode, id.Revision, id.SerialNumber)
}

// sameModel reports equal vendor, product code and revision.
func (id Identity) sameModel(o Identity) bool {
	return id.VendorID == o.VendorID && id.ProductCode == o.ProductCode && id.Revision == o.Revision
}

// Reconnect brings the slave at ring position back into the running
// segment after it lost power or link and came back (station address 0,
// INIT, registers at their reset values), while the cycle keeps
// exchanging the other slaves' process data and carrying Reconnect's
// datagrams (QueueAcyclic):
//
//  1. the slave is looked for by auto-increment address (APRD of the ESC
//     type register; absent: an error matching ErrSlaveAbsent). A device
//     that answers with the slave's station address and is in SAFEOP or
//     OP kept its power and its configuration (it was behind a break in
//     the line, or its cable was bumped): Reconnect leaves it alone and
//     returns an error matching ErrStillConfigured (Recover takes it from
//     there). One in INIT or PREOP with that address is a reconnect cut
//     short and is configured again;
//  2. it is identified before anything is configured: vendor, product
//     code, revision and serial number from its SII (words 0x08–0x0F,
//     read through the EEPROM interface by position) and its station alias
//     (0x0012). Another model or alias than the slave recorded at bring-up
//     gives an *IdentityMismatchError and nothing is configured. The same
//     model with another serial number is accepted: ReconnectReport.Replaced;
//  3. it gets its station address back (APWR 0x0010), is taken to INIT
//     with any error acknowledged, and its FMMUs and SyncManagers cleared;
//  4. INIT→PREOP with the mailbox SyncManagers; for a slave whose PDO
//     assignment came over CoE, Config.PDO's assignment is written again
//     or the slave's is read, and must give the SyncManager sizes mapped
//     at bring-up (else *PDOLayoutError, slave left in PREOP: the process
//     image cannot change under a running cycle);
//  5. with distributed clocks set up (Config.DC) and the slave among the
//     clocks: all clocks latch a frame (BWR 0x0900, which changes no
//     clock), the slave's delay and offset are computed with dc.Compute and
//     only its 0x0920/0x0928 written, the offset aligned with the
//     reference clock's running system time; its SYNC unit is started on
//     the grid of the others (same cycle time and shift, SyncSetup);
//  6. PREOP→SAFEOP with the process-data SyncManagers and FMMUs exactly as
//     mapped at bring-up, then SAFEOP→OP: the running cycle feeds it valid
//     outputs meanwhile (without a running cycle, Reconnect runs cyclic
//     frames itself while it waits).
//
// Every datagram goes through the Bus, so through the cycle when it owns
// the link.
// Reconnect does not change the Slave's recorded description; its AL
// status is recorded as usual.
func (m *Master) Reconnect(ctx context.Context, position int) (ReconnectReport, error) {
	start, cycles := time.Now(), m.counters.cycles.Load()
	rep := ReconnectReport{Position: position}
	if err := m.usable(); err != nil {
		return rep, err
	}
	if position < 0 || position >= len(m.slaves) {
		return rep, fmt.Errorf("master: reconnect position %d: the segment had %d slaves at bring-up", position, len(m.slaves))
	}
	if m.image == nil {
		return rep, fmt.Errorf("master: reconnect position %d: %w", position, ErrNotMapped)
	}
	s := m.slaves[position]

	// 1. Is anything there?
	if err := m.reconnectPresent(ctx, s, &rep); err != nil {
		return rep, err
	}

	// 2. Is it the same device?
	if err := m.reconnectIdentify(ctx, s, &rep); err != nil {
		return rep, err
	}

	// 3. Address, INIT, a clean register set.
	if err := m.reconnectReset(ctx, s, &rep); err != nil {
		return rep, err
	}

	// 4. PREOP, and the PDO layout checked.
	if err := m.reconnectPreOp(ctx, s); err != nil {
		return rep, err
	}

	// 5. Distributed clocks.
	if err := m.reconnectDC(ctx, s); err != nil {
		return rep, fmt.Errorf("master: reconnect %v: %w", s, err)
	}

	// 6. SAFEOP and OP.
	if err := m.reconnectStep(ctx, func() error { return m.requestState(ctx, []*Slave{s}, esc.StateOp) }); err != nil {
		return rep, fmt.Errorf("master: reconnect: %w", err)
	}
	rep.Took, rep.Cycles = time.Since(start), m.counters.cycles.Load()-cycles
	m.log.Info("reconnect: slave back in OP", "slave", s.String(), "replaced", rep.Replaced,
		"previous_address", fmt.Sprintf("%#04x", rep.PreviousAddress), "took", rep.Took.Round(time.Microsecond).String(),
		"cycles", rep.Cycles)
	return rep, nil
}

// reconnectPresent is step 1 of Reconnect: it reads the station address
// at the slave's ring position into rep.PreviousAddress, and refuses
// (ErrStillConfigured) a slave that kept its address and is still in
// SAFEOP or OP.
func (m *Master) reconnectPresent(ctx context.Context, s *Slave, rep *ReconnectReport) error {
	position := rep.Position
	var reg [2]byte
	if err := m.reconnectStep(ctx, func() error { return m.readAtPosition(ctx, position, esc.RegStationAddress, reg[:]) }); err != nil {
		return fmt.Errorf("master: reconnect position %d: %w", position, err)
	}
	rep.PreviousAddress = binary.LittleEndian.Uint16(reg[:])
	if rep.PreviousAddress != s.StationAddress {
		return nil
	}
	var al [2]byte
	if err := m.reconnectStep(ctx, func() error { return m.readAtPosition(ctx, position, esc.RegALStatus, al[:]) }); err != nil {
		return fmt.Errorf("master: reconnect position %d: read AL status: %w", position, err)
	}
	if st := esc.DecodeALStatus(al[:]); st.State == esc.StateSafeOp || st.State == esc.StateOp {
		return fmt.Errorf("master: reconnect %v: in %v: %w", s, st, ErrStillConfigured)
	}
	return nil
}

// reconnectIdentify is step 2 of Reconnect: it reads the identity and
// alias at the slave's ring position into rep.Identity and checks them
// against the configuration (under its revision policy) or, without one,
// against the slave found at bring-up (*IdentityMismatchError). Another
// serial number of the same model sets rep.Replaced.
func (m *Master) reconnectIdentify(ctx context.Context, s *Slave, rep *ReconnectReport) error {
	position := rep.Position
	var id Identity
	var alias uint16
	err := m.reconnectStep(ctx, func() (err error) { id, alias, err = m.identityAt(ctx, position); return err })
	if err != nil {
		return fmt.Errorf("master: reconnect position %d: %w", position, err)
	}
	rep.Identity = id
	if e, ok := m.expected(position); ok {
		// The configuration decides, under its revision policy; the
		// previous port is not read again (the segment around the slave
		// kept running).
		found := &Slave{Position: position, Identity: id, Alias: alias, Name: "another device", Parent: s.Parent}
		e.PreviousPort = ""
		if errs := e.check(found, -1); len(errs) > 0 {
			return &IdentityMismatchError{Position: position, Want: s.Identity, Got: id, WantAlias: s.Alias, GotAlias: alias,
				Topology: errs[0].(*TopologyError)}
		}
	} else if !id.sameModel(s.Identity) || alias != s.Alias {
		return &IdentityMismatchError{Position: position, Want: s.Identity, Got: id, WantAlias: s.Alias, GotAlias: alias}
	}
	if id.SerialNumber != s.Identity.SerialNumber {
		rep.Replaced = true
		m.log.Warn("reconnect: identical device with another serial number", "slave", s.String(),
			"serial_was", fmt.Sprintf("%#08x", s.Identity.SerialNumber), "serial_now", fmt.Sprintf("%#08x", id.SerialNumber))
	}
	return nil
}

// reconnectReset is step 3 of Reconnect: the SII EEPROM given to the PDI,
// the station address written back (rep.Addressed set once the write was
// sent), INIT, and the FMMUs and SyncManagers cleared.
func (m *Master) reconnectReset(ctx context.Context, s *Slave, rep *ReconnectReport) error {
	position := rep.Position
	if err := m.reconnectStep(ctx, func() error { return m.bus.APWR(ctx, position, uint16(esc.RegSIIConfig), []byte{siiAccessPDI}) }); err != nil {
		return fmt.Errorf("master: reconnect %v: assign SII EEPROM to PDI: %w", s, err)
	}
	var reg [2]byte
	binary.LittleEndian.PutUint16(reg[:], s.StationAddress)
	err := m.reconnectStep(ctx, func() error { return m.bus.APWR(ctx, position, uint16(esc.RegStationAddress), reg[:]) })
	// Even on an error: the write may have reached the device and only
	// its answer been lost.
	rep.Addressed = true
	if err != nil {
		return fmt.Errorf("master: reconnect %v: set station address: %w", s, err)
	}
	if err := m.reconnectStep(ctx, func() error { return m.requestState(ctx, []*Slave{s}, esc.StateInit) }); err != nil {
		return fmt.Errorf("master: reconnect: %w", err)
	}
	zero := make([]byte, max(fmmuArea, syncManagerArea))
	if err := m.reconnectStep(ctx, func() error { return m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegFMMU0), zero[:fmmuArea]) }); err != nil {
		return fmt.Errorf("master: reconnect %v: clear FMMUs: %w", s, err)
	}
	if err := m.reconnectStep(ctx, func() error {
		return m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegSyncManager0), zero[:syncManagerArea])
	}); err != nil {
		return fmt.Errorf("master: reconnect %v: clear SyncManagers: %w", s, err)
	}
	return nil
}

// reconnectPreOp is step 4 of Reconnect: PREOP, the slave's PREOP startup
// commands run again, and its PDO layout checked against the one mapped
// at bring-up.
func (m *Master) reconnectPreOp(ctx context.Context, s *Slave) error {
	if err := m.reconnectStep(ctx, func() error { return m.requestState(ctx, []*Slave{s}, esc.StatePreOp) }); err != nil {
		return fmt.Errorf("master: reconnect: %w", err)
	}
	if err := m.reconnectStep(ctx, func() error { s.preOpStartup = false; return m.runPreOpStartup(ctx, s) }); err != nil {
		return fmt.Errorf("master: reconnect: %w", err)
	}
	return m.checkPDOLayout(ctx, s)
}

// reconnectStep runs one step of Reconnect (f) and runs it again when its
// frames went unanswered (ErrNoResponse) while the running cycle ran fewer
// cycles than the bus's tries of one frame: at least one try then waited
// out its time in the acyclic queue without the cycle carrying it — a host
// that starved the cycle, not a frame the segment lost (a datagram the
// cycle carries is answered or lost within that cycle, so a frame lost on
// every try spans as many cycles). The step's bound is so in cycles the bus
// ran, with Config.StateTimeout as the backstop for a cycle that stopped.
// Without a running cycle it is f.
func (m *Master) reconnectStep(ctx context.Context, f func() error) error {
	tries := uint64(max(m.cfg.Retries, 0) + 1)
	backstop := time.Now().Add(m.cfg.StateTimeout)
	for {
		c0 := m.counters.cycles.Load()
		err := f()
		ran := m.counters.cycles.Load() - c0
		if err == nil || !errors.Is(err, ErrNoResponse) || !m.queued() || ran >= tries ||
			ctx.Err() != nil || time.Now().After(backstop) {
			return err
		}
		m.log.Debug("reconnect: step unanswered while the cycle ran too few cycles to carry it; again", "cycles", ran, "err", err)
	}
}

// readAtPosition reads register reg of the slave at ring position by
// auto-increment address; nothing answering (working counter 0) is
// ErrSlaveAbsent.
func (m *Master) readAtPosition(ctx context.Context, position int, reg esc.Register, buf []byte) error {
	ok, err := answered(m.bus.APRD(ctx, position, uint16(reg), buf))
	switch {
	case err != nil:
		return err
	case !ok:
		return ErrSlaveAbsent
	}
	return nil
}

// identityAt reads the identity from the SII of the slave at position and
// its station alias, addressing it by position: nothing but the EEPROM
// interface is written (and the EEPROM assigned to ECAT if the PDI held it).
func (m *Master) identityAt(ctx context.Context, position int) (Identity, uint16, error) {
	var reg [2]byte
	if err := m.bus.APRD(ctx, position, uint16(esc.RegSIIConfig), reg[:1]); err != nil {
		return Identity{}, 0, fmt.Errorf("read SII EEPROM assignment: %w", err)
	}
	if reg[0]&siiAccessPDI != 0 {
		if err := m.bus.APWR(ctx, position, uint16(esc.RegSIIConfig), []byte{0}); err != nil {
			return Identity{}, 0, fmt.Errorf("assign SII EEPROM to ECAT: %w", err)
		}
	}
	r, err := newEEPROMReaderAt(ctx, m.bus, position, m.cfg.SIITimeout, m.cfg.Retries)
	if err != nil {
		return Identity{}, 0, err
	}
	var words [16]byte
	if err := r.ReadWords(siiIdentityWord, words[:]); err != nil {
		return Identity{}, 0, fmt.Errorf("read SII identity: %w", err)
	}
	le := binary.LittleEndian
	id := Identity{VendorID: le.Uint32(words[0:]), ProductCode: le.Uint32(words[4:]),
		Revision: le.Uint32(words[8:]), SerialNumber: le.Uint32(words[12:])}
	if err := m.bus.APRD(ctx, position, uint16(esc.RegStationAlias), reg[:]); err != nil {
		return Identity{}, 0, fmt.Errorf("read station alias: %w", err)
	}
	return id, le.Uint16(reg[:]), nil
}

// checkPDOLayout settles the returning slave's PDO assignment as bring-up
// did (Config.PDO written again, or the slave's read over CoE) on a
// stand-in Slave, so the recorded one does not change, and compares the
// SyncManager sizes with the mapped ones. An SII assignment cannot differ
// for the same model.
func (m *Master) checkPDOLayout(ctx context.Context, s *Slave) error {
	if s.PDOSource == PDOSourceSII || s.PDOSource == "" || !hasCoE(s) {
		return nil
	}
	// The transfers go through the stand-in: the recorded slave's mailbox
	// is the one the cyclic polling must leave alone meanwhile.
	s.claimMailbox()
	defer s.releaseMailbox()
	shadow := &Slave{Position: s.Position, StationAddress: s.StationAddress, Alias: s.Alias, Identity: s.Identity,
		Name: s.Name, OrderCode: s.OrderCode, ESC: s.ESC, DC: s.DC, Mailbox: s.Mailbox, HasMailbox: s.HasMailbox,
		Protocols: s.Protocols, SII: s.SII, SyncManagers: append([]ProcessDataSM(nil), s.SyncManagers...),
		mbxCounter: s.mbxCounter, Parent: s.Parent}
	shadow.setStatus(s.Status(), s.StatusCode())
	configs, err := pdoConfigs(m.cfg.PDO, m.slaves)
	if err != nil {
		return err
	}
	if c, ok := configs[s.Position]; ok {
		err = m.writePDOConfig(ctx, shadow, c)
	} else {
		var pdos []PDO
		pdos, err = m.uploadAssignment(ctx, shadow)
		if err == nil {
			shadow.setPDOs(pdos, PDOSourceCoE)
		}
	}
	s.mbxCounter = shadow.mbxCounter
	if err != nil {
		return fmt.Errorf("master: reconnect %v: PDO assignment: %w", s, err)
	}
	for i, sm := range s.SyncManagers {
		if got := shadow.SyncManagers[i].Bits; got != sm.Bits {
			return &PDOLayoutError{Position: s.Position, SM: sm.Index, WantBits: sm.Bits, GotBits: got}
		}
	}
	return nil
}

// reconnectDC sets the returning slave's clock and SYNC unit, when
// bring-up made it one of the distributed clocks.
func (m *Master) reconnectDC(ctx context.Context, s *Slave) error {
	if !m.dcDone {
		return nil
	}
	var stored *DCClock
	for i := range m.dc.Clocks {
		if m.dc.Clocks[i].Slave == s {
			stored = &m.dc.Clocks[i]
		}
	}
	if stored == nil {
		return nil
	}
	var zero [4]byte
	if err := m.bus.BWR(ctx, uint16(esc.RegDCRecvTimePort0), zero[:], AnyWKC); err != nil {
		return fmt.Errorf("latch DC receive times: %w", err)
	}
	clocks, err := m.readDCTimes(ctx)
	if err != nil {
		return err
	}
	// dc.Compute with latch system time 0 puts every clock on a common
	// base; the anchor's stored offset moves that base onto the system
	// time the running clocks keep.
	results, err := dc.Compute(clocks, 0)
	if err != nil {
		return fmt.Errorf("distributed clocks: %w", err)
	}
	var anchor *DCClock
	for i := range m.dc.Clocks {
		c := &m.dc.Clocks[i]
		if c.Slave != s && clocks[c.Slave.Position].SystemTime && (anchor == nil || c.Slave == m.dc.Reference) {
			anchor = c
		}
	}
	if anchor == nil {
		return errors.New("no other clock with a system time to align with")
	}
	r := results[s.Position]
	offset := r.Offset - results[anchor.Slave.Position].Offset + anchor.Offset
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], offset)
	if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegDCSystemOffset), buf[:8]); err != nil {
		return fmt.Errorf("write DC system time offset: %w", err)
	}
	binary.LittleEndian.PutUint32(buf[:], r.Delay)
	if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegDCSystemDelay), buf[:4]); err != nil {
		return fmt.Errorf("write DC system time delay: %w", err)
	}
	m.log.Debug("reconnect: clock set", "slave", s.String(), "delay", r.Delay, "offset", offset,
		"delay_at_bringup", stored.Delay, "aligned_with", anchor.Slave.String())
	for _, ss := range m.sync.Slaves {
		if ss.Slave != s {
			continue
		}
		opts := SyncOptions{Sync0: m.sync.Sync0, Sync0Shift: m.sync.Sync0Shift, Sync1: m.sync.Sync1, StartDelay: DefaultSyncStartDelay}
		if m.cfg.DC != nil && m.cfg.DC.StartDelay > 0 {
			opts.StartDelay = m.cfg.DC.StartDelay
		}
		start, err := m.configureSyncOf(ctx, s, opts, m.sync.Activation)
		if err != nil {
			return fmt.Errorf("configure SYNC: %w", err)
		}
		m.log.Debug("reconnect: SYNC started", "slave", s.String(), "start", start)
	}
	return nil
}
