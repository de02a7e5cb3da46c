package metrics

import (
	"testing"

	"github.com/ecagent/ecagent/agent/cyclestats"
)

// The Prometheus names of the cycle's quantities and counters that the
// tests look up, spelled out: TestCycleNames holds the rule that derives
// them from the rows to these spellings.
const (
	nameCyclePeriod    = "ecagent_cycle_period_seconds"
	nameCycleJitterWin = "ecagent_cycle_jitter_window_seconds"
	nameWakeupLatency  = "ecagent_wakeup_latency_seconds"
	nameWakeupWin      = "ecagent_wakeup_latency_window_seconds"
	nameJobWin         = "ecagent_job_duration_window_seconds"
	nameFrameRTT       = "ecagent_frame_rtt_seconds"
	nameFrameRTTWin    = "ecagent_frame_rtt_window_seconds"
	nameDCTimeDiff     = "ecagent_dc_time_difference_seconds"
	nameDCTimeDiffWin  = "ecagent_dc_time_difference_window_seconds"
	nameDCCtlErr       = "ecagent_dc_controller_error_seconds"
	nameDCCtlErrWin    = "ecagent_dc_controller_error_window_seconds"
	nameCPULoadWin     = "ecagent_cycle_cpu_load_window_ratio"
	nameCycles         = "ecagent_cycles_total"
	nameOverruns       = "ecagent_cycle_overruns_total"
	nameSkipped        = "ecagent_cycle_skipped_total"
	nameLostFrames     = "ecagent_lost_frames_total"
	nameLateAnswers    = "ecagent_late_answers_total"
	nameWKCErrors      = "ecagent_wkc_errors_total"
	nameAcyclicCycles  = "ecagent_acyclic_cycles_total"
	nameAcyclicOver    = "ecagent_acyclic_cycle_overruns_total"
	nameYieldLate      = "ecagent_cycle_yield_late_total"
	nameRingDrops      = "ecagent_sample_ring_drops_total"
	nameFramesSent     = "ecagent_cyclic_frames_sent_total"
	nameFramesLost     = "ecagent_cyclic_frames_lost_total"
)

// TestCycleNames checks the rule that names the cycle's figures after
// their rows: a histogram ecagent_<stem>_seconds (or _ratio), its window
// gauges ecagent_<stem>_window_seconds, a counter ecagent_<stem>_total.
func TestCycleNames(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{HistogramName(cyclestats.QuantityPeriod), nameCyclePeriod},
		{WindowName(cyclestats.QuantityJitter), nameCycleJitterWin},
		{HistogramName(cyclestats.QuantityWakeupLatency), nameWakeupLatency},
		{WindowName(cyclestats.QuantityCPULoad), nameCPULoadWin},
		{HistogramName(cyclestats.QuantityCPULoad), "ecagent_cycle_cpu_load_ratio"},
		{CounterName(cyclestats.CounterAcyclicOverruns), nameAcyclicOver},
		{CounterName(cyclestats.CounterRingDrops), nameRingDrops},
		{CounterName(cyclestats.CounterFramesLost), nameFramesLost},
	} {
		if tt.got != tt.want {
			t.Errorf("derived %s, want %s", tt.got, tt.want)
		}
	}
	if len(WindowStats()) != int(cyclestats.NumStats) || WindowStats()[cyclestats.StatP999] != "p999" {
		t.Errorf("WindowStats() = %v", WindowStats())
	}
}
