package cyclestats

// Quantity is one figure a cycle sample measures. Every renderer gives
// each quantity a histogram (or distribution), window statistics and a
// count of the values behind them, and names them after its row
// (Quantity.Info). The quantities are array indexes, so they start at 0
// and NumQuantities counts them.
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

// NumWindowed is the number of quantities with a window of their own:
// all but QuantityCPULoad, the last.
const NumWindowed = int(QuantityCPULoad)

// Unit is the base unit of a quantity's values.
type Unit int

// The units. The zero Unit is invalid.
const (
	// UnitSeconds: the quantity is a duration, measured in nanoseconds
	// and exported in seconds (Prometheus, OpenTelemetry) or nanoseconds
	// (MQTT).
	UnitSeconds Unit = iota + 1
	// UnitRatio: the quantity is a fraction (the CPU load), exported as
	// a ratio.
	UnitRatio
)

// QuantityInfo is a quantity's row: what it is called and how it is
// described. Every renderer derives its names from it: Prometheus
// ecagent_<stem>_seconds and ecagent_<stem>_window_seconds (_ratio for a
// ratio), OpenTelemetry ecagent.<stem> and ecagent.<stem>_window, MQTT
// JSON <key>_ns (<key> for a ratio) and Sparkplug Stats/<key>_<stat>_ns.
type QuantityInfo struct {
	// Stem names the quantity in the telemetry, e.g. "cycle_jitter"; it
	// is also the value of the quantity label (attribute) of the window
	// sample counts.
	Stem string
	// Unit is the base unit of the exported values.
	Unit Unit
	// Help describes the quantity's histogram, WindowHelp its window
	// statistics.
	Help, WindowHelp string
	// Key names the quantity in the MQTT statistics, e.g. "jitter".
	Key string
	// Sparkplug is the place of each window statistic of the quantity
	// among the Sparkplug edge node's statistics metrics (see
	// CounterInfo), indexed by Stat; 0 for those not published.
	Sparkplug [NumStats]int
}

// Help-text endings shared by the quantities.
const (
	histNote = " Classic buckets and native (sparse) buckets."
	winNote  = " over the last closed window; NaN when the window held no value."
)

// quantityTable lists the quantities in Quantity order.
func quantityTable() [NumQuantities]QuantityInfo {
	return [NumQuantities]QuantityInfo{
		QuantityPeriod: {Stem: "cycle_period", Unit: UnitSeconds, Key: "period",
			Help:       "Time between the wake-ups of consecutive cycles." + histNote,
			WindowHelp: "Statistic of the cycle period" + winNote,
			Sparkplug:  [NumStats]int{StatMin: 5, StatMax: 6}},
		QuantityJitter: {Stem: "cycle_jitter", Unit: UnitSeconds, Key: "jitter",
			Help:       "Absolute deviation of the cycle period from the target period, |period - target|." + histNote,
			WindowHelp: "Statistic of the absolute cycle jitter |period - target|" + winNote,
			Sparkplug:  [NumStats]int{StatMax: 7, StatP99: 8}},
		QuantityWakeupLatency: {Stem: "wakeup_latency", Unit: UnitSeconds, Key: "wakeup_latency",
			Help:       "Time from a cycle's scheduled deadline to its wake-up." + histNote,
			WindowHelp: "Statistic of the wake-up latency" + winNote,
			Sparkplug:  [NumStats]int{StatP99: 9}},
		QuantityJobDuration: {Stem: "job_duration", Unit: UnitSeconds, Key: "job",
			Help:       "Time from a cycle's wake-up to the end of its job." + histNote,
			WindowHelp: "Statistic of the job duration" + winNote,
			Sparkplug:  [NumStats]int{StatMax: 10}},
		QuantityFrameRTT: {Stem: "frame_rtt", Unit: UnitSeconds, Key: "frame_rtt",
			Help:       "Round-trip time of the cyclic frame; lost frames are not observed." + histNote,
			WindowHelp: "Statistic of the cyclic frame's round-trip time" + winNote,
			Sparkplug:  [NumStats]int{StatP99: 11}},
		QuantityDCTimeDifference: {Stem: "dc_time_difference", Unit: UnitSeconds, Key: "dc_difference",
			Help:       "Absolute distributed-clock system time difference, in cycles that measured it." + histNote,
			WindowHelp: "Statistic of the absolute distributed-clock system time difference" + winNote,
			Sparkplug:  [NumStats]int{StatP99: 14}},
		QuantityDCControllerError: {Stem: "dc_controller_error", Unit: UnitSeconds, Key: "dc_controller_error",
			Help:       "Absolute error of the controller that keeps the master's cycle on the distributed-clock reference time, in cycles that measured it." + histNote,
			WindowHelp: "Statistic of the absolute distributed-clock controller error" + winNote,
			Sparkplug:  [NumStats]int{StatP99: 15}},
		QuantityCPULoad: {Stem: "cycle_cpu_load", Unit: UnitRatio, Key: "cpu_load",
			Help:       "Job duration as a fraction of the target cycle period, per cycle." + histNote,
			WindowHelp: "Statistic of the cycle CPU load (job duration / target period)" + winNote,
			Sparkplug:  [NumStats]int{StatMean: 12, StatMax: 13}},
	}
}

// Info returns q's row; the zero QuantityInfo for a value outside [0,
// NumQuantities).
func (q Quantity) Info() QuantityInfo {
	if q < 0 || q >= NumQuantities {
		return QuantityInfo{}
	}
	return quantityTable()[q]
}

// String returns the quantity's stem, e.g. "cycle_jitter".
func (q Quantity) String() string { return q.Info().Stem }

// Stat is one statistic of a window: what every renderer of the window
// statistics exports of each quantity.
type Stat int

// The window statistics, in the order every listing of them follows.
// Percentiles are nearest-rank (package agent/cyclestats/stats), so each is a
// value that was measured.
const (
	StatMin Stat = iota
	StatMax
	StatMean
	StatStdDev
	StatP50
	StatP90
	StatP99
	StatP999
	// NumStats is the number of window statistics.
	NumStats
)

// String names the statistic as the renderers do: "min", "max", "mean",
// "stddev", "p50", "p90", "p99", "p999".
func (s Stat) String() string {
	names := [NumStats]string{"min", "max", "mean", "stddev", "p50", "p90", "p99", "p999"}
	if s < 0 || s >= NumStats {
		return ""
	}
	return names[s]
}
