package metrics

// Quantity is one figure a cycle sample measures: each has a histogram, a
// set of window gauges and a value of the quantity label of
// ecagent_window_samples, in Prometheus and in OpenTelemetry alike. The
// quantities are array indexes, so they start at 0 and NumQuantities
// counts them; Info says how each is named.
type Quantity int

// The quantities, in the order every listing of them follows.
const (
	// QuantityPeriod is the time between the wake-ups of consecutive
	// cycles (only between consecutive cycle numbers).
	QuantityPeriod Quantity = iota
	// QuantityJitter is |period − target|.
	QuantityJitter
	// QuantityWakeupLatency is wake − deadline.
	QuantityWakeupLatency
	// QuantityJobDuration is end − wake.
	QuantityJobDuration
	// QuantityFrameRTT is receive − send of a frame that came back.
	QuantityFrameRTT
	// QuantityDCTimeDifference is the absolute distributed-clock
	// difference, when measured.
	QuantityDCTimeDifference
	// QuantityDCControllerError is the absolute error of the controller
	// keeping the cycle on the distributed-clock reference time, when
	// measured.
	QuantityDCControllerError
	// QuantityCPULoad is the job duration divided by the target period.
	// It has no window of its own: its window statistics are those of
	// QuantityJobDuration divided by the target.
	QuantityCPULoad
	// NumQuantities is the number of quantities.
	NumQuantities
)

// numWindows is the number of quantities with a window of their own (all
// but QuantityCPULoad, the last).
const numWindows = QuantityCPULoad

// Unit is the base unit of a quantity's values.
type Unit int

// The units. The zero Unit is invalid.
const (
	// UnitSeconds: the quantity is a duration, measured in nanoseconds
	// and exported in seconds.
	UnitSeconds Unit = iota + 1
	// UnitRatio: the quantity is a fraction (the CPU load), exported as
	// a ratio.
	UnitRatio
)

// QuantityInfo says how a quantity is named and described. Every renderer
// takes its names and texts from here.
type QuantityInfo struct {
	// Label is the value of the quantity label of ecagent_window_samples,
	// e.g. "cycle_jitter". It is also the stem of every name of the
	// quantity: Prometheus "ecagent_<label>_seconds" and
	// "ecagent_<label>_window_seconds", OpenTelemetry "ecagent.<label>"
	// and "ecagent.<label>_window".
	Label string
	// Unit is the base unit of the exported values.
	Unit Unit
	// Histogram and Window are the Prometheus family names of the
	// histogram and of the window gauges.
	Histogram, Window string
	// Help and WindowHelp are the help texts of those two families.
	Help, WindowHelp string
}

// Help-text endings shared by the quantities.
const (
	histNote = " Classic buckets and native (sparse) buckets."
	winNote  = " over the last closed window; NaN when the window held no value."
)

// quantityTable lists the quantities in Quantity order.
func quantityTable() [NumQuantities]QuantityInfo {
	return [NumQuantities]QuantityInfo{
		QuantityPeriod: {"cycle_period", UnitSeconds, nameCyclePeriod, nameCyclePeriodWin,
			"Time between the wake-ups of consecutive cycles." + histNote,
			"Statistic of the cycle period" + winNote},
		QuantityJitter: {"cycle_jitter", UnitSeconds, nameCycleJitter, nameCycleJitterWin,
			"Absolute deviation of the cycle period from the target period, |period - target|." + histNote,
			"Statistic of the absolute cycle jitter |period - target|" + winNote},
		QuantityWakeupLatency: {"wakeup_latency", UnitSeconds, nameWakeupLatency, nameWakeupWin,
			"Time from a cycle's scheduled deadline to its wake-up." + histNote,
			"Statistic of the wake-up latency" + winNote},
		QuantityJobDuration: {"job_duration", UnitSeconds, nameJobDuration, nameJobWin,
			"Time from a cycle's wake-up to the end of its job." + histNote,
			"Statistic of the job duration" + winNote},
		QuantityFrameRTT: {"frame_rtt", UnitSeconds, nameFrameRTT, nameFrameRTTWin,
			"Round-trip time of the cyclic frame; lost frames are not observed." + histNote,
			"Statistic of the cyclic frame's round-trip time" + winNote},
		QuantityDCTimeDifference: {"dc_time_difference", UnitSeconds, nameDCTimeDiff, nameDCTimeDiffWin,
			"Absolute distributed-clock system time difference, in cycles that measured it." + histNote,
			"Statistic of the absolute distributed-clock system time difference" + winNote},
		QuantityDCControllerError: {"dc_controller_error", UnitSeconds, nameDCCtlErr, nameDCCtlErrWin,
			"Absolute error of the controller that keeps the master's cycle on the distributed-clock reference time, in cycles that measured it." + histNote,
			"Statistic of the absolute distributed-clock controller error" + winNote},
		QuantityCPULoad: {"cycle_cpu_load", UnitRatio, nameCPULoad, nameCPULoadWin,
			"Job duration as a fraction of the target cycle period, per cycle." + histNote,
			"Statistic of the cycle CPU load (job duration / target period)" + winNote},
	}
}

// Info returns how q is named and described; the zero QuantityInfo for a
// value outside [0, NumQuantities).
func (q Quantity) Info() QuantityInfo {
	if q < 0 || q >= NumQuantities {
		return QuantityInfo{}
	}
	return quantityTable()[q]
}

// String returns the quantity's label, e.g. "cycle_jitter".
func (q Quantity) String() string { return q.Info().Label }

// Counter is one counter the sample stream advances, in Prometheus and in
// OpenTelemetry alike. Like Quantity, counters are array indexes from 0;
// Info says how each is named.
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
	// carries it: the ring's drop counter does (Deriver.SetSegment).
	// It is the first of the segment counters, which the segment holds
	// as running totals (Deriver.SetSegment).
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

// numSampleCounters is the number of counters the samples advance: those
// before CounterRingDrops. The rest are segment counters.
const numSampleCounters = CounterRingDrops

// CounterInfo says how a counter is named and described.
type CounterInfo struct {
	// Stem is the counter's name without prefix and suffix, e.g.
	// "lost_frames": Prometheus "ecagent_<stem>_total", OpenTelemetry
	// "ecagent.<stem>".
	Stem string
	// Name is the Prometheus family name.
	Name string
	// Help is the family's help text.
	Help string
}

// counterTable lists the counters in Counter order.
func counterTable() [NumCounters]CounterInfo {
	return [NumCounters]CounterInfo{
		CounterCycles: {"cycles", nameCycles,
			"Cycles whose sample the agent received; cycles run = this + ecagent_sample_ring_drops_total."},
		CounterOverruns: {"cycle_overruns", nameOverruns,
			"Cycles whose job ended after the next deadline."},
		CounterSkipped: {"cycle_skipped", nameSkipped,
			"Cycle deadlines skipped because an overrunning cycle had already passed them."},
		CounterLostFrames: {"lost_frames", nameLostFrames,
			"Cycles in which a cyclic frame did not come back in time (a cycle of several frames counts once)."},
		CounterLateAnswers: {"late_answers", nameLateAnswers,
			"Cycles that discarded the first late answer of an earlier cycle that lost frames: the segment's answer to a frame counted lost, " +
				"matched as strictly as one in time, come after its deadline (delayed by the host or the segment, not dropped). " +
				"A cycle that lost frames makes one such cycle at most, so this never exceeds ecagent_lost_frames_total (late answers of several lost cycles " +
				"taken in one cycle count once); frame by frame, ecagent_cyclic_frames_lost_total less ecagent_cyclic_frames_late_total counts the frames dropped."},
		CounterWKCErrors: {"wkc_errors", nameWKCErrors,
			"Cycles whose working counter differed from the expected one."},
		CounterAcyclicCycles: {"acyclic_cycles", nameAcyclicCycles,
			"Cycles that carried acyclic datagrams (mailbox transfers, register access, recovery) in their frames or in one extra frame."},
		CounterAcyclicOverruns: {"acyclic_cycle_overruns", nameAcyclicOverruns,
			"Overruns among the cycles that carried acyclic datagrams: a rate well above that of ecagent_cycle_overruns_total is the acyclic work's doing, not the host's."},
		CounterYieldLate: {"cycle_yield_late", nameYieldLate,
			"Cycles woken after their deadline because the cycle's yield to the Go scheduler (every 5 ms, after a cycle with half a period to spare) returned late: the runtime hands the cycle thread's P back through another thread, on another CPU, and each of the two wake-ups is as slow as the woken CPU is to leave its idle state. The other late wake-ups are the host's timer and scheduler."},
		CounterRingDrops: {"sample_ring_drops", nameRingDrops,
			"Cycle samples dropped because the sample ring was full (the agent fell behind)."},
		CounterFramesSent: {"cyclic_frames_sent", nameFramesSent,
			"Cyclic frames the cycle sent, or tried to: a frame the link refused counts here and as lost (a cycle of two frames counts two)."},
		CounterFramesLost: {"cyclic_frames_lost", nameFramesLost,
			"Cyclic frames that did not come back in time, frame by frame; ecagent_lost_frames_total counts the cycles that lost one."},
		CounterFramesLate: {"cyclic_frames_late", nameFramesLate,
			"Cyclic frames counted lost whose answer came after all, late (delayed by the host or the segment), frame by frame and each once: " +
				"ecagent_cyclic_frames_lost_total less this counts the frames dropped."},
		CounterLinkReceived: {"link_frames_received", nameLinkReceived,
			"Frames that reached the cycle's socket (PACKET_STATISTICS), those the kernel then dropped included: what the socket's filter passed, " +
				"the segment's answers and frames from the master's own address. Each is an answer taken, a late answer, discarded " +
				"(ecagent_frames_discarded_total) or dropped (ecagent_link_kernel_drops_total). Frames the filter refused (another EtherType, " +
				"another source than the master's address) are counted nowhere: the interface's received frames less this are their number."},
		CounterLinkDrops: {"link_kernel_drops", nameLinkDrops,
			"Frames the kernel dropped because the cycle's socket receive queue was full (PACKET_STATISTICS): answers, which count as lost frames too, " +
				"or junk from the master's address. Frames the socket's filter refused are not among them."},
	}
}

// Info returns how c is named and described; the zero CounterInfo for a
// value outside [0, NumCounters).
func (c Counter) Info() CounterInfo {
	if c < 0 || c >= NumCounters {
		return CounterInfo{}
	}
	return counterTable()[c]
}

// String returns the counter's stem, e.g. "lost_frames".
func (c Counter) String() string { return c.Info().Stem }
