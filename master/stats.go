package master

import "sync/atomic"

// Stats counts what the master has seen since New. Cycles, LostFrames,
// WKCErrors and DCWKCErrors count the application's Exchange calls only:
// the frames that bring-up exchanges to keep outputs valid during state
// changes are not counted there. StaleFrames, InvalidFrames, Retries,
// Emergencies and MailboxDiscarded count every frame.
type Stats struct {
	// Cycles counts Exchange calls.
	Cycles uint64
	// FramesSent counts the cyclic frames of those calls, sent or refused
	// by the link; LostFrames those that did not come back before their
	// deadline (a cycle split over n frames can lose up to n; a frame the
	// link refused is lost).
	FramesSent uint64
	LostFrames uint64
	// WKCErrors counts cycles that lost no frame but whose working counter
	// was not the expected one (a cycle with a lost frame counts there).
	WKCErrors uint64
	// StaleFrames counts answers discarded because their datagram index
	// (or command, or length) did not belong to the frame being awaited:
	// late answers to lost or abandoned frames.
	StaleFrames uint64
	// InvalidFrames counts received frames that were not EtherCAT
	// datagram frames at all (truncated, wrong length fields, a datagram
	// chain that overruns the frame).
	InvalidFrames uint64
	// ForeignFrames counts EtherCAT frames that named a frame in flight
	// but did not come from the segment: their source address is neither
	// the master's nor the master's with the bit ESC port 0 sets (the
	// master's own frames seen again count here too).
	ForeignFrames uint64
	// MismatchedAnswers counts frames from the segment whose first
	// datagram named a frame in flight but whose datagrams do not answer
	// it (another count, command, index, address or length): forged or
	// corrupted answers. None of them counts for anything else.
	MismatchedAnswers uint64
	// Retries counts bring-up frames sent again after going unanswered.
	Retries uint64
	// Emergencies counts CoE emergency messages received from slaves;
	// EmergenciesDropped those of them lost because Emergencies was not
	// called often enough to keep the queue from overflowing.
	Emergencies        uint64
	EmergenciesDropped uint64
	// DCWKCErrors counts Exchange calls whose frame with the cyclic drift
	// compensation (FRMW of the reference's system time) came back with a
	// working counter other than the number of clocks with a system time.
	// Such a cycle is not failed for it (CycleResult.Err stays nil).
	DCWKCErrors uint64
	// MailboxDiscarded counts messages the cyclic mailbox polling emptied
	// out of a slave's send mailbox that were not CoE emergencies (late SDO
	// responses, other protocols, malformed messages): they are dropped.
	MailboxDiscarded uint64
	// AcyclicFrames counts the extra frames cycles sent for queued
	// acyclic datagrams (Master.QueueAcyclic) that found no room in the
	// cyclic frames, AcyclicLost those of them that did not come back.
	AcyclicFrames uint64
	AcyclicLost   uint64
}

// counters are the live, atomically updated figures behind Stats, so that
// another goroutine may read them while the cycle runs.
type counters struct {
	cycles    atomic.Uint64
	sent      atomic.Uint64
	lost      atomic.Uint64
	wkcErrors atomic.Uint64
	stale     atomic.Uint64
	invalid   atomic.Uint64
	foreign   atomic.Uint64
	mismatch  atomic.Uint64
	retries   atomic.Uint64

	emergencies        atomic.Uint64
	emergenciesDropped atomic.Uint64

	dcWKCErrors      atomic.Uint64
	mailboxDiscarded atomic.Uint64
	acyclicFrames    atomic.Uint64
	acyclicLost      atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Cycles:            c.cycles.Load(),
		FramesSent:        c.sent.Load(),
		LostFrames:        c.lost.Load(),
		WKCErrors:         c.wkcErrors.Load(),
		StaleFrames:       c.stale.Load(),
		InvalidFrames:     c.invalid.Load(),
		ForeignFrames:     c.foreign.Load(),
		MismatchedAnswers: c.mismatch.Load(),
		Retries:           c.retries.Load(),

		Emergencies:        c.emergencies.Load(),
		EmergenciesDropped: c.emergenciesDropped.Load(),

		DCWKCErrors:      c.dcWKCErrors.Load(),
		MailboxDiscarded: c.mailboxDiscarded.Load(),
		AcyclicFrames:    c.acyclicFrames.Load(),
		AcyclicLost:      c.acyclicLost.Load(),
	}
}
