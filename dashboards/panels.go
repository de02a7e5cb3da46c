package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Grafana units.
const (
	unitSeconds = "s"
	unitRatio   = "percentunit"
	unitPerSec  = "ops"
	unitCount   = "short"
)

// datasource is the dashboards' data source: the one the datasource
// variable selects.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

// query is a time-series query with a legend.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource()).Expr(expr).LegendFormat(legend)
}

// tableQuery is an instant query in table format, for the hosts table.
func tableQuery(refID, expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource()).RefId(refID).
		Expr(expr).Instant().Format(prometheus.PromQueryFormatTable)
}

// datasourceVariable selects a Prometheus data source.
func datasourceVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")
}

// labelVariable lists the values of a fleet label, from ecagent_build_info
// (one series per agent, always present).
func labelVariable(name, label, filter string, multi bool) *dashboard.QueryVariableBuilder {
	q := "label_values(ecagent_build_info" + filter + ", " + name + ")"
	v := dashboard.NewQueryVariableBuilder(name).Label(label).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).
		Definition(q).
		Datasource(datasource()).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(multi)
	if multi {
		v = v.IncludeAll(true).AllValue(".*").Current(dashboard.VariableOption{
			Selected: cog.ToPtr(true),
			Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
			Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
		})
	}
	return v
}

// timeSeries is a line panel with the dashboards' defaults.
func timeSeries(title, unit, description string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).Description(description).Unit(unit).
		Datasource(datasource()).
		LineWidth(1).FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true).
			Calcs([]string{"max", "mean", "lastNotNull"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
}

// heatmapPanel shows a histogram over time, bucketed by Prometheus (no
// calculation in Grafana), on a logarithmic axis.
func heatmapPanel(title, unit, description string, q *prometheus.DataqueryBuilder) *heatmap.PanelBuilder {
	return heatmap.NewPanelBuilder().
		Title(title).Description(description).
		Datasource(datasource()).
		WithTarget(q.Format(prometheus.PromQueryFormatHeatmap)).
		Calculate(false).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit(unit).
			ScaleDistribution(common.NewScaleDistributionConfigBuilder().Type(common.ScaleDistributionLog).Log(2))).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Spectral").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64)).
		CellGap(0).
		ShowLegend()
}

// thresholds is absolute thresholds: green below the first value, then
// orange, then red.
func thresholds(orange, red float64) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps([]dashboard.Threshold{
		{Value: nil, Color: "green"},
		{Value: cog.ToPtr(orange), Color: "orange"},
		{Value: cog.ToPtr(red), Color: "red"},
	})
}

// valueText maps exact values to text and colour.
func valueText(pairs ...[3]string) []dashboard.ValueMapping {
	options := map[string]dashboard.ValueMappingResult{}
	for i, p := range pairs {
		options[p[0]] = dashboard.ValueMappingResult{Text: cog.ToPtr(p[1]), Color: cog.ToPtr(p[2]), Index: cog.ToPtr(int32(i))}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: options}}}
}

// slaveStateNames maps the codes of slaveState: the AL states, the same
// with the error bit (+16), and the slaves that do not answer.
func slaveStateNames() []dashboard.ValueMapping {
	return valueText(
		[3]string{"-2", "refused (another device)", "dark-red"},
		[3]string{"-1", "lost", "red"},
		[3]string{"0", "no state", "red"},
		[3]string{"1", "INIT", "red"},
		[3]string{"2", "PREOP", "orange"},
		[3]string{"3", "BOOT", "purple"},
		[3]string{"4", "SAFEOP", "yellow"},
		[3]string{"8", "OP", "green"},
		[3]string{"17", "INIT+ERR", "red"},
		[3]string{"18", "PREOP+ERR", "red"},
		[3]string{"19", "BOOT+ERR", "red"},
		[3]string{"20", "SAFEOP+ERR", "red"},
		[3]string{"24", "OP+ERR", "orange"},
	)
}

// dataQualities maps the data quality code the host detail computes from
// the state set ecagent_slave_data_quality (1 good, 2 stale, 3 invalid).
func dataQualities() []dashboard.ValueMapping {
	return valueText(
		[3]string{"1", "good", "green"},
		[3]string{"2", "stale", "orange"},
		[3]string{"3", "invalid", "red"},
	)
}

// busEventAnnotation marks every event of the bus (a slave lost, found,
// refused, an AL error, the bus alarm, the link, the cycle process dying)
// on every time series panel: an increase of ecagent_bus_events_total, or
// a series that appeared (the counter of a kind is created by its first
// event, which an increase alone would miss).
func busEventAnnotation(sel string) *dashboard.AnnotationQueryBuilder {
	events := series("ecagent_bus_events_total", sel)
	expr := fmt.Sprintf("sum by (%s, kind, position, name) (\n  increase(%s[1m]) > 0\n  or\n  (%s unless %s offset 1m)\n)",
		byHost, events, events, events)
	return dashboard.NewAnnotationQueryBuilder().
		Name("Bus events").
		Datasource(datasource()).
		Enable(true).
		IconColor("red").
		Expr(expr).
		Step("1m").
		TitleFormat("{{kind}}").
		TextFormat("{{host}}: {{kind}} at slave {{position}} ({{name}})").
		TagKeys("kind,host")
}

// driveStateNames maps ecagent_drive_state values (the CiA 402 states,
// numbered as package metrics documents them).
func driveStateNames() []dashboard.ValueMapping {
	return valueText(
		[3]string{"0", "unknown", "text"},
		[3]string{"1", "not ready to switch on", "text"},
		[3]string{"2", "switch on disabled", "blue"},
		[3]string{"3", "ready to switch on", "purple"},
		[3]string{"4", "switched on", "yellow"},
		[3]string{"5", "operation enabled", "green"},
		[3]string{"6", "quick stop active", "orange"},
		[3]string{"7", "fault reaction active", "red"},
		[3]string{"8", "fault", "red"},
	)
}

// checkStatuses maps the rtcheck status code the host detail computes
// (1 pass, 2 warn, 3 fail, 4 skip).
func checkStatuses() []dashboard.ValueMapping {
	return valueText(
		[3]string{"1", "pass", "green"},
		[3]string{"2", "warn", "orange"},
		[3]string{"3", "fail", "red"},
		[3]string{"4", "skip", "text"},
	)
}
