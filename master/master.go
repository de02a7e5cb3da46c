package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master/link"
)

// Master runs one EtherCAT segment over one link: it scans the slaves,
// drives their state machines, maps their process data into a
// ProcessImage and exchanges it cyclically.
//
// A Master is used from one goroutine at a time: bring-up (Scan,
// RequestState, BringUp) and then the cycle (Exchange) must not overlap,
// since they share the link. Stats and Slave.State may be read from any
// goroutine.
type Master struct {
	cfg      Config
	log      *slog.Logger
	link     link.Link
	stats    link.StatsReader // the link, when it tells what it received
	bus      *Bus
	counters counters
	// emergencies holds CoE emergency messages until Emergencies.
	emergencies emergencyQueue

	// dc and sync are what BringUp's distributed-clock step set up.
	dc     DCSetup
	sync   SyncSetup
	dcDone bool

	slaves []*Slave
	image  *ProcessImage
	cyclic *Cyclic
	closed bool
	// acyclic carries Bus transactions to the cycle while it owns the
	// link (QueueAcyclic).
	acyclic *acyclicQueue
}

// New returns a master on l, which it owns from now on (Close closes it).
// A nil cfg means defaults. New sends nothing; call BringUp, or Scan and
// RequestState.
func New(l link.Link, cfg *Config) (*Master, error) {
	if l == nil {
		return nil, errors.New("master: nil link")
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Master{cfg: c, log: c.Logger, link: l, acyclic: &acyclicQueue{}}
	m.stats, _ = l.(link.StatsReader)
	m.bus = newBus(l, c.Timeout, c.Retries, &m.counters)
	return m, nil
}

// Bus returns the master's transport, for diagnostics and mailbox
// protocols that need single datagrams (read error counters, CoE). While
// Exchange runs in another goroutine it may be used only once the cycle
// owns the link (QueueAcyclic).
func (m *Master) Bus() *Bus { return m.bus }

// Slaves returns the slaves found by the last Scan, in ring order.
func (m *Master) Slaves() []*Slave { return m.slaves }

// Image returns the process image, or nil before it is mapped.
func (m *Master) Image() *ProcessImage { return m.image }

// Cyclic returns the cyclic exchange, or nil before the image is mapped.
func (m *Master) Cyclic() *Cyclic { return m.cyclic }

// DC returns the distributed-clock and SYNC settings BringUp made, and
// false when it made none (Config.DC nil, or BringUp not run).
func (m *Master) DC() (DCSetup, SyncSetup, bool) { return m.dc, m.sync, m.dcDone }

// Stats returns the master's counters. It is safe to call from any
// goroutine, also while the cycle runs.
func (m *Master) Stats() Stats { return m.counters.snapshot() }

// FrameTotals returns Stats' FramesSent and LostFrames alone: two atomic
// loads, for the cycle to publish every cycle. Sent is read after lost,
// and the exchange counts a frame sent before it counts it lost, so lost
// never exceeds sent.
func (m *Master) FrameTotals() (sent, lost uint64) {
	lost = m.counters.lost.Load()
	sent = m.counters.sent.Load()
	return sent, lost
}

// LateFrames returns Stats' LateFrames alone: one atomic load, for the
// cycle to publish every cycle. A frame is counted lost before its late
// answer can come, so read before FrameTotals it never exceeds lost.
func (m *Master) LateFrames() uint64 { return m.counters.late.Load() }

// LinkStats returns what the link has received since it was opened, and
// false when the link does not tell (it is no link.StatsReader) or cannot
// (closed). For a raw socket these are the kernel's counters
// (PACKET_STATISTICS): the frames its filter passed, and those of them
// dropped because the receive queue was full, which the master never saw.
// One system call that does not block and allocates nothing: the cycle
// may call it, at a low rate.
func (m *Master) LinkStats() (link.Stats, bool) {
	if m.stats == nil {
		return link.Stats{}, false
	}
	st, err := m.stats.Stats()
	return st, err == nil
}

// Exchange runs one cycle of the process-data exchange (see
// Cyclic.ExchangeUntil) with the deadline Config.CycleTimeout from now.
// Before the image is mapped it returns a result with Err ErrNotMapped.
func (m *Master) Exchange() CycleResult {
	if m.cyclic == nil {
		return CycleResult{Err: ErrNotMapped}
	}
	return m.cyclic.Exchange()
}

// ExchangeUntil runs one cycle with the given deadline for the answers.
func (m *Master) ExchangeUntil(deadline time.Time) CycleResult {
	if m.cyclic == nil {
		return CycleResult{Err: ErrNotMapped}
	}
	return m.cyclic.ExchangeUntil(deadline)
}

// CanPost reports whether the cyclic exchange can be pipelined (Post and
// Collect): the image is mapped and the link is a link.Poller.
func (m *Master) CanPost() bool { return m.cyclic != nil && m.cyclic.CanPost() }

// Post sends this cycle's frames without waiting for the answers (see
// Cyclic.Post); Collect takes them one period later. It does nothing
// before the image is mapped or on a link that is no link.Poller.
func (m *Master) Post(collectAt time.Time) {
	if m.CanPost() {
		m.cyclic.Post(collectAt)
	}
}

// Collect takes the answers to the frames Post sent (see Cyclic.Collect).
// Before the image is mapped it returns a result with Err ErrNotMapped.
func (m *Master) Collect() CycleResult {
	if m.cyclic == nil {
		return CycleResult{Err: ErrNotMapped}
	}
	return m.cyclic.Collect()
}

// MapProcessImage lays out the process image over the scanned slaves
// (setting each Slave's Inputs and Outputs) and builds the cyclic frames.
// RequestState does it on the way to SAFEOP when it has not been done;
// calling it earlier lets a caller inspect the layout first. It sends
// nothing.
func (m *Master) MapProcessImage() (*ProcessImage, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	l, err := mapProcessData(m.slaves, m.cfg.MaxFrameData)
	if err != nil {
		return nil, err
	}
	m.image = newProcessImage(l.outBytes, l.inBytes)
	m.cyclic = newCyclic(m.bus, m.acyclic, m.image, l, m.cfg.CycleTimeout, m.cfg.Clock, &m.counters)
	m.cyclic.attach(m)
	m.log.Info("process image mapped", "output_bytes", l.outBytes, "input_bytes", l.inBytes,
		"frames", len(l.chunks), "expected_wkc", m.cyclic.ExpectedWKC())
	return m.image, nil
}

// Close takes the slaves back to INIT (best effort, one broadcast, no
// waiting), which stops their outputs, and closes the link. Later calls do
// nothing.
func (m *Master) Close() error {
	if m.closed {
		return nil
	}
	if len(m.slaves) > 0 {
		var reg [esc.ALControlLen]byte
		esc.ALControl{State: esc.StateInit}.Encode(reg[:])
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Timeout)
		retries := m.bus.retries
		m.bus.retries = 0
		if err := m.bus.BWR(ctx, uint16(esc.RegALControl), reg[:], AnyWKC); err != nil {
			m.log.Warn("close: could not request INIT", "err", err)
		}
		m.bus.retries = retries
		cancel()
	}
	m.closed = true
	if err := m.link.Close(); err != nil {
		return fmt.Errorf("master: close link: %w", err)
	}
	return nil
}

// usable reports ErrClosed or ErrNotScanned when the master cannot work on
// its slaves.
func (m *Master) usable() error {
	switch {
	case m.closed:
		return ErrClosed
	case len(m.slaves) == 0:
		return ErrNotScanned
	}
	return nil
}
