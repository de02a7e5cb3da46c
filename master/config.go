package master

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ecagent/ecagent/internal/realtime/monotime"
)

// Defaults used for zero fields of a Config.
const (
	// DefaultTimeout is how long a bring-up frame's first try waits for
	// its answer.
	DefaultTimeout = 20 * time.Millisecond
	// DefaultRetries is how often a bring-up frame is sent again after
	// going unanswered.
	DefaultRetries = 3
	// DefaultStateTimeout bounds one AL state transition of a slave.
	DefaultStateTimeout = 5 * time.Second
	// DefaultCycleTimeout is how long Exchange waits for its frames.
	DefaultCycleTimeout = time.Millisecond
	// DefaultSIITimeout bounds one SII EEPROM access (busy polling).
	DefaultSIITimeout = 100 * time.Millisecond
	// DefaultRecoveryTimeout is how long an acyclic datagram queued for a
	// running cycle waits for its answer beyond three cycle periods.
	DefaultRecoveryTimeout = 2 * time.Millisecond
	// DefaultSafeOpFrames is how many cyclic frames BringUp exchanges in
	// SAFEOP before it requests OP.
	DefaultSafeOpFrames = 5
)

// Config configures a Master. A nil *Config passed to New means all
// defaults; zero fields of a non-nil one take their defaults too.
type Config struct {
	// Timeout is how long the first try of a bring-up (acyclic) frame
	// waits for its answer before it is sent again; each later try waits
	// twice as long as the one before (up to 500 ms, or Timeout if that
	// is longer). When the answers measured on the link take longer, the
	// first try waits as long as they do (see Bus.Transact). Default
	// DefaultTimeout.
	Timeout time.Duration

	// Retries is how often an unanswered bring-up frame is sent again:
	// the same frame with the same datagram index, so that the late
	// answer to an earlier try is taken. Zero means DefaultRetries; a
	// negative value means no retry.
	Retries int

	// RecoveryTimeout is how long, beyond three cycle periods, a datagram
	// queued for the running cycle (QueueAcyclic) waits for the cycle to
	// take it before it is withdrawn and sent again — and only once the
	// cycle ran three cycles meanwhile without room for it: a cycle the
	// host delays is waited for, up to StateTimeout (the cycle resolves
	// every datagram it carries within its exchange). Retries apply to
	// lost frames and datagrams withdrawn so. Default
	// DefaultRecoveryTimeout.
	RecoveryTimeout time.Duration

	// StateTimeout bounds each AL state transition (write AL control,
	// poll AL status). Default DefaultStateTimeout.
	StateTimeout time.Duration

	// CycleTimeout is how long Exchange waits for the answers to its
	// frames. The cycle engine usually passes its own deadline to
	// ExchangeUntil instead. Default DefaultCycleTimeout.
	CycleTimeout time.Duration

	// SIITimeout bounds each SII EEPROM access while the ESC reports busy.
	// Default DefaultSIITimeout.
	SIITimeout time.Duration

	// ExpectedSlaves is the number of slaves the segment must have; Scan
	// fails with a *SlaveCountError when it finds another number. Zero
	// accepts any number.
	ExpectedSlaves int

	// MaxFrameData caps the data bytes of one cyclic LRW datagram; larger
	// process images are split over several frames. Zero means as much as
	// one Ethernet frame carries beside the AL status read (1472 bytes).
	MaxFrameData int

	// SafeOpFrames is how many cyclic frames BringUp exchanges in SAFEOP,
	// so that inputs are valid and outputs safe, before it requests OP.
	// Default DefaultSafeOpFrames.
	SafeOpFrames int

	// Clock returns monotonic nanoseconds for the send and receive
	// timestamps of a cycle. Default: CLOCK_MONOTONIC, the time base of
	// clock_nanosleep, so the engine's deadlines and these times compare.
	Clock func() int64

	// Logger receives one line per bring-up step and warnings. Default
	// slog.Default().
	Logger *slog.Logger

	// DC turns distributed clocks on: BringUp then configures the clocks
	// and their SYNC signals between PREOP and SAFEOP, and the cyclic
	// frames carry the continuous drift compensation. Nil leaves DC off.
	DC *DCConfig

	// Expected is the segment as configured (an ENI), slave by slave in
	// ring order: Scan checks what it finds against it (and then ignores
	// ExpectedSlaves), Reconnect a returning slave, and the slaves' state
	// transitions run their startup commands. Nil checks nothing.
	Expected []ExpectedSlave

	// PDO replaces the PDO assignment (and optionally the mappings) of
	// the slaves it names, written over CoE in PREOP before the image is
	// mapped. Slaves it does not name keep the assignment they report.
	PDO []SlavePDOConfig
}

// SlavePDOConfig replaces a slave's PDO assignment (and optionally
// mappings) before the image is mapped.
type SlavePDOConfig struct {
	Position int         // ring position
	RxPDOs   []PDOConfig // assigned to the output SM (0x1C12), in order; nil keeps the slave's
	TxPDOs   []PDOConfig // assigned to the input SM (0x1C13); nil keeps
}

// PDOConfig is one PDO of a SlavePDOConfig's assignment.
type PDOConfig struct {
	Index   uint16           // e.g. 0x1601
	Entries []PDOEntryConfig // nil: keep the PDO's existing mapping; else write it (0x16xx/0x1Axx)
}

// PDOEntryConfig is one object entry a PDOConfig maps; Index 0 is a gap
// of Bits bits.
type PDOEntryConfig struct {
	Index    uint16
	SubIndex uint8
	Bits     int
}

// withDefaults returns a copy of c with zero fields filled in, or an error
// naming a field whose value cannot work.
func (c *Config) withDefaults() (Config, error) {
	var out Config
	if c != nil {
		out = *c
	}
	if out.Timeout == 0 {
		out.Timeout = DefaultTimeout
	}
	switch {
	case out.Retries == 0:
		out.Retries = DefaultRetries
	case out.Retries < 0:
		out.Retries = 0
	}
	if out.RecoveryTimeout == 0 {
		out.RecoveryTimeout = DefaultRecoveryTimeout
	}
	if out.StateTimeout == 0 {
		out.StateTimeout = DefaultStateTimeout
	}
	if out.CycleTimeout == 0 {
		out.CycleTimeout = DefaultCycleTimeout
	}
	if out.SIITimeout == 0 {
		out.SIITimeout = DefaultSIITimeout
	}
	if out.SafeOpFrames == 0 {
		out.SafeOpFrames = DefaultSafeOpFrames
	}
	if out.MaxFrameData == 0 {
		out.MaxFrameData = maxLRWData
	}
	if out.Clock == nil {
		out.Clock = monotime.Now
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Timeout", out.Timeout}, {"RecoveryTimeout", out.RecoveryTimeout}, {"StateTimeout", out.StateTimeout}, {"CycleTimeout", out.CycleTimeout}, {"SIITimeout", out.SIITimeout}} {
		if d.v < 0 {
			return Config{}, fmt.Errorf("master: config %s is %v, want a positive duration", d.name, d.v)
		}
	}
	if out.ExpectedSlaves < 0 {
		return Config{}, fmt.Errorf("master: config ExpectedSlaves is %d, want 0 (any) or more", out.ExpectedSlaves)
	}
	if out.MaxFrameData < 1 || out.MaxFrameData > maxLRWData {
		return Config{}, fmt.Errorf("master: config MaxFrameData is %d, want 1 to %d", out.MaxFrameData, maxLRWData)
	}
	if out.SafeOpFrames < 0 {
		return Config{}, fmt.Errorf("master: config SafeOpFrames is %d, want 0 (default) or more", out.SafeOpFrames)
	}
	if out.DC != nil {
		dc := *out.DC // a copy: the caller's value may change afterwards
		if dc.StartDelay == 0 {
			dc.StartDelay = DefaultSyncStartDelay
		}
		if err := dc.syncOptions().validate(); err != nil {
			return Config{}, fmt.Errorf("master: config DC: %w", err)
		}
		out.DC = &dc
	}
	return out, nil
}
