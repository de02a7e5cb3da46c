package master

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// Limits and defaults of the SYNC signal set-up.
const (
	// DefaultSyncStartDelay is how far ahead of a slave's system time
	// ConfigureSync places the first SYNC0 pulse when SyncOptions does not
	// say: enough for the few frames that activate every slave.
	DefaultSyncStartDelay = 100 * time.Millisecond
	// MaxSyncStartDelay bounds SyncOptions.StartDelay. ESCs with a 32-bit
	// system time compare only the low half of the start time, which is
	// unambiguous for less than 2³¹ ns ahead.
	MaxSyncStartDelay = 2 * time.Second
	// MinSync0 is the shortest SYNC0 cycle time accepted.
	MinSync0 = time.Microsecond
)

// Activation values of register 0x0981.
const (
	syncActivateCyclic = 0x01 // cyclic operation
	syncActivateSync0  = 0x02 // SYNC0 pulses
	syncActivateSync1  = 0x04 // SYNC1 pulses
)

// ErrSyncStartPassed is matched (errors.Is) by the error ConfigureSync
// returns when a slave's system time had already reached the start time
// when its SYNC unit was activated: such a unit would stay silent until
// the system time wraps. A longer StartDelay avoids it.
var ErrSyncStartPassed = errors.New("master: SYNC start time passed before activation")

// SyncOptions tunes ConfigureSync.
type SyncOptions struct {
	// Sync0 is the SYNC0 cycle time (register 0x09A0), normally the cycle
	// period of the process-data exchange. Required: MinSync0 to
	// math.MaxUint32 ns.
	Sync0 time.Duration
	// Sync0Shift moves the pulses from the multiples of Sync0 in system
	// time: the first pulse is at k·Sync0 + Sync0Shift, and every slave
	// configured with the same options pulses at the same instants. Its
	// magnitude must be smaller than Sync0.
	Sync0Shift time.Duration
	// Sync1 is written as is into the SYNC1 cycle time register (0x09A4),
	// which the ESC reads as the delay of each SYNC1 pulse after its SYNC0
	// pulse (a multiple of Sync0 stretches the SYNC1 period instead). 0
	// leaves SYNC1 off; otherwise at most math.MaxUint32 ns.
	Sync1 time.Duration
	// StartDelay is how far ahead of the slave's system time, read just
	// before, the first pulse is placed. 0 means DefaultSyncStartDelay; at
	// most MaxSyncStartDelay.
	StartDelay time.Duration
	// Positions selects the slaves by ring position; each must be one of
	// the DCSetup's clocks. Nil means every clock with a system time.
	Positions []int
}

// validate reports the first option that cannot work. A zero StartDelay is
// valid (the default).
func (o SyncOptions) validate() error {
	switch {
	case o.Sync0 <= 0:
		return fmt.Errorf("SYNC0 cycle time %v: a positive cycle time is required", o.Sync0)
	case o.Sync0 < MinSync0 || o.Sync0 > math.MaxUint32:
		return fmt.Errorf("SYNC0 cycle time %v, want %v to %v", o.Sync0, MinSync0, time.Duration(math.MaxUint32))
	case o.Sync0Shift <= -o.Sync0 || o.Sync0Shift >= o.Sync0:
		return fmt.Errorf("SYNC0 shift %v, want less than the cycle time %v either way", o.Sync0Shift, o.Sync0)
	case o.Sync1 < 0 || o.Sync1 > math.MaxUint32:
		return fmt.Errorf("SYNC1 cycle time %v, want 0 (off) to %v", o.Sync1, time.Duration(math.MaxUint32))
	case o.StartDelay < 0 || o.StartDelay > MaxSyncStartDelay:
		return fmt.Errorf("SYNC start delay %v, want 0 (default %v) to %v", o.StartDelay, DefaultSyncStartDelay, MaxSyncStartDelay)
	}
	return nil
}

// activation returns the value of register 0x0981 that starts the options'
// pulses.
func (o SyncOptions) activation() uint8 {
	a := uint8(syncActivateCyclic | syncActivateSync0)
	if o.Sync1 > 0 {
		a |= syncActivateSync1
	}
	return a
}

// SyncSlave is what ConfigureSync wrote to one slave.
type SyncSlave struct {
	Slave *Slave
	// Start is the system time of the slave's first SYNC0 pulse (0x0990).
	Start uint64
}

// SyncSetup is the outcome of ConfigureSync.
type SyncSetup struct {
	// Activation is the value written to 0x0981: 0x03 (cyclic operation
	// and SYNC0) or 0x07 (with SYNC1).
	Activation uint8
	// Sync0, Sync0Shift and Sync1 are the options applied.
	Sync0, Sync0Shift, Sync1 time.Duration
	// Slaves lists the configured slaves in ring order.
	Slaves []SyncSlave
}

// syncStart returns the first instant after now+delay on the grid
// k·cycle + shift (all in ns of system time).
func syncStart(now uint64, cycle, shift, delay time.Duration) uint64 {
	t := int64(now) + int64(delay) - int64(shift) // system time stays below 2⁶³ until 2292
	c := int64(cycle)
	k := t / c
	if t < 0 && t%c != 0 {
		k-- // floor
	}
	return uint64((k+1)*c + int64(shift))
}

// ConfigureSync sets up the SYNC signals of the slaves of setup (the
// outcome of ConfigureDCWith) that opts selects, one slave after the
// other: it stops the slave's SYNC unit (0x0981 = 0), assigns the cyclic
// unit to EtherCAT (0x0980 = 0), writes the SYNC0 and SYNC1 cycle times
// (0x09A0, 0x09A4), reads the slave's system time (0x0910), writes the
// start time (0x0990, 8 bytes; an ESC with a 32-bit system time takes the
// low half) and activates the unit (0x0981 = SyncSetup.Activation). The
// start is StartDelay ahead, on the grid k·Sync0 + Sync0Shift shared by all
// slaves, so their pulses coincide. A last read of the system time checks
// that the start had not yet passed at activation (ErrSyncStartPassed).
//
// Slaves take the SYNC signals only with their DC assignment in the
// application (e.g. CoE 0x1C32): that is the device configuration's job.
// Like every Bus operation ConfigureSync must not run while the cyclic
// exchange runs in another goroutine.
func (m *Master) ConfigureSync(ctx context.Context, setup DCSetup, opts SyncOptions) (SyncSetup, error) {
	if err := m.usable(); err != nil {
		return SyncSetup{}, err
	}
	if opts.StartDelay == 0 {
		opts.StartDelay = DefaultSyncStartDelay
	}
	if err := opts.validate(); err != nil {
		return SyncSetup{}, fmt.Errorf("master: configure SYNC: %w", err)
	}
	slaves, err := syncSlaves(setup, opts.Positions)
	if err != nil {
		return SyncSetup{}, err
	}
	out := SyncSetup{Activation: opts.activation(), Sync0: opts.Sync0, Sync0Shift: opts.Sync0Shift, Sync1: opts.Sync1}
	for _, s := range slaves {
		start, err := m.configureSyncOf(ctx, s, opts, out.Activation)
		if err != nil {
			return SyncSetup{}, fmt.Errorf("master: %v: configure SYNC: %w", s, err)
		}
		out.Slaves = append(out.Slaves, SyncSlave{Slave: s, Start: start})
	}
	return out, nil
}

// syncSlaves returns the clocks of setup at positions, or all of them for
// nil positions, in ring order.
func syncSlaves(setup DCSetup, positions []int) ([]*Slave, error) {
	var out []*Slave
	for _, c := range setup.Clocks {
		if positions == nil {
			out = append(out, c.Slave)
		}
	}
	if positions == nil {
		return out, nil
	}
	for _, p := range positions {
		found := false
		for _, c := range setup.Clocks {
			if c.Slave.Position == p {
				found = true
				out = append(out, c.Slave)
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("master: configure SYNC: slave at position %d has no DC system time (not among the %d clocks)", p, len(setup.Clocks))
		}
	}
	return out, nil
}

// configureSyncOf programs one slave's SYNC unit and returns its start time.
func (m *Master) configureSyncOf(ctx context.Context, s *Slave, opts SyncOptions, activation uint8) (uint64, error) {
	le := binary.LittleEndian
	station := s.StationAddress
	var b [8]byte
	if err := m.bus.FPWR(ctx, station, uint16(esc.RegDCActivation), b[:1]); err != nil {
		return 0, fmt.Errorf("stop SYNC unit: %w", err)
	}
	if err := m.bus.FPWR(ctx, station, uint16(esc.RegDCCyclicControl), b[:1]); err != nil {
		return 0, fmt.Errorf("assign cyclic unit to EtherCAT: %w", err)
	}
	le.PutUint32(b[:], uint32(opts.Sync0))
	if err := m.bus.FPWR(ctx, station, uint16(esc.RegDCSync0Cycle), b[:4]); err != nil {
		return 0, fmt.Errorf("write SYNC0 cycle time: %w", err)
	}
	le.PutUint32(b[:], uint32(opts.Sync1))
	if err := m.bus.FPWR(ctx, station, uint16(esc.RegDCSync1Cycle), b[:4]); err != nil {
		return 0, fmt.Errorf("write SYNC1 cycle time: %w", err)
	}
	if err := m.bus.FPRD(ctx, station, uint16(esc.RegDCSystemTime), b[:]); err != nil {
		return 0, fmt.Errorf("read system time: %w", err)
	}
	start := syncStart(le.Uint64(b[:]), opts.Sync0, opts.Sync0Shift, opts.StartDelay)
	le.PutUint64(b[:], start)
	if err := m.bus.FPWR(ctx, station, uint16(esc.RegDCStartTime), b[:]); err != nil {
		return 0, fmt.Errorf("write start time: %w", err)
	}
	b[0] = activation
	if err := m.bus.FPWR(ctx, station, uint16(esc.RegDCActivation), b[:1]); err != nil {
		return 0, fmt.Errorf("activate SYNC unit: %w", err)
	}
	if err := m.bus.FPRD(ctx, station, uint16(esc.RegDCSystemTime), b[:]); err != nil {
		return 0, fmt.Errorf("read system time after activation: %w", err)
	}
	// Compare the low halves modulo 2³²: right for 32- and 64-bit ESCs,
	// since the delay is less than 2³¹ ns.
	if ahead := int32(uint32(start) - uint32(le.Uint64(b[:]))); ahead <= 0 {
		return 0, fmt.Errorf("%w: start %d, system time %d ns later; raise the start delay above %v",
			ErrSyncStartPassed, start, -int64(ahead), opts.StartDelay)
	}
	return start, nil
}

// setUpDC is BringUp's distributed-clock step: clocks, drift compensation,
// SYNC signals, one log line.
func (m *Master) setUpDC(ctx context.Context, cfg *DCConfig) error {
	setup, err := m.ConfigureDCWith(ctx, DCOptions{DriftFrames: cfg.DriftFrames})
	if err != nil {
		return err
	}
	sync, err := m.ConfigureSync(ctx, setup, cfg.syncOptions())
	if err != nil {
		return err
	}
	m.dc, m.sync, m.dcDone = setup, sync, true
	m.log.Info("bring-up: distributed clocks and SYNC0 set", "reference", setup.Reference.String(),
		"clocks", len(setup.Clocks), "sync0", cfg.Sync0.String(), "sync0_shift", cfg.Sync0Shift.String(),
		"sync1", cfg.Sync1.String(), "activation", fmt.Sprintf("%#02x", sync.Activation),
		"start_delay", cfg.StartDelay.String())
	return nil
}

// DCConfig configures distributed clocks for BringUp (Config.DC). Zero
// fields take the defaults named, except Sync0, which is required.
type DCConfig struct {
	// DriftFrames is how many static drift compensation frames are sent
	// before the SYNC signals are set up; 0 means DefaultDCDriftFrames, a
	// negative count sends none (see DCOptions.DriftFrames).
	DriftFrames int
	// Sync0 is the SYNC0 cycle time, normally the cycle period of the
	// process-data exchange. Required: MinSync0 to about 4.29 s (it is
	// written as nanoseconds into 32 bits).
	Sync0 time.Duration
	// Sync0Shift moves the SYNC0 pulses away from the multiples of Sync0
	// in system time (SyncOptions.Sync0Shift); its magnitude must be
	// smaller than Sync0.
	Sync0Shift time.Duration
	// Sync1 turns SYNC1 on (SyncOptions.Sync1); 0 leaves it off.
	Sync1 time.Duration
	// StartDelay is how far ahead of a slave's system time its first
	// SYNC0 pulse is placed. Default DefaultSyncStartDelay; at most
	// MaxSyncStartDelay.
	StartDelay time.Duration
}

// syncOptions returns the SyncOptions the configuration asks for.
func (c *DCConfig) syncOptions() SyncOptions {
	return SyncOptions{Sync0: c.Sync0, Sync0Shift: c.Sync0Shift, Sync1: c.Sync1, StartDelay: c.StartDelay}
}
