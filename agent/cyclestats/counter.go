package cyclestats

import "github.com/ecagent/ecagent/shm"

// Counter is one counter of the cycle: the samples advance the first
// ones, the segment holds the others as running totals (Counter.Segment).
// Every renderer exports each counter and names it after its row
// (Counter.Info). Like Quantity, counters are array indexes from 0.
type Counter int

// The counters, in the order every listing of them follows.
const (
	// CounterCycles counts the samples the agent received.
	CounterCycles Counter = iota
	// CounterOverruns counts cycles whose job ended after the next
	// deadline (shm.SampleOverrun).
	CounterOverruns
	// CounterSkipped counts deadlines an overrunning cycle skipped
	// (shm.Sample.Skipped).
	CounterSkipped
	// CounterLostFrames counts cyclic frames that did not come back
	// (shm.SampleLostFrame).
	CounterLostFrames
	// CounterLateAnswers counts cycles that discarded the first late
	// answer of an earlier cycle that lost frames (shm.SampleLateAnswer);
	// never more than CounterLostFrames.
	CounterLateAnswers
	// CounterWKCErrors counts cycles whose working counter differed from
	// the expected one (shm.SampleWKCMismatch).
	CounterWKCErrors
	// CounterAcyclicCycles counts cycles that carried acyclic datagrams
	// (mailbox, register access, recovery: shm.SampleAcyclic).
	CounterAcyclicCycles
	// CounterAcyclicOverruns counts the overruns among those cycles, so
	// that overruns the acyclic work caused can be told from the host's.
	CounterAcyclicOverruns
	// CounterYieldLate counts cycles woken late by the cycle's own yield
	// to the Go scheduler (shm.SampleYieldLate), so that the late
	// wake-ups the cycle process made itself can be told from the host's.
	CounterYieldLate
	// CounterRingDrops counts samples the sample ring dropped. No sample
	// carries it: the ring's drop counter does. It is the first of the
	// segment counters, which the segment holds as running totals
	// (ReadSegment).
	CounterRingDrops
	// CounterFramesSent counts the cyclic frames the cycle sent, or tried
	// to (a frame the link refused is counted sent and lost), frame by
	// frame (shm.Heartbeat.Frames).
	CounterFramesSent
	// CounterFramesLost counts the cyclic frames that did not come back in
	// time, frame by frame (shm.Heartbeat.Frames): a cycle of two frames
	// that loses both adds 2 here and 1 to CounterLostFrames.
	CounterFramesLost
	// CounterFramesLate counts those of CounterFramesLost whose answer
	// came late (shm.Heartbeat.Late), each once.
	CounterFramesLate
	// CounterLinkReceived counts the frames that reached the cycle's
	// socket, those the kernel then dropped included (a raw socket's
	// PACKET_STATISTICS, shm.Heartbeat.Link): what its kernel filter
	// passed.
	CounterLinkReceived
	// CounterLinkDrops counts the frames the kernel dropped because the
	// cycle's socket receive queue was full (shm.Heartbeat.Link).
	CounterLinkDrops
	// NumCounters is the number of counters.
	NumCounters
)

// firstSegment is the first segment counter: the samples advance those
// before it.
const firstSegment = CounterRingDrops

// numSegment is the number of segment counters.
const numSegment = int(NumCounters - firstSegment)

// Segment reports whether the segment holds c as a running total (read
// with ReadSegment) rather than the samples advancing it.
func (c Counter) Segment() bool { return c >= firstSegment && c < NumCounters }

// CounterInfo is a counter's row: what it is called and how it is
// described. Every renderer derives its names from it: Prometheus
// ecagent_<stem>_total, OpenTelemetry ecagent.<stem>, MQTT JSON <key>
// and Sparkplug Stats/<key>.
type CounterInfo struct {
	// Stem names the counter in the telemetry, e.g. "lost_frames".
	Stem string
	// Help describes it.
	Help string
	// Key names the counter in the MQTT statistics, e.g. "frames_lost";
	// "" leaves it out of them.
	Key string
	// JSON is the counter's place among the counts of the JSON stats
	// message (1 first), Sparkplug its place among the Sparkplug edge
	// node's statistics metrics, where the n-th has the alias of the
	// first plus n − 1 (1 first; 0: not published over Sparkplug). A
	// place once published never changes, so that subscribers' aliases
	// and keys stay; a new counter takes the next free place.
	JSON, Sparkplug int
	// Flag, when set, is the sample flag that advances the counter: each
	// sample carrying it adds one (Deriver.Derive). The counters without
	// one are counted otherwise: every sample, the skipped deadlines, the
	// overruns of acyclic cycles, or the segment's running totals.
	Flag shm.SampleFlags
}

// counterTable lists the counters in Counter order.
func counterTable() [NumCounters]CounterInfo {
	return [NumCounters]CounterInfo{
		CounterCycles: {Stem: "cycles", Key: "cycles", JSON: 1, Sparkplug: 1,
			Help: "Cycles whose sample the agent received; cycles run = this + ecagent_sample_ring_drops_total."},
		CounterOverruns: {Stem: "cycle_overruns", Key: "overruns", JSON: 2, Sparkplug: 2, Flag: shm.SampleOverrun,
			Help: "Cycles whose job ended after the next deadline."},
		CounterSkipped: {Stem: "cycle_skipped", Key: "skipped", JSON: 3,
			Help: "Cycle deadlines skipped because an overrunning cycle had already passed them."},
		CounterLostFrames: {Stem: "lost_frames", Key: "lost_frames", JSON: 4, Sparkplug: 3, Flag: shm.SampleLostFrame,
			Help: "Cycles in which a cyclic frame did not come back in time (a cycle of several frames counts once)."},
		CounterLateAnswers: {Stem: "late_answers", Key: "late_answers", JSON: 8, Sparkplug: 18, Flag: shm.SampleLateAnswer,
			Help: "Cycles that discarded the first late answer of an earlier cycle that lost frames: the segment's answer to a frame counted lost, " +
				"matched as strictly as one in time, come after its deadline (delayed by the host or the segment, not dropped). " +
				"A cycle that lost frames makes one such cycle at most, so this never exceeds ecagent_lost_frames_total (late answers of several lost cycles " +
				"taken in one cycle count once); frame by frame, ecagent_cyclic_frames_lost_total less ecagent_cyclic_frames_late_total counts the frames dropped."},
		CounterWKCErrors: {Stem: "wkc_errors", Key: "wkc_errors", JSON: 7, Sparkplug: 4, Flag: shm.SampleWKCMismatch,
			Help: "Cycles whose working counter differed from the expected one."},
		CounterAcyclicCycles: {Stem: "acyclic_cycles", Key: "acyclic_cycles", JSON: 9, Sparkplug: 19, Flag: shm.SampleAcyclic,
			Help: "Cycles that carried acyclic datagrams (mailbox transfers, register access, recovery) in their frames or in one extra frame."},
		CounterAcyclicOverruns: {Stem: "acyclic_cycle_overruns", Key: "acyclic_overruns", JSON: 10, Sparkplug: 20,
			Help: "Overruns among the cycles that carried acyclic datagrams: a rate well above that of ecagent_cycle_overruns_total is the acyclic work's doing, not the host's."},
		CounterYieldLate: {Stem: "cycle_yield_late", Key: "yield_late", JSON: 11, Sparkplug: 21, Flag: shm.SampleYieldLate,
			Help: "Cycles woken after their deadline because the cycle's yield to the Go scheduler returned late. The cycle yields from within its sleep when the runtime asks for its P (sysmon, for a P held 10 ms; a stop-the-world), and the runtime hands the cycle thread's P back through another thread, on another CPU, and each of the two wake-ups is as slow as the woken CPU is to leave its idle state. The other late wake-ups are the host's timer and scheduler."},
		CounterRingDrops: {Stem: "sample_ring_drops", Key: "ring_drops", JSON: 12, Sparkplug: 22,
			Help: "Cycle samples dropped because the sample ring was full (the agent fell behind)."},
		CounterFramesSent: {Stem: "cyclic_frames_sent", Key: "frames_sent", JSON: 5, Sparkplug: 16,
			Help: "Cyclic frames the cycle sent, or tried to: a frame the link refused counts here and as lost (a cycle of two frames counts two)."},
		CounterFramesLost: {Stem: "cyclic_frames_lost", Key: "frames_lost", JSON: 6, Sparkplug: 17,
			Help: "Cyclic frames that did not come back in time, frame by frame; ecagent_lost_frames_total counts the cycles that lost one."},
		CounterFramesLate: {Stem: "cyclic_frames_late",
			Help: "Cyclic frames counted lost whose answer came after all, late (delayed by the host or the segment), frame by frame and each once: " +
				"ecagent_cyclic_frames_lost_total less this counts the frames dropped."},
		CounterLinkReceived: {Stem: "link_frames_received",
			Help: "Frames that reached the cycle's socket (PACKET_STATISTICS), those the kernel then dropped included: what the socket's filter passed, " +
				"the segment's answers and frames from the master's own address. Each is an answer taken, a late answer, discarded " +
				"(ecagent_frames_discarded_total) or dropped (ecagent_link_kernel_drops_total). Frames the filter refused (another EtherType, " +
				"another source than the master's address) are counted nowhere: the interface's received frames less this are their number."},
		CounterLinkDrops: {Stem: "link_kernel_drops",
			Help: "Frames the kernel dropped because the cycle's socket receive queue was full (PACKET_STATISTICS): answers, which count as lost frames too, " +
				"or junk from the master's address. Frames the socket's filter refused are not among them."},
	}
}

// Info returns c's row; the zero CounterInfo for a value outside [0,
// NumCounters).
func (c Counter) Info() CounterInfo {
	if c < 0 || c >= NumCounters {
		return CounterInfo{}
	}
	return counterTable()[c]
}

// String returns the counter's stem, e.g. "lost_frames".
func (c Counter) String() string { return c.Info().Stem }

// SegmentCounts are the running totals the segment holds, read together
// at one drain of the sample ring (ReadSegment), indexed by Counter: the
// entries of the segment counters (Counter.Segment); the others are
// unused.
type SegmentCounts [NumCounters]uint64

// ReadSegment reads the running totals of the segment counters: the
// sample ring's drop counter and the cycle's totals on the heartbeat
// line. Totals stored one after the other are read in the order that
// keeps them consistent: the frames late before the frames lost (a frame
// is lost before it is late), lost before sent, the link's drops before
// what it received (shm.Heartbeat).
func ReadSegment(ring *shm.Ring[shm.Sample], hb *shm.Heartbeat) SegmentCounts {
	var s SegmentCounts
	s[CounterRingDrops] = ring.Drops()
	s[CounterFramesLate] = hb.Late()
	s[CounterFramesSent], s[CounterFramesLost] = hb.Frames()
	s[CounterLinkReceived], s[CounterLinkDrops] = hb.Link()
	return s
}
