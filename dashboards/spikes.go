package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// spikeBlame stacks, by class of cause, the time the late cycles lost:
// what delayed the cycle.
func spikeBlame(sel string) *timeseries.PanelBuilder {
	return timeSeries("What delayed the cycle", unitSeconds,
		"Time the late cycles (woken later than forensics.threshold of the period, or overrun) lost in each interval, stacked by the class of its cause: "+
			"host (the timer fired late: a halted or preempted vCPU, an SMI), task (another task on the cycle's core), cycle-process, irq, softirq, kernel-work, "+
			"kernel-memory, rt-throttling, unknown (the trace lost events). The culprits' names: `ecagent spikes` on the host, or its cycle-spike events. "+
			"Empty while forensics are off (ecagent_forensics_enabled says why).").
		WithTarget(query(fmt.Sprintf("sum by (cause) (increase(%s[%s])) > 0", series("ecagent_cycle_spike_blame_seconds_total", sel), rateInterval),
			"{{cause}}")).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).
		FillOpacity(60).
		Min(0)
}

// spikeCount counts the late cycles by their largest cause, and shows
// whether forensics run.
func spikeCount(sel string) *timeseries.PanelBuilder {
	off := "forensics off ({{reason}})"
	return timeSeries("Late cycles by cause", unitCount,
		"Late cycles in each interval by the class of their largest cause, and those forensics had no time for; a line at 1 when forensics are off, labelled with why.").
		WithTarget(query(fmt.Sprintf("sum by (cause) (increase(%s[%s])) > 0", series("ecagent_cycle_spikes_total", sel), rateInterval), "{{cause}}")).
		WithTarget(query(fmt.Sprintf("increase(%s[%s]) > 0", series("ecagent_cycle_spikes_unexplained_total", sel), rateInterval), "not explained (forensics behind)")).
		WithTarget(query(series("ecagent_forensics_enabled", sel, `reason!="on"`)+" == 1", off)).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).
		OverrideByName(off, []dashboard.DynamicConfigValue{
			{Id: "custom.stacking", Value: map[string]any{"mode": "none"}},
			{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": "orange"}},
		}).
		Min(0)
}

// spikeAnnotation marks the late cycles on every time series panel, by
// the class of their largest cause.
func spikeAnnotation(sel string) *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().
		Name("Cycle spikes").
		Datasource(datasource()).
		Enable(true).
		IconColor("purple").
		Expr(fmt.Sprintf("sum by (%s, cause) (increase(%s[1m])) > 0", byHost, series("ecagent_cycle_spikes_total", sel))).
		Step("1m").
		TitleFormat("late cycles: {{cause}}").
		TextFormat("{{host}}: late cycles whose largest cause is {{cause}} (ecagent spikes on the host names the culprits)").
		TagKeys("cause,host")
}
