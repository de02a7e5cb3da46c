package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecagent/ecagent/contract"
)

// The spike forensics' families (package agent/spikes): late cycles by
// the class of their largest cause, the time each class took from the
// cycle, and whether forensics runs.
const (
	nameCycleSpikes      = "ecagent_cycle_spikes_total"
	nameCycleSpikeBlame  = "ecagent_cycle_spike_blame_seconds_total"
	nameSpikesDropped    = "ecagent_cycle_spikes_unexplained_total"
	nameForensicsEnabled = "ecagent_forensics_enabled"
	labelCause           = "cause"
)

// ForensicsReason says whether the spike forensics run, and if not, why:
// the reason label of ecagent_forensics_enabled.
type ForensicsReason string

// The reasons.
const (
	ForensicsOn           ForensicsReason = "on"
	ForensicsDisabled     ForensicsReason = "disabled"
	ForensicsUnpinned     ForensicsReason = "unpinned"
	ForensicsNoTracefs    ForensicsReason = "no-tracefs"
	ForensicsNotPermitted ForensicsReason = "not-permitted"
	ForensicsFailed       ForensicsReason = "failed"
)

func forensicsReasons() []ForensicsReason {
	return []ForensicsReason{ForensicsOn, ForensicsDisabled, ForensicsUnpinned, ForensicsNoTracefs, ForensicsNotPermitted, ForensicsFailed}
}

func spikeSeries() []Series {
	return []Series{
		{Name: nameCycleSpikes, Type: TypeCounter, Labels: []string{labelCause},
			Help: "Late cycles (woken later than forensics.threshold of the period, or overrun) the forensics explained, by the class of " +
				"their largest cause: host, task, cycle-process, irq, softirq, kernel-work, kernel-memory, rt-throttling, unknown " +
				"(the trace lost events). The culprits' names are in the cycle-spike event and `ecagent spikes`.",
			Conditional: "once a spike of that class was explained (always with metrics.detail full)"},
		{Name: nameCycleSpikeBlame, Type: TypeCounter, Labels: []string{labelCause},
			Help:        "Time the late cycles lost to each class of cause: the part of each spike's excess (deadline to wake-up, to the job's end for an overrun) that class took.",
			Conditional: "once a spike of that class was explained (always with metrics.detail full)"},
		{Name: nameSpikesDropped, Type: TypeCounter,
			Help: "Late cycles the forensics could not explain because they came faster than it could (its queue was full)."},
		{Name: nameForensicsEnabled, Type: TypeGauge, Labels: []string{labelReason},
			Help: "Whether the spike forensics run, as a state set: 1 for the current reason (on; disabled by forensics.enabled; unpinned: " +
				"cycle.core is -1; no-tracefs; not-permitted: tracefs needs CAP_SYS_ADMIN or a tracefs group; failed); with metrics.detail full also 0 for the others. /readyz's details say why.",
			Conditional: "once the agent started"},
	}
}

// spikeSeriesSet holds the forensics' families.
type spikeSeriesSet struct {
	spikes, blame *prometheus.CounterVec
	dropped       prometheus.Counter
	enabled       *prometheus.GaugeVec
	detail        Detail
}

// newSpikeSeries registers the forensics' families; with DetailFull every
// class starts at 0, with DetailStandard a class appears with its first
// spike.
func newSpikeSeries(b *builder, detail Detail) spikeSeriesSet {
	s := spikeSeriesSet{
		spikes:  b.counterVec(nameCycleSpikes, labelCause),
		blame:   b.counterVec(nameCycleSpikeBlame, labelCause),
		dropped: b.counter(nameSpikesDropped),
		enabled: b.gaugeVec(nameForensicsEnabled, labelReason),
		detail:  detail,
	}
	if !detail.full() {
		return s
	}
	for _, c := range contract.SpikeClasses() {
		s.spikes.WithLabelValues(c.String())
		s.blame.WithLabelValues(c.String())
	}
	return s
}

// CycleSpike counts one explained spike: under its largest cause's class,
// and the time of each of its causes under the cause's class.
func (r *Registry) CycleSpike(sp *contract.CycleSpike) {
	r.spikes.spikes.WithLabelValues(sp.Top().String()).Inc()
	for _, c := range sp.Causes {
		r.spikes.blame.WithLabelValues(c.Class.String()).Add(c.Time.Seconds())
	}
}

// SetSpikesUnexplained sets the count of late cycles the forensics had no
// room for (a running total).
func (r *Registry) SetSpikesUnexplained(total uint64) {
	// A counter that only moves forward: add what is new.
	r.spikesDroppedMu.Lock()
	defer r.spikesDroppedMu.Unlock()
	if total > r.spikesDroppedSeen {
		r.spikes.dropped.Add(float64(total - r.spikesDroppedSeen))
		r.spikesDroppedSeen = total
	}
}

// SetForensics says whether the spike forensics run, and if not why.
func (r *Registry) SetForensics(reason ForensicsReason) {
	for _, fr := range forensicsReasons() {
		switch {
		case fr == reason:
			r.spikes.enabled.WithLabelValues(string(fr)).Set(1)
		case r.spikes.detail.full():
			r.spikes.enabled.WithLabelValues(string(fr)).Set(0)
		default:
			r.spikes.enabled.DeleteLabelValues(string(fr))
		}
	}
}
