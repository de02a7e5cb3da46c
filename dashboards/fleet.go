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
			fmt.Sprintf("count(%s) or vector(0)", silentAgents(sel)), thresholds(1, 1)).Span(2)).
		WithPanel(fleetStat("Cycle processes down", "Agents whose real-time cycle process is not running.",
			fmt.Sprintf("count(%s == 0) or vector(0)", series("ecagent_cycle_process_up", sel)), thresholds(1, 1)).Span(2)).
		WithPanel(fleetStat("Slaves not in OP", "Slaves of all selected hosts that are not in OP without an error: lost, refused (another device at their position), or answering in another state or with the AL error bit set.",
			fmt.Sprintf("count(%s) or vector(0)", notOperational(sel)), thresholds(1, 1)).Span(2)).
		WithPanel(fleetStat("Slaves not answering", "Slaves of all selected hosts that do not answer: lost, or another device answers at their position.",
			fmt.Sprintf("count(%s == 0) or vector(0)", series("ecagent_slave_up", sel)), thresholds(1, 1)).Span(2)).
		WithPanel(fleetStat("Failed RT checks", "Host real-time checks that fail now, summed over the selected hosts.",
			fmt.Sprintf("sum(%s) or vector(0)", series("ecagent_rt_check", sel, `status="fail"`)), thresholds(1, 1)).Span(2)).
		WithPanel(fleetStat("Lost frames/s", "Cyclic frames lost per second, all selected hosts.",
			fmt.Sprintf("sum(rate(%s[%s])) or vector(0)", series("ecagent_lost_frames_total", sel), rateInterval), thresholds(1e-9, 1)).
			Unit(unitPerSec).Span(4)).
		WithPanel(fleetStat("Worst p99 jitter", "The largest p99 cycle jitter of any selected host over the dashboard's time range, as a share of that host's cycle period: orange from 5 %, red from 10 % (the default jitter budget of the alert rules).",
			fmt.Sprintf("max(%s)", perPeriod(quantile(0.99, "ecagent_cycle_jitter_seconds", sel, byHost, dashRange), sel)), thresholds(0.05, 0.1)).
			Unit(unitRatio).Span(4)).
		WithPanel(fleetStat("Drives in fault", "CiA 402 drives of all selected hosts that are in fault now.",
			fmt.Sprintf("count(%s != 0) or vector(0)", series("ecagent_drive_error_code", sel)), thresholds(1, 1)).Span(2)).
		WithPanel(fleetStat("Worst p99 DC difference", "The largest p99 distributed-clock system time difference of any selected host over the dashboard's time range; EtherCAT keeps it under 1 µs.",
			fmt.Sprintf("max(%s)", quantile(0.99, "ecagent_dc_time_difference_seconds", sel, byHost, dashRange)), thresholds(500e-9, 1e-6)).
			Unit(unitSeconds).Span(2)).
		WithRow(dashboard.NewRowBuilder("Hosts")).
		WithPanel(hostsTable(sel)).
		WithRow(dashboard.NewRowBuilder("Jitter")).
		WithPanel(worstHosts(sel)).
		WithPanel(weekOverWeek(sel)).
		WithPanel(timeSeries("p99 cycle jitter by host", unitSeconds,
			"99th percentile of |period − target| per host over the rate interval.").
			WithTarget(query(quantile(0.99, "ecagent_cycle_jitter_seconds", sel, byHost, rateInterval), "{{host}}")).
			Height(9).Span(24)).
		WithPanel(timeSeries("Exact maximum cycle jitter by host", unitSeconds,
			"The largest |period − target| of any cycle, from the exact window statistics (histograms blur the maximum).").
			WithTarget(query(fmt.Sprintf("max by (%s) (max_over_time(%s[%s]))", byHost,
				series("ecagent_cycle_jitter_window_seconds", sel, `stat="max"`), rateInterval), "{{host}}")).
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
	jitter := "ecagent_cycle_jitter_seconds"
	columns := []hostColumn{
		{ref: "J", name: "agent", unit: "none", mapping: reporting(),
			expr: fmt.Sprintf("group by (%s) (%s)\nor\n0 * group by (%s) (max_over_time(%s[%s]))", byHost, series("ecagent_build_info", sel), byHost, series("ecagent_build_info", sel), dashRange)},
		{ref: "K", name: "cycle period", unit: unitSeconds,
			expr: fmt.Sprintf("max by (%s) (max_over_time(%s[%s]))", byHost, series("ecagent_cycle_target_seconds", sel), dashRange)},
		{ref: "A", name: "p99 jitter", unit: unitSeconds,
			expr: quantile(0.99, jitter, sel, byHost, dashRange)},
		{ref: "L", name: "p99 jitter / period", unit: unitRatio, orange: 0.05, red: 0.1,
			expr: perPeriod(quantile(0.99, jitter, sel, byHost, dashRange), sel)},
		{ref: "B", name: "max jitter", unit: unitSeconds,
			expr: fmt.Sprintf("max by (%s) (max_over_time(%s[%s]))", byHost, series("ecagent_cycle_jitter_window_seconds", sel, `stat="max"`), dashRange)},
		{ref: "M", name: "max jitter / period", unit: unitRatio, orange: 0.25, red: 0.5,
			expr: perPeriod(fmt.Sprintf("max by (%s) (max_over_time(%s[%s]))", byHost, series("ecagent_cycle_jitter_window_seconds", sel, `stat="max"`), dashRange), sel)},
		{ref: "C", name: "p99 vs week before", unit: "none", orange: 1.2, red: 1.5,
			expr: fmt.Sprintf("(%s)\n/\n(%s)", quantile(0.99, jitter, sel, byHost, dashRange), quantileOffset(0.99, jitter, sel, byHost, dashRange, "1w"))},
		{ref: "D", name: "cycle CPU load max", unit: unitRatio, orange: 0.5, red: 0.8,
			expr: fmt.Sprintf("max by (%s) (max_over_time(%s[%s]))", byHost, series("ecagent_cycle_cpu_load_window_ratio", sel, `stat="max"`), dashRange)},
		{ref: "E", name: "host CPU busy", unit: unitRatio, orange: 0.7, red: 0.9,
			expr: fmt.Sprintf("max by (%s) (avg_over_time(%s[%s]))", byHost, series("ecagent_host_cpu_busy_ratio", sel), dashRange)},
		{ref: "F", name: "lost frames/s", unit: unitPerSec, orange: 1e-9, red: 0.01,
			expr: fmt.Sprintf("sum by (%s) (rate(%s[%s]))", byHost, series("ecagent_lost_frames_total", sel), dashRange)},
		{ref: "O", name: "frames lost (share)", unit: unitRatio, orange: 1e-9, red: 1e-4,
			expr: fmt.Sprintf("sum by (%s) (rate(%s[%s]))\n/\nsum by (%s) (rate(%s[%s]))", byHost, series("ecagent_cyclic_frames_lost_total", sel), dashRange,
				byHost, series("ecagent_cyclic_frames_sent_total", sel), dashRange)},
		{ref: "G", name: "WKC errors/s", unit: unitPerSec, orange: 1e-9, red: 0.01,
			expr: fmt.Sprintf("sum by (%s) (rate(%s[%s]))", byHost, series("ecagent_wkc_errors_total", sel), dashRange)},
		{ref: "H", name: "slaves not in OP", unit: unitCount, orange: 1, red: 1,
			expr: fmt.Sprintf("count by (%s) %s\nor\n0 * max by (%s) (%s)", byHost, notOperational(sel), byHost, series("ecagent_bus_slaves", sel))},
		{ref: "N", name: "slaves not answering", unit: unitCount, orange: 1, red: 1,
			expr: fmt.Sprintf("count by (%s) (%s == 0)\nor\n0 * max by (%s) (%s)", byHost, series("ecagent_slave_up", sel), byHost, series("ecagent_bus_slaves", sel))},
		{ref: "I", name: "failed RT checks", unit: unitCount, orange: 1, red: 1,
			expr: fmt.Sprintf("sum by (%s) (%s)", byHost, series("ecagent_rt_check", sel, `status="fail"`))},
	}
	rename := map[string]any{}
	order := map[string]any{"site": 0, "line": 1, "host": 2}
	t := table.NewPanelBuilder().
		Title("Hosts").
		Description("One row per host that reported in the dashboard's time range, also one that stopped (agent STOPPED): p99 from the histogram, max from the exact window statistics, each also as a share of the host's cycle period (coloured: the same threshold fits every period), week comparison over the same range one week earlier; slaves and checks are as of now. Click a host for its detail.").
		Datasource(datasource()).
		Height(12).Span(24).
		CellHeight(common.TableCellHeightSm).
		SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName("p99 jitter").Desc(true)}).
		OverrideByName("host", []dashboard.DynamicConfigValue{{Id: "links", Value: []map[string]any{{
			"title": "Host detail",
			"url":   "/d/" + HostUID + "?var-datasource=${datasource}&var-site=${__data.fields.site}&var-line=${__data.fields.line}&var-host=${__data.fields.host}&${__url_time_range}",
		}}}})
	for i, c := range columns {
		t = t.WithTarget(tableQuery(c.ref, c.expr))
		rename["Value #"+c.ref] = c.name
		order["Value #"+c.ref] = 3 + i
		props := []dashboard.DynamicConfigValue{{Id: "unit", Value: c.unit}}
		if c.mapping != nil {
			props = append(props,
				dashboard.DynamicConfigValue{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background", "mode": "basic"}},
				dashboard.DynamicConfigValue{Id: "mappings", Value: c.mapping})
		}
		if c.red > 0 {
			props = append(props,
				dashboard.DynamicConfigValue{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background", "mode": "basic"}},
				dashboard.DynamicConfigValue{Id: "thresholds", Value: map[string]any{"mode": "absolute", "steps": []map[string]any{
					{"value": nil, "color": "transparent"},
					{"value": c.orange, "color": "orange"},
					{"value": c.red, "color": "red"},
				}}})
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
		Description("Hosts with the largest p99 cycle jitter over the dashboard's time range, as a share of each host's cycle period (so a 125 µs and a 4 ms cycle rank on the same scale): orange from 5 %, red from 10 %, the default jitter budget of the alert rules.").
		Datasource(datasource()).
		WithTarget(query(fmt.Sprintf("topk(%d,\n%s\n)", worstN, perPeriod(quantile(0.99, "ecagent_cycle_jitter_seconds", sel, byHost, dashRange), sel)), "{{site}} / {{line}} / {{host}}").Instant()).
		Unit(unitRatio).
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeGradient).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Thresholds(thresholds(0.05, 0.1)).
		Min(0).
		Height(10).Span(12)
}

// weekOverWeek plots each host's hourly p99 divided by the same hour one
// week earlier: 1 is unchanged; the regression alert fires above 1.5.
func weekOverWeek(sel string) *timeseries.PanelBuilder {
	jitter := "ecagent_cycle_jitter_seconds"
	expr := fmt.Sprintf("(%s)\n/\n(%s)", quantile(0.99, jitter, sel, byHost, "1h"), quantileOffset(0.99, jitter, sel, byHost, "1h", "1w"))
	return timeSeries("p99 jitter relative to one week earlier", "none",
		"Each host's p99 cycle jitter over the last hour divided by the same hour one week earlier. 1 means unchanged; EcagentJitterP99Regressed fires above 1.5 (and 2 % of the cycle period worse).").
		WithTarget(query(expr, "{{host}}")).
		Thresholds(thresholds(1.2, 1.5)).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		Height(10).Span(12)
}
