//lint:file-ignore SA1019 The SDK deprecates the classic dashboard model for dashboardv2, which only Grafana 12+ with its new dashboard API imports; the classic JSON model is what every Grafana version imports and file-provisions.

package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Dashboard UIDs; the fleet table links to the host detail by its UID.
const (
	FleetUID = "ecagent-fleet"
	HostUID  = "ecagent-host"
)

// worstN is how many hosts the "worst hosts" panel ranks.
const worstN = 10

// tags mark both dashboards, so each links to the other.
func tags() []string { return []string{"ecagent", "ethercat"} }

// newDashboard starts a dashboard of the set: title, uid and description,
// refresh interval and default time range (from until now), the link to
// the others, the bus event annotation of sel, and the datasource, site,
// line and host variables (multi: several of each may be chosen, and the
// variables' queries match with =~).
func newDashboard(title, uid, description, refresh, from string, multi bool, sel string) *dashboard.DashboardBuilder {
	op := "="
	if multi {
		op = "=~"
	}
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags(tags()).
		Editable().
		Refresh(refresh).
		Time(from, "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Link(dashboard.NewDashboardLinkBuilder("ecagent dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).Tags([]string{"ecagent"}).
			AsDropdown(true).IncludeVars(true).KeepTime(true)).
		WithVariable(datasourceVariable()).
		WithVariable(labelVariable("site", "Site", "", multi)).
		WithVariable(labelVariable("line", "Line", `{site`+op+`"$site"}`, multi)).
		WithVariable(labelVariable("host", "Host", `{site`+op+`"$site", line`+op+`"$line"}`, multi)).
		Annotation(busEventAnnotation(sel)).
		Annotation(spikeAnnotation(sel))
}

// FleetOverview builds the fleet overview dashboard.
func FleetOverview() (dashboard.Dashboard, error) {
	sel := fleetSelector
	return withPanelIDs(newDashboard("ecagent / fleet overview", FleetUID,
		"Real-time quality of every ecagent host: cycle jitter, CPU load, bus errors, slave states and host tuning.",
		"1m", "now-6h", true, sel).
		WithRow(dashboard.NewRowBuilder("Fleet now")).
		WithPanel(fleetStat("Agents", "Agents reporting (ecagent_build_info).",
			fmt.Sprintf("count(%s)", series("ecagent_build_info", sel)), nil).Span(2)).
		WithPanel(fleetStat("Agents not reporting", "Agents that reported in the dashboard's time range and do not now (the scrape fails: the agent or its host is down, or unreachable). They stay listed in the hosts table, marked stopped.",
			fmt.Sprintf("count(%s) or vector(0)", silentAgents(sel)), thresholds(1, 10)).Span(2)).
		WithPanel(fleetStat("Cycle processes down", "Agents whose real-time cycle process is not running.",
			fmt.Sprintf("count(%s == 0) or vector(0)", series("ecagent_cycle_process_up", sel)), thresholds(1, 5)).Span(2)).
		WithPanel(fleetStat("Slaves not in OP", "Slaves of all selected hosts that are not in OP without an error: lost, refused (another device at their position), or answering in another state or with the AL error bit set.",
			fmt.Sprintf("sum(%s) or vector(0)", series("host:ecagent_slaves_not_operational:count", sel)), thresholds(1, 10)).Span(2)).
		WithPanel(fleetStat("Slaves not answering", "Slaves of all selected hosts that do not answer: lost, or another device answers at their position.",
			fmt.Sprintf("sum(%s) or vector(0)", series("host:ecagent_slaves_not_answering:count", sel)), thresholds(1, 10)).Span(2)).
		WithPanel(fleetStat("Failed RT checks", "Host real-time checks that fail now, summed over the selected hosts.",
			fmt.Sprintf("sum(%s) or vector(0)", series("host:ecagent_rt_checks_failed:count", sel)), thresholds(1, 10)).Span(2)).
		WithPanel(fleetStat("Lost frames/s", "Cycles that lost a frame per second over the last 5 minutes (recorded), all selected hosts.",
			fmt.Sprintf("sum(%s) or vector(0)", series("host:ecagent_lost_frames:rate5m", sel)), thresholds(1e-9, 1)).
			Unit(unitPerSec).Span(4)).
		WithPanel(fleetStat("Worst p99 jitter", "The largest 5-minute p99 cycle jitter of any selected host over the dashboard's time range (recorded: host:ecagent_cycle_jitter_p99_5m:period_ratio), as a share of that host's cycle period: orange from 5 %, red from 10 % (the default jitter budget of the alert rules).",
			fmt.Sprintf("max(max_over_time(%s[%s]))", series("host:ecagent_cycle_jitter_p99_5m:period_ratio", sel), dashRange), thresholds(0.05, 0.1)).
			Unit(unitRatio).Span(4)).
		WithPanel(fleetStat("Drives in fault", "CiA 402 drives of all selected hosts that are in fault now.",
			fmt.Sprintf("sum(%s) or vector(0)", series("host:ecagent_drives_in_fault:count", sel)), thresholds(1, 5)).Span(2)).
		WithPanel(fleetStat("Worst p99 DC difference", "The largest 5-minute p99 distributed-clock system time difference of any selected host over the dashboard's time range (recorded); EtherCAT keeps it under 1 µs: orange from 500 ns, red from 1 µs.",
			fmt.Sprintf("max(max_over_time(%s[%s]))", series("host:ecagent_dc_time_difference_seconds:p99_5m", sel), dashRange), thresholds(500e-9, 1e-6)).
			Unit(unitSeconds).Span(2)).
		WithRow(dashboard.NewRowBuilder("Lines")).
		WithPanel(linesTable(sel)).
		WithPanel(lineJitter(sel)).
		WithRow(dashboard.NewRowBuilder("Hosts")).
		WithPanel(hostsTable(sel)).
		WithRow(dashboard.NewRowBuilder("Jitter")).
		WithPanel(worstHosts(sel)).
		WithPanel(weekOverWeek(sel)).
		WithPanel(timeSeries("p99 cycle jitter by host, share of the cycle period", unitRatio,
			"99th percentile of |period − target| per host over 5 minutes (recorded: host:ecagent_cycle_jitter_p99_5m:period_ratio), as a share of the host's cycle period: orange from 5 %, red from 10 %.").
			WithTarget(query(series("host:ecagent_cycle_jitter_p99_5m:period_ratio", sel), "{{site}} / {{line}} / {{host}}")).
			Thresholds(thresholds(0.05, 0.1)).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
			Height(9).Span(24)).
		WithPanel(timeSeries("Exact maximum cycle jitter by host, share of the cycle period", unitRatio,
			"The largest |period − target| of any cycle in 5 minutes, from the exact window statistics (histograms blur the maximum; recorded: host:ecagent_cycle_jitter_window_max5m:period_ratio), as a share of the host's cycle period: orange from 25 %, red from 50 %.").
			WithTarget(query(series("host:ecagent_cycle_jitter_window_max5m:period_ratio", sel), "{{site}} / {{line}} / {{host}}")).
			Thresholds(thresholds(0.25, 0.5)).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
			Height(9).Span(24)).
		Build())
}

// fleetStat is one number over all selected hosts.
func fleetStat(title, description, expr string, th *dashboard.ThresholdsConfigBuilder) *stat.PanelBuilder {
	s := stat.NewPanelBuilder().Title(title).Description(description).
		Datasource(datasource()).
		WithTarget(query(expr, title)).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		ColorMode(common.BigValueColorModeBackground).
		GraphMode(common.BigValueGraphModeArea).
		Height(4).Span(3)
	if th != nil {
		s = s.Thresholds(th)
	}
	return s
}

// hostColumn is one column of the hosts table: an instant query grouped by
// site, line and host.
type hostColumn struct {
	ref, name, unit, expr string
	orange, red           float64                  // thresholds; 0 leaves the column uncoloured
	mapping               []dashboard.ValueMapping // value texts and colours, if any
}

// silentAgents selects the agents that reported in the dashboard's time
// range and are not reporting now: once a scrape fails, Prometheus marks
// the agent's series stale, so the heartbeat ecagent_build_info is gone
// from an instant query but still in the range.
func silentAgents(sel string) string {
	info := series("ecagent_build_info", sel)
	return fmt.Sprintf("group by (%s) (max_over_time(%s[%s]))\nunless\ngroup by (%s) (%s)", byHost, info, dashRange, byHost, info)
}

// reporting maps the hosts table's agent column: 1 reporting now, 0 it
// reported in the time range and stopped.
func reporting() []dashboard.ValueMapping {
	return valueText([3]string{"1", "reporting", "green"}, [3]string{"0", "STOPPED", "red"})
}

// hostsTable is one row per host with the figures over the dashboard's
// time range; a click on the host opens its detail dashboard.
func hostsTable(sel string) *table.PanelBuilder {
	columns := []hostColumn{
		{ref: "J", name: "agent", unit: "none", mapping: reporting(),
			expr: fmt.Sprintf("group by (%s) (%s)\nor\n0 * group by (%s) (max_over_time(%s[%s]))", byHost, series("ecagent_build_info", sel), byHost, series("ecagent_build_info", sel), dashRange)},
		{ref: "K", name: "cycle period", unit: unitSeconds,
			expr: fmt.Sprintf("max by (%s) (max_over_time(%s[%s]))", byHost, series("ecagent_cycle_target_seconds", sel), dashRange)},
		{ref: "A", name: "p99 jitter", unit: unitSeconds,
			expr: worstOver("host:ecagent_cycle_jitter_seconds:p99_5m", sel)},
		{ref: "L", name: "p99 jitter / period", unit: unitRatio, orange: 0.05, red: 0.1,
			expr: worstOver("host:ecagent_cycle_jitter_p99_5m:period_ratio", sel)},
		{ref: "B", name: "max jitter", unit: unitSeconds,
			expr: worstOver("host:ecagent_cycle_jitter_window_seconds:max5m", sel)},
		{ref: "M", name: "max jitter / period", unit: unitRatio, orange: 0.25, red: 0.5,
			expr: worstOver("host:ecagent_cycle_jitter_window_max5m:period_ratio", sel)},
		{ref: "C", name: "p99 vs baseline", unit: "none", orange: 1.2, red: 1.5,
			expr: fmt.Sprintf("max by (%s) (%s)", byHost, series("host:ecagent_cycle_jitter_p99_1h:baseline_ratio", sel))},
		{ref: "D", name: "cycle CPU load max", unit: unitRatio, orange: 0.5, red: 0.8,
			expr: fmt.Sprintf("max by (%s) (max_over_time(%s[%s]))", byHost, series("ecagent_cycle_cpu_load_window_ratio", sel, `stat="max"`), dashRange)},
		{ref: "E", name: "host CPU busy", unit: unitRatio, orange: 0.7, red: 0.9,
			expr: fmt.Sprintf("max by (%s) (avg_over_time(%s[%s]))", byHost, series("ecagent_host_cpu_busy_ratio", sel), dashRange)},
		{ref: "F", name: "lost frames/s", unit: unitPerSec, orange: 1e-9, red: 0.01,
			expr: averageOver("host:ecagent_lost_frames:rate5m", sel)},
		{ref: "O", name: "frames lost (share)", unit: unitRatio, orange: 1e-9, red: 1e-4,
			expr: averageOver("host:ecagent_cyclic_frames_lost:ratio_rate5m", sel)},
		{ref: "G", name: "WKC errors/s", unit: unitPerSec, orange: 1e-9, red: 0.01,
			expr: averageOver("host:ecagent_wkc_errors:rate5m", sel)},
		{ref: "H", name: "slaves not in OP", unit: unitCount, orange: 1, red: 3,
			expr: series("host:ecagent_slaves_not_operational:count", sel)},
		{ref: "N", name: "slaves not answering", unit: unitCount, orange: 1, red: 3,
			expr: series("host:ecagent_slaves_not_answering:count", sel)},
		{ref: "I", name: "failed RT checks", unit: unitCount, orange: 1, red: 3,
			expr: series("host:ecagent_rt_checks_failed:count", sel)},
	}
	t := table.NewPanelBuilder().
		Title("Hosts").
		Description("One row per host that reported in the dashboard's time range, also one that stopped (agent STOPPED): the worst 5-minute p99 jitter of the range (histogram) and the largest jitter of any cycle (exact window statistics), each also as a share of the host's cycle period (coloured: the same threshold fits every period); the hourly p99 against the host's baseline (by default one week earlier; 1.5 is where EcagentJitterP99Regressed fires); rates averaged over the range; slaves and checks as of now. Every figure but the gauges is a recorded series of deploy/prometheus/ecagent.rules.yml. Click a host for its detail.").
		Datasource(datasource()).
		Height(12).Span(24).
		CellHeight(common.TableCellHeightSm).
		SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName("p99 jitter").Desc(true)}).
		OverrideByName("host", []dashboard.DynamicConfigValue{{Id: "links", Value: []map[string]any{{
			"title": "Host detail",
			"url":   "/d/" + HostUID + "?var-datasource=${datasource}&var-site=${__data.fields.site}&var-line=${__data.fields.line}&var-host=${__data.fields.host}&${__url_time_range}",
		}}}})
	return withColumns(t, columns, "site", "line", "host")
}

// withColumns adds columns to a table that starts with the label columns
// labels: one instant query a column, named, placed after the labels, with
// its unit, value mapping and coloured thresholds; the queries' rows
// merged into one row per set of labels.
func withColumns(t *table.PanelBuilder, columns []hostColumn, labels ...string) *table.PanelBuilder {
	rename := map[string]any{}
	order := map[string]any{}
	for i, l := range labels {
		order[l] = i
	}
	first := len(labels)
	for i, c := range columns {
		t = t.WithTarget(tableQuery(c.ref, c.expr))
		rename["Value #"+c.ref] = c.name
		order["Value #"+c.ref] = first + i
		props := []dashboard.DynamicConfigValue{{Id: "unit", Value: c.unit}}
		if c.mapping != nil {
			props = append(props,
				dashboard.DynamicConfigValue{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background", "mode": "basic"}},
				dashboard.DynamicConfigValue{Id: "mappings", Value: c.mapping})
		}
		if c.red > 0 {
			props = append(props,
				dashboard.DynamicConfigValue{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background", "mode": "basic"}},
				dashboard.DynamicConfigValue{Id: "thresholds", Value: cellThresholds(c.orange, c.red)})
		}
		t = t.OverrideByName(c.name, props)
	}
	return t.
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true},
			"renameByName":  rename,
			"indexByName":   order,
		}})
}

// worstHosts ranks the hosts by p99 jitter over the dashboard's range.
func worstHosts(sel string) *bargauge.PanelBuilder {
	return bargauge.NewPanelBuilder().
		Title(fmt.Sprintf("Worst %d hosts by p99 jitter relative to their cycle period", worstN)).
		Description("Hosts with the largest 5-minute p99 cycle jitter over the dashboard's time range (recorded), as a share of each host's cycle period (so a 125 µs and a 4 ms cycle rank on the same scale): orange from 5 %, red from 10 %, the default jitter budget of the alert rules.").
		Datasource(datasource()).
		WithTarget(query(fmt.Sprintf("topk(%d,\n%s\n)", worstN, worstOver("host:ecagent_cycle_jitter_p99_5m:period_ratio", sel)), "{{site}} / {{line}} / {{host}}").Instant()).
		Unit(unitRatio).
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeGradient).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Thresholds(thresholds(0.05, 0.1)).
		Min(0).
		Height(10).Span(12)
}

// weekOverWeek plots each host's hourly p99 divided by its baseline (by
// default the same hour one week earlier): 1 is unchanged; the
// regression alerts fire above 1.5.
func weekOverWeek(sel string) *timeseries.PanelBuilder {
	return timeSeries("p99 jitter relative to the host's baseline", "none",
		"Each host's p99 cycle jitter over the last hour divided by its baseline, by default the same hour one week earlier (recorded: host:ecagent_cycle_jitter_p99_1h:baseline_ratio). 1 means unchanged; EcagentJitterP99Regressed fires above 1.5 (and 2 % of the cycle period worse), EcagentLineJitterRegressed when half a line does.").
		WithTarget(query(series("host:ecagent_cycle_jitter_p99_1h:baseline_ratio", sel), "{{site}} / {{line}} / {{host}}")).
		Thresholds(thresholds(1.2, 1.5)).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		Height(10).Span(12)
}

// worstOver is the largest value of a recorded per-host series over the
// dashboard's time range, one per host.
func worstOver(recorded, sel string) string {
	return fmt.Sprintf("max by (%s) (max_over_time(%s[%s]))", byHost, series(recorded, sel), dashRange)
}

// averageOver is the mean of a recorded per-host rate over the
// dashboard's time range, one per host.
func averageOver(recorded, sel string) string {
	return fmt.Sprintf("max by (%s) (avg_over_time(%s[%s]))", byHost, series(recorded, sel), dashRange)
}

// linesTable is one row per line: its hosts, the p99 of all their cycles,
// the worst host, frames lost and the hosts that regressed. A click on a
// line or a site narrows this dashboard to it (the drill-down); the hosts
// table then lists that line's hosts.
func linesTable(sel string) *table.PanelBuilder {
	lineSel := `site=~"$site", line=~"$line"`
	columns := []hostColumn{
		{ref: "A", name: "hosts", unit: unitCount,
			expr: series("line:ecagent_hosts:count", lineSel)},
		{ref: "B", name: "p99 jitter (all cycles)", unit: unitSeconds,
			expr: fmt.Sprintf("max by (site, line) (max_over_time(%s[%s]))", series("line:ecagent_cycle_jitter_seconds:p99_5m", lineSel), dashRange)},
		{ref: "C", name: "worst host p99 / period", unit: unitRatio, orange: 0.05, red: 0.1,
			expr: fmt.Sprintf("max by (site, line) (max_over_time(%s[%s]))", series("line:ecagent_cycle_jitter_p99_5m:max_period_ratio", lineSel), dashRange)},
		{ref: "D", name: "lost frames/s", unit: unitPerSec, orange: 1e-9, red: 0.01,
			expr: fmt.Sprintf("max by (site, line) (avg_over_time(%s[%s]))", series("line:ecagent_lost_frames:rate5m", lineSel), dashRange)},
		{ref: "E", name: "hosts regressed", unit: unitCount, orange: 1, red: 2,
			expr: fmt.Sprintf("count by (site, line) (%s)\nor\n0 * %s", series("host:ecagent_cycle_jitter_p99_1h:regressed", lineSel), series("line:ecagent_hosts:count", lineSel))},
	}
	drill := func(vars string) []dashboard.DynamicConfigValue {
		return []dashboard.DynamicConfigValue{{Id: "links", Value: []map[string]any{{
			"title": "This dashboard for it",
			"url":   "/d/" + FleetUID + "?var-datasource=${datasource}&" + vars + "&${__url_time_range}",
		}}}}
	}
	t := table.NewPanelBuilder().
		Title("Lines").
		Description("One row per line: its hosts now, the p99 jitter of all its hosts' cycles together and the worst host's p99 as a share of its cycle period (both the worst 5 minutes of the range), cycles that lost a frame per second (averaged over the range), and the hosts whose hourly p99 regressed against their baseline now (two or more and half the line: EcagentLineJitterRegressed). Click a line or a site to narrow this dashboard to it. Recorded series of deploy/prometheus/ecagent.rules.yml only.").
		Datasource(datasource()).
		Height(10).Span(12).
		CellHeight(common.TableCellHeightSm).
		SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName("worst host p99 / period").Desc(true)}).
		OverrideByName("site", drill("var-site=${__data.fields.site}")).
		OverrideByName("line", drill("var-site=${__data.fields.site}&var-line=${__data.fields.line}"))
	return withColumns(t, columns, "site", "line")
}

// lineJitter plots each line's worst host, so a line that moves together
// stands out from one host that does.
func lineJitter(sel string) *timeseries.PanelBuilder {
	return timeSeries("Worst host p99 jitter per line, share of the cycle period", unitRatio,
		"Per line, the largest 5-minute p99 cycle jitter of its hosts as a share of that host's cycle period (recorded: line:ecagent_cycle_jitter_p99_5m:max_period_ratio): orange from 5 %, red from 10 %.").
		WithTarget(query(series("line:ecagent_cycle_jitter_p99_5m:max_period_ratio", `site=~"$site", line=~"$line"`), "{{site}} / {{line}}")).
		Thresholds(thresholds(0.05, 0.1)).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		Height(10).Span(12)
}

// cellThresholds colour a table cell: none below orange, orange, red.
func cellThresholds(orange, red float64) map[string]any {
	return map[string]any{"mode": "absolute", "steps": []map[string]any{
		{"value": nil, "color": "transparent"},
		{"value": orange, "color": "orange"},
		{"value": red, "color": "red"},
	}}
}
