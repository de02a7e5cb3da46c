package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// Device is one simulated EtherCAT device: an ESC (registers, process RAM,
// SyncManagers, FMMUs, SII EEPROM interface, distributed clock) and, for
// devices that have one, the application controller behind it (state
// machine rules, mailbox with CoE, process data).
//
// A Device belongs to at most one [Segment]; its accessors may be called
// from any goroutine while the segment serves frames.
type Device struct {
	mu  *sync.Mutex // the segment's, or own until the device joins one
	own sync.Mutex

	name  string      // model name, e.g. "EL2004"
	sii   *sii.Device // the parsed EEPROM image
	chip  chip
	mem   *memory
	nfmmu int
	nsm   int
	hasDC bool

	eeprom eepromInterface
	esm    stateMachine
	clock  clock
	sync   syncUnit // the cyclic unit (SYNC0/SYNC1), on devices with DC
	sms    [16]syncManager
	win    [16]fmmuWindow
	nwin   int
	mbx    *mailbox
	// mbxWake says the mailbox may have work on the next frame: set by
	// every event that can give it some (a request written, the send
	// mailbox read, SyncManager or state changes, a queued message),
	// cleared when it is idle, so that a quiet mailbox costs nothing per
	// frame.
	mbxWake bool
	wd      pdWatchdog
	pd      processData
	app     application // the device's own application (a drive), or nil
	seg     *Segment    // the segment the device is in, or nil

	downPort int  // the port that leads to the next device
	hasNext  bool // a device follows on downPort, powered
	off      bool // the device has lost power (Faults.Disappear)
	ctx      frameContext
	spec     deviceSpec // what the device was built from, for a power cycle
	// rng draws the device's times (firmware, EEPROM) from their spans;
	// nil takes the typical value of each (a segment without WithSeed).
	rng *rand.Rand
	// note says how the device's profile was chosen when it is not the
	// one of its exact identity (an unknown revision), else "".
	note string
}

// deviceSpec is what building a device needs beyond its SII image.
type deviceSpec struct {
	name         string
	chip         chip
	ports        uint8 // port descriptor; 0 keeps the chip's
	esmDelay     int   // frames an application controller takes for a state change, framed
	mailboxDelay int   // frames it takes to answer a mailbox request, framed
	fw           firmware
	// siiExtraUntil is the state from which the chip's siiBelowSafeOp
	// bits are clear (0: SAFEOP; StateInit: never set).
	siiExtraUntil esc.ALState
	objects       func(*objectDictionary)
	analog        analogRange
	// app, if set, builds the device's application (see application).
	app func(*Device) application
	// flash holds the files written through FoE (set by newDevice).
	flash *flash
	// notes say what the description the device was built from (an ESI)
	// holds that it does not honour; see Device.Notes.
	notes []string
}

// Defaults applied when a segment option does not say otherwise.
const (
	siiTimeBased        = -1 // busy frames: the chip's SII timing decides
	defaultESMDelay     = 1
	defaultMailboxDelay = 2
)

// newDevice builds a device from its SII image and spec.
func newDevice(image []byte, spec deviceSpec) (*Device, error) {
	d := &Device{}
	d.mu = &d.own
	d.downPort = 1
	if spec.flash == nil {
		spec.flash = &flash{} // the device's own, kept through power cycles
	}
	if err := d.powerUp(image, spec); err != nil {
		return nil, err
	}
	return d, nil
}

// powerUp brings the device to its power-up state from the EEPROM image
// and spec: every register, SyncManager, FMMU, the mailbox, the state
// machine, the EEPROM interface and the application are built anew; the
// distributed clock starts a new local time base at the segment's current
// time and keeps its oscillator drift. What ties the device to its line
// (lock, segment, downstream port and neighbour) stays. The caller holds
// d.mu when the device is in a segment.
func (d *Device) powerUp(image []byte, spec deviceSpec) error {
	desc, err := sii.Parse(image)
	var crc *sii.ChecksumError
	if err != nil && !errors.As(err, &crc) {
		return fmt.Errorf("sim: %s: SII image: %w", spec.name, err)
	}
	now := d.now()
	drift := d.clock.driftPPB
	*d = Device{mu: d.mu, seg: d.seg, downPort: d.downPort, hasNext: d.hasNext,
		name: spec.name, sii: desc, chip: spec.chip, spec: spec, rng: d.rng, note: d.note}
	if spec.ports != 0 {
		d.chip.info.PortDescriptor = spec.ports
	}
	d.nfmmu, d.nsm = int(d.chip.info.FMMUs), int(d.chip.info.SyncManagers)
	escConfig := image[1]
	if d.chip.ownConfig {
		escConfig = d.chip.config[1]
	}
	d.hasDC = d.chip.dcAlways || escConfig&0x0C != 0
	d.mem = &memory{acc: newAccessMap(d.nfmmu, d.nsm, d.hasDC), ramEnd: 0x1000 + d.chip.ramBytes()}
	regs := d.mem.b[:]
	d.chip.info.Encode(regs[esc.RegType:])
	copy(regs[esc.RegDLControl:], d.chip.dlControl[:])
	loadConfiguration(regs, image)
	if d.chip.ownConfig {
		copy(regs[esc.RegPDIControl:], d.chip.config[:])
	}
	d.resetRegisters()

	owned := append([]byte(nil), image...)
	d.eeprom = newEEPROMInterface(owned, d.chip.siiControl, d.chip.sii, siiTimeBased)
	d.eeprom.rng = d.rng
	d.eeprom.sync(regs)

	d.esm = stateMachine{
		emulated:  escConfig&0x01 != 0,
		bootstrap: desc.Header.BootstrapMailbox.ReceiveSize != 0,
		delay:     spec.esmDelay,
		time:      spec.fw.esm,
		state:     esc.StateInit,
	}
	// The local time starts from the same power-up value whenever the
	// device is switched on: at segment time now it reads localBase+now.
	powerUpTime := 1_000_000_000 + int64(len(spec.name))*7_919_311 + int64(desc.Header.Identity.ProductCode%997)*1_000_003
	d.clock.localBase = powerUpTime - now
	d.clock.driftPPB, d.clock.driftFrom = drift, now
	if !d.esm.emulated && desc.Header.HasMailbox() && desc.Header.MailboxProtocols.Has(sii.ProtocolCoE) {
		od := newObjectDictionary(desc, spec.objects)
		d.mbx = newMailbox(d, od, spec.mailboxDelay, spec.fw)
	}
	d.pd = newProcessData(spec.analog)
	d.layoutProcessData()
	if spec.app != nil {
		d.app = spec.app(d)
	}
	d.stateChanged()
	d.updateDLStatus()
	return nil
}

// resetRegisters sets the registers whose power-up value is not zero.
func (d *Device) resetRegisters() {
	le := binary.LittleEndian
	regs := d.mem.b[:]
	le.PutUint16(regs[esc.RegWatchdogDivider:], 0x09C2)
	le.PutUint16(regs[esc.RegWatchdogPDI:], 0x03E8)
	le.PutUint16(regs[esc.RegWatchdogPD:], 0x03E8)
	// Receive times of ports that never latched: what the real devices
	// answered ("hoff" on an unconnected port 1, "Verl" on port 3).
	copy(regs[esc.RegDCRecvTimePort1:], "hoff")
	copy(regs[esc.RegDCRecvTimePort3:], "Verl")
	if d.hasDC {
		le.PutUint16(regs[esc.RegDCSpeedStart:], 0x1000)
		regs[esc.RegDCFilterDepth] = 0x04
		regs[esc.RegDCSpeedFilter] = 0x0C
	}
}

// Name returns the device's model name, such as "EL2004", or the order
// code from the SII for a device loaded from an image file.
func (d *Device) Name() string { return d.name }

// Identity returns the vendor id, product code, revision and serial number
// from the device's SII.
func (d *Device) Identity() sii.Identity { return d.sii.Header.Identity }

// SII returns a copy of the device's EEPROM image.
func (d *Device) SII() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]byte(nil), d.eeprom.image...)
}

// State returns the state in the device's AL status register.
func (d *Device) State() esc.ALState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.esm.state
}

// ALStatus returns the device's AL status and AL status code.
func (d *Device) ALStatus() (esc.ALStatus, esc.ALStatusCode) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return esc.ALStatus{State: d.esm.state, Error: d.esm.err}, d.esm.code
}

// StationAddress returns the configured station address (register 0x0010).
func (d *Device) StationAddress() uint16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return binary.LittleEndian.Uint16(d.mem.b[esc.RegStationAddress:])
}

// Register returns a copy of n bytes of the device's physical memory at
// addr, as the ESC holds them (live registers such as the system time are
// not refreshed). It is meant for tests and diagnostics.
func (d *Device) Register(addr uint16, n int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	end := min(int(addr)+n, len(d.mem.b))
	return append([]byte(nil), d.mem.b[addr:end]...)
}

// stateChanged brings the registers and the application controller's view
// of the SyncManagers in line with the state machine.
func (d *Device) stateChanged() {
	regs := d.mem.b[:]
	binary.LittleEndian.PutUint16(regs[esc.RegALStatus:], d.esm.status())
	binary.LittleEndian.PutUint16(regs[esc.RegALStatusCode:], uint16(d.esm.code))
	d.eeprom.extra = 0
	until := esc.StateSafeOp
	if d.spec.siiExtraUntil != 0 {
		until = d.spec.siiExtraUntil
	}
	if st := d.esm.state; until != esc.StateInit && (st == esc.StateBootstrap || st < until) {
		d.eeprom.extra = d.chip.siiBelowSafeOp
	}
	d.eeprom.sync(regs)
	d.watchdogStateChanged()
	if d.esm.emulated {
		return
	}
	d.wakeMailbox()
	st := d.esm.state
	for i, sm := range d.sii.SyncManagers {
		if i >= d.nsm {
			break
		}
		switch sm.Type {
		case sii.SMMailboxOut, sii.SMMailboxIn:
			// The mailbox runs in BOOT too, on the bootstrap mailbox.
			d.setPDIOff(i, st == esc.StateInit)
		case sii.SMProcessDataOut, sii.SMProcessDataIn:
			d.setPDIOff(i, st != esc.StateSafeOp && st != esc.StateOp)
		}
	}
	if d.mbx != nil && (st == esc.StateInit || st == esc.StateBootstrap) {
		d.mbx.reset()
	}
}

// updateDLStatus computes DL status 0x0110 from the topology and the loop
// settings in DL control 0x0101: port 0 faces the master, downPort leads to
// the next device; a port with auto loop control is open exactly when it
// has a link.
func (d *Device) updateDLStatus() {
	regs := d.mem.b[:]
	s := esc.DLStatus{
		PDIOperational: !d.eeprom.badCRC,
		WatchdogOK:     regs[esc.RegPDIControl] != 0,
		// ESC configuration 0x0141 bit 1: enhanced link detection on all
		// ports (ET1100 datasheet section II, 0x0110 bit 2).
		ExtendedLink: regs[esc.RegESCConfig]&0x02 != 0,
	}
	for p := range esc.PortCount {
		link := p == 0 || (p == d.downPort && d.hasNext)
		closed := !link
		switch regs[esc.RegDLControl+1] >> (2 * p) & 3 {
		case 2:
			closed = false
		case 3:
			closed = true
		}
		s.Ports[p] = esc.PortStatus{Link: link, Loop: closed, Communication: link}
	}
	s.Encode(regs[esc.RegDLStatus:])
}

// forwards reports whether a frame leaves through the downstream port, and
// whether it is lost there (an open port without a link).
func (d *Device) forwards() (next, lost bool) {
	mode := d.mem.b[esc.RegDLControl+1] >> (2 * d.downPort) & 3
	switch {
	case mode == 3:
		return false, false
	case mode == 2 && !d.hasNext:
		return false, true
	}
	return d.hasNext, false
}

// isAddressed reports whether adp selects this device in a configured
// address command: its station address, or its alias when DL control
// enables alias addressing (0x0103 bit 0).
func (d *Device) isAddressed(adp uint16) bool {
	regs := d.mem.b[:]
	if adp == binary.LittleEndian.Uint16(regs[esc.RegStationAddress:]) {
		return true
	}
	return regs[esc.RegDLControl+3]&0x01 != 0 && adp == binary.LittleEndian.Uint16(regs[esc.RegStationAlias:])
}

// frameContext is what a device needs to know about the frame it serves.
type frameContext struct {
	number  uint64
	arrival int64 // segment time the frame reached this device
	back    int64 // segment time it came back into the downstream port
	hasBack bool
}

// handle serves one datagram as it passes the device.
func (d *Device) handle(dg *wire.Datagram, f *frameContext) {
	cmd := dg.Command
	ac := newAccess()
	var inc uint16
	switch cmd.Addressing() {
	case wire.AddressingPosition:
		adp := dg.ADP()
		dg.SetAddress(wire.PhysicalAddress(adp+1, dg.ADO()))
		inc = d.physical(cmd, adp == 0, dg, f, &ac)
	case wire.AddressingConfigured:
		me := d.isAddressed(dg.ADP())
		if !me && cmd != wire.FRMW {
			// Not for this device, and only FRMW acts on the others: a
			// frame of a 128-device segment passes each configured-address
			// datagram by 127 devices.
			return
		}
		inc = d.physical(cmd, me, dg, f, &ac)
	case wire.AddressingBroadcast:
		dg.SetAddress(wire.PhysicalAddress(dg.ADP()+1, dg.ADO()))
		inc = d.physical(cmd, true, dg, f, &ac)
	case wire.AddressingLogical:
		rd, wr := d.logical(dg.Address, dg.Data, cmd.Reads(), cmd.Writes(), &ac)
		if rd {
			inc++
		}
		if wr {
			inc++
			if cmd == wire.LRW {
				inc++
			}
		}
	default:
		return
	}
	d.finish(&ac, f)
	if inc != 0 {
		dg.SetWKC(dg.WKC + inc)
	}
}

// physical serves a physical or broadcast command; me says whether the
// device is the addressed one. It returns the working counter increment.
func (d *Device) physical(cmd wire.Command, me bool, dg *wire.Datagram, f *frameContext, ac *access) uint16 {
	ado, p := int(dg.ADO()), dg.Data
	if len(p) == 0 {
		return 0
	}
	var inc uint16
	switch cmd {
	case wire.APRD, wire.FPRD, wire.BRD:
		if (me || cmd == wire.BRD) && d.physRead(ado, p, cmd == wire.BRD, f, ac) {
			inc = 1
		}
	case wire.APWR, wire.FPWR, wire.BWR:
		if (me || cmd == wire.BWR) && d.physWrite(ado, p, ac) {
			inc = 1
		}
	case wire.APRW, wire.FPRW, wire.BRW:
		if me || cmd == wire.BRW {
			rd, wr := d.physReadWrite(ado, p, cmd == wire.BRW, f, ac)
			if rd {
				inc++
			}
			if wr {
				inc += 2
			}
		}
	case wire.ARMW, wire.FRMW:
		if me {
			if d.physRead(ado, p, false, f, ac) {
				inc = 1
			}
		} else if d.physWrite(ado, p, ac) {
			inc = 1
		}
	}
	return inc
}

// advance carries out what the device's timers have finished by segment
// time now, before a frame reaches it: time-based EEPROM commands.
func (d *Device) advance(now int64) {
	d.eeprom.advance(d.mem.b[:], now)
	if d.esm.advance(d, now) {
		d.stateChanged()
	}
	if d.mbxWake {
		d.mbx.advance(now)
	}
	if d.checkWatchdog(now) {
		d.stateChanged()
	}
}

// tick advances the device's timers by one frame: EEPROM busy time, a
// pending state change, mailbox work.
func (d *Device) tick(frame uint64) {
	d.eeprom.tick(d.mem.b[:])
	if d.esm.tick(d) {
		d.stateChanged()
	}
	if d.mbxWake {
		d.mbx.tick(frame)
		d.mbxWake = !d.mbx.idle()
	}
}

// checkTransition is the application controller's check of an allowed
// upward transition: the mailbox SyncManagers for INIT→PREOP, the process
// data SyncManagers for PREOP→SAFEOP.
func (d *Device) checkTransition(from, to esc.ALState) esc.ALStatusCode {
	switch {
	case from == esc.StateInit && to == esc.StatePreOp:
		return d.checkMailboxSMs(d.sii.Header.StandardMailbox, esc.ALInvalidMailboxConfig)
	case from == esc.StateInit && to == esc.StateBootstrap:
		// ETG.1000.6: the bootstrap mailbox of SII words 0x0014–0x0017,
		// refused with 0x0015 (invalid mailbox configuration, BOOT).
		return d.checkMailboxSMs(d.sii.Header.BootstrapMailbox, alInvalidBootMailboxConfig)
	case from == esc.StatePreOp && to == esc.StateSafeOp:
		return d.checkProcessDataSMs()
	}
	return esc.ALNoError
}

// alInvalidBootMailboxConfig is AL status code 0x0015, invalid mailbox
// configuration for BOOT (ETG.1000.6).
const alInvalidBootMailboxConfig esc.ALStatusCode = 0x0015

// checkMailboxSMs compares the mailbox SyncManagers with mailbox mb of the
// SII header (standard or bootstrap) and returns code when they differ.
func (d *Device) checkMailboxSMs(mb sii.Mailbox, code esc.ALStatusCode) esc.ALStatusCode {
	if !d.sii.Header.HasMailbox() {
		return esc.ALNoError
	}
	want := []struct {
		start, size uint16
		control     uint8
	}{
		{mb.ReceiveOffset, mb.ReceiveSize, esc.SMModeMailbox | esc.SMDirWrite},
		{mb.SendOffset, mb.SendSize, esc.SMModeMailbox | esc.SMDirRead},
	}
	for i, w := range want {
		if i >= d.nsm {
			return code
		}
		r := esc.DecodeSyncManager(d.mem.b[esc.RegSyncManager(i):])
		if r.PhysicalStart != w.start || r.Length != w.size || r.Control&0x0F != w.control || !r.Enabled() {
			return code
		}
	}
	return esc.ALNoError
}

// checkProcessDataSMs compares each process data SyncManager with the size
// of the PDOs assigned to it: a wrong length is an invalid output (0x001D)
// or input (0x001E) configuration, a wrong address, mode or direction, or a
// disabled SyncManager with data, an invalid SyncManager configuration
// (0x0017). SyncManagers are checked in order; the first misfit decides.
func (d *Device) checkProcessDataSMs() esc.ALStatusCode {
	for _, s := range d.pd.sms {
		if s.sm >= d.nsm || s.bits == 0 {
			continue
		}
		r := esc.DecodeSyncManager(d.mem.b[esc.RegSyncManager(s.sm):])
		dir := uint8(esc.SMDirRead)
		sizeCode := esc.ALInvalidInputConfig
		if s.out {
			dir, sizeCode = esc.SMDirWrite, esc.ALInvalidOutputConfig
		}
		switch {
		case !r.Enabled() || int(r.PhysicalStart) != s.start || r.Control&0x0F != esc.SMModeBuffered|dir:
			return esc.ALInvalidSyncManagerConfig
		case int(r.Length) != (s.bits+7)/8:
			return sizeCode
		}
	}
	return esc.ALNoError
}
