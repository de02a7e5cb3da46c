package master

import "sync/atomic"

// Stats counts what the master has seen since New. Cycles, LostFrames,
// WKCErrors and DCWKCErrors count the application's Exchange calls only:
// the frames that bring-up exchanges to keep outputs valid during state
// changes are not counted there. StaleFrames, InvalidFrames, Retries,
// Emergencies and MailboxDiscarded count every frame.
type Stats struct {
	// Cycles counts Exchange calls.
	Cycles uint64 `json:"cycles"`
	// FramesSent counts the cyclic frames of those calls, sent or refused
	// by the link; LostFrames those that did not come back before their
	// deadline (a cycle split over n frames can lose up to n; a frame the
	// link refused is lost).
	FramesSent uint64 `json:"frames_sent"`
	LostFrames uint64 `json:"lost_frames"`
	// LateFrames counts those of LostFrames whose answer came after all,
	// late (StaleFrames has them too), each once: LostFrames − LateFrames
	// frames were dropped (or their answers are older than 256 frames).
	LateFrames uint64 `json:"late_frames"`
	// WKCErrors counts cycles that lost no frame but whose working counter
	// was not the expected one (a cycle with a lost frame counts there).
	WKCErrors uint64 `json:"wkc_errors"`
	// StaleFrames counts late answers: the segment's answer (the rule
	// an answer in time meets: the source, every datagram's command,
	// index, address and length) to a frame that was not answered by the
	// end of its exchange, come later, under an index not handed out again
	// since (256 frames), once per frame. Bring-up's exchanges and the
	// extra acyclic frame count here too; CycleResult.Stale counts only
	// the first late answer of a cycle that counted frames lost. Bus
	// transactions, which keep no record of earlier frames, count here any
	// frame with another index or command than the one they await.
	StaleFrames uint64 `json:"stale_frames"`
	// InvalidFrames counts received frames that were not EtherCAT
	// datagram frames at all (truncated, wrong length fields, a datagram
	// chain that overruns the frame).
	InvalidFrames uint64 `json:"invalid_frames"`
	// ForeignFrames counts EtherCAT frames that did not come from the
	// segment: their source address is neither the master's nor the
	// master's with the bit ESC port 0 sets (wire.FromSegment). A raw
	// socket with link.Config.OwnFramesOnly never lets one through.
	ForeignFrames uint64 `json:"foreign_frames"`
	// MismatchedAnswers counts frames from the segment's address that
	// answer no frame sent: not one in flight (another count, command,
	// index, address or length of a datagram), nor late to a lost one; a
	// second copy of an answer counts here too. Forged, corrupted or
	// duplicated frames, or answers older than 256 frames. None of them
	// counts for anything else.
	MismatchedAnswers uint64 `json:"mismatched_answers"`
	// Retries counts bring-up frames sent again after going unanswered.
	Retries uint64 `json:"retries"`
	// Emergencies counts CoE emergency messages received from slaves;
	// EmergenciesDropped those of them lost because Emergencies was not
	// called often enough to keep the queue from overflowing.
	Emergencies        uint64 `json:"emergencies"`
	EmergenciesDropped uint64 `json:"emergencies_dropped"`
	// DCWKCErrors counts Exchange calls whose frame with the cyclic drift
	// compensation (FRMW of the reference's system time) came back with a
	// working counter other than the number of clocks with a system time.
	// Such a cycle is not failed for it (CycleResult.Err stays nil).
	DCWKCErrors uint64 `json:"dc_wkc_errors"`
	// MailboxDiscarded counts messages the cyclic mailbox polling emptied
	// out of a slave's send mailbox that were not CoE emergencies (late SDO
	// responses, other protocols, malformed messages): they are dropped.
	MailboxDiscarded uint64 `json:"mailbox_discarded"`
	// AcyclicFrames counts the extra frames cycles sent for queued
	// acyclic datagrams (Master.QueueAcyclic) that found no room in the
	// cyclic frames, AcyclicLost those of them that did not come back.
	AcyclicFrames uint64 `json:"acyclic_frames"`
	AcyclicLost   uint64 `json:"acyclic_lost"`
}

// counters are the live, atomically updated figures behind Stats, so that
// another goroutine may read them while the cycle runs.
type counters struct {
	cycles    atomic.Uint64
	sent      atomic.Uint64
	lost      atomic.Uint64
	late      atomic.Uint64
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
		LateFrames:        c.late.Load(),
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
