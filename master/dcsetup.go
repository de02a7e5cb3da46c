package master

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/dc"
)

// DefaultDCDriftFrames is the number of static drift compensation frames
// ConfigureDC sends: the count ETG.1020 suggests, some 15 000 frames, that
// let the slaves' control loops settle before SYNC signals start.
const DefaultDCDriftFrames = 15000

// dcEpoch is the origin of EtherCAT system time.
var dcEpoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// DCOptions tunes ConfigureDCWith. The zero value gives ConfigureDC's
// behaviour.
type DCOptions struct {
	// DriftFrames is how many FRMW of the reference clock's system time
	// (0x0910) are sent for static drift compensation; 0 means
	// DefaultDCDriftFrames, a negative count sends none.
	DriftFrames int
	// Now returns the wall-clock time the system time starts from; nil
	// means time.Now. Tests set it to get reproducible offsets.
	Now func() time.Time
}

// DCClock is the setting ConfigureDC wrote to one slave's clock.
type DCClock struct {
	Slave  *Slave
	Delay  uint32 // propagation delay from the reference in ns (0x0928)
	Offset uint64 // system time offset (0x0920)
}

// DCSetup is the outcome of ConfigureDCWith.
type DCSetup struct {
	// Reference is the reference clock, the first slave with a system
	// time: the cyclic drift compensation reads its 0x0910 (FRMW).
	Reference *Slave
	// Clocks lists the slaves with a system time, in ring order, with
	// the values written to them.
	Clocks []DCClock
}

// ConfigureDC initialises the distributed clocks with DCOptions' defaults;
// see ConfigureDCWith.
func (m *Master) ConfigureDC(ctx context.Context) error {
	_, err := m.ConfigureDCWith(ctx, DCOptions{})
	return err
}

// ConfigureDCWith initialises the distributed clocks of the scanned
// segment: it latches every slave's port receive times (BWR 0x0900), reads
// them and the processing unit's receive time (0x0918) from each slave
// with DC, computes propagation delays and offsets (package dc), writes
// the offsets (0x0920) and delays (0x0928), and sends opts.DriftFrames FRMW
// of the reference clock's 0x0910 for static drift compensation. System
// time then counts nanoseconds since 2000-01-01 from opts.Now at the latch.
// A segment without any clock with a system time gives an error matching
// dc.ErrNoReference.
//
// When the process image is mapped, the cyclic exchange carries the
// drift compensation from then on (see Cyclic); a later mapping (a new
// Scan, MapProcessImage) forgets it, so map first — BringUp does.
//
// Like every Bus operation it must not run while the cyclic exchange runs
// in another goroutine.
func (m *Master) ConfigureDCWith(ctx context.Context, opts DCOptions) (DCSetup, error) {
	if err := m.usable(); err != nil {
		return DCSetup{}, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	frames := opts.DriftFrames
	if frames == 0 {
		frames = DefaultDCDriftFrames
	}

	var zero [4]byte
	if err := m.bus.BWR(ctx, uint16(esc.RegDCRecvTimePort0), zero[:], AnyWKC); err != nil {
		return DCSetup{}, fmt.Errorf("master: latch DC receive times: %w", err)
	}
	latch := uint64(now().Sub(dcEpoch).Nanoseconds())

	clocks, err := m.readDCTimes(ctx)
	if err != nil {
		return DCSetup{}, err
	}
	results, err := dc.Compute(clocks, latch)
	if err != nil {
		return DCSetup{}, fmt.Errorf("master: distributed clocks: %w", err)
	}
	ref := m.slaves[dc.Reference(clocks)]

	var setup DCSetup
	setup.Reference = ref
	var buf [8]byte
	for i, s := range m.slaves {
		if !clocks[i].SystemTime {
			continue
		}
		r := results[i]
		binary.LittleEndian.PutUint64(buf[:], r.Offset)
		if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegDCSystemOffset), buf[:8]); err != nil {
			return DCSetup{}, fmt.Errorf("master: %v: write DC system time offset: %w", s, err)
		}
		binary.LittleEndian.PutUint32(buf[:], r.Delay)
		if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegDCSystemDelay), buf[:4]); err != nil {
			return DCSetup{}, fmt.Errorf("master: %v: write DC system time delay: %w", s, err)
		}
		setup.Clocks = append(setup.Clocks, DCClock{Slave: s, Delay: r.Delay, Offset: r.Offset})
	}

	// The reference reads its system time into the datagram, every other
	// clock takes it: each one with a system time counts once.
	address := wire.PhysicalAddress(ref.StationAddress, uint16(esc.RegDCSystemTime))
	for n := range max(frames, 0) {
		var sys [8]byte
		if _, err := m.bus.transactWant(ctx, wire.FRMW, address, sys[:], len(setup.Clocks)); err != nil {
			return DCSetup{}, fmt.Errorf("master: DC drift compensation frame %d of %d: %w", n+1, frames, err)
		}
	}
	if m.cyclic != nil {
		m.cyclic.enableDC(setup)
	}
	m.log.Info("distributed clocks configured", "reference", ref.String(), "clocks", len(setup.Clocks),
		"drift_frames", max(frames, 0))
	return setup, nil
}

// readDCTimes reads the latched receive times of every slave with DC and
// tells which ones have a system time unit (their 0x0918 answers).
func (m *Master) readDCTimes(ctx context.Context) ([]dc.Slave, error) {
	clocks := make([]dc.Slave, len(m.slaves))
	var ports [4 * esc.PortCount]byte
	var recv [8]byte
	for i, s := range m.slaves {
		clocks[i] = dc.Slave{DC: s.DC, Parent: s.Parent, Ports: s.Ports}
		if !s.DC {
			continue
		}
		if err := m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegDCRecvTimePort0), ports[:]); err != nil {
			return nil, fmt.Errorf("master: %v: read DC port receive times: %w", s, err)
		}
		for k := range esc.PortCount {
			clocks[i].PortTimes[k] = binary.LittleEndian.Uint32(ports[4*k:])
		}
		err := m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegDCRecvTimeECAT), recv[:])
		var wkc *WKCError
		switch {
		case errors.As(err, &wkc) && wkc.Got == 0:
			// No system time unit: the register does not exist.
		case err != nil:
			return nil, fmt.Errorf("master: %v: read DC receive time: %w", s, err)
		default:
			clocks[i].SystemTime = true
			clocks[i].ReceiveTime = binary.LittleEndian.Uint64(recv[:])
		}
	}
	return clocks, nil
}
