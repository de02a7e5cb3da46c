//lint:file-ignore SA1019 The SDK deprecates the classic dashboard model for dashboardv2, which only Grafana 12+ with its new dashboard API imports; the classic JSON model is what every Grafana version imports and file-provisions.

package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// quantity is a measured per-cycle figure: its histogram and window gauge.
type quantity struct {
	title, histogram, window, unit, what string
	// orange and red are the thresholds of its panels: shares of the
	// cycle period, or seconds when absolute.
	orange, red float64
	absolute    bool
}

// The quantities the host detail plots.
func jitterQuantity() quantity {
	return quantity{"Cycle jitter", "ecagent_cycle_jitter_seconds", "ecagent_cycle_jitter_window_seconds", unitSeconds,
		"|period − target| of every cycle", 0.05, 0.1, false}
}

func wakeupQuantity() quantity {
	return quantity{"Wake-up latency", "ecagent_wakeup_latency_seconds", "ecagent_wakeup_latency_window_seconds", unitSeconds,
		"time from each cycle's deadline to its wake-up", 0.05, 0.1, false}
}

func jobQuantity() quantity {
	return quantity{"Job duration", "ecagent_job_duration_seconds", "ecagent_job_duration_window_seconds", unitSeconds,
		"time from each cycle's wake-up to the end of its job", 0.5, 0.8, false}
}

func frameRTTQuantity() quantity {
	return quantity{"Frame round trip", "ecagent_frame_rtt_seconds", "ecagent_frame_rtt_window_seconds", unitSeconds,
		"time from sending the cyclic frame to receiving it back (lost frames excluded)", 0.25, 0.5, false}
}

func dcQuantity() quantity {
	return quantity{"DC system time difference", "ecagent_dc_time_difference_seconds", "ecagent_dc_time_difference_window_seconds", unitSeconds,
		"absolute distributed-clock system time difference, in cycles that measured it", 500e-9, 1e-6, true}
}

func dcControllerQuantity() quantity {
	return quantity{"DC controller error", "ecagent_dc_controller_error_seconds", "ecagent_dc_controller_error_window_seconds", unitSeconds,
		"absolute error of the controller that keeps the master's cycle on the distributed-clock reference time", 0.05, 0.1, false}
}

// HostDetail builds the host detail dashboard.
func HostDetail() (dashboard.Dashboard, error) {
	sel := hostSelector
	b := newDashboard("ecagent / host detail", HostUID,
		"One ecagent host: cycle timing heatmaps, exact window statistics, CPU load, bus health, slave states, MQTT delivery and real-time checks.",
		"30s", "now-1h", false, sel)
	for _, rows := range []func(*dashboard.DashboardBuilder, string) *dashboard.DashboardBuilder{
		hostNowRow, hostTimingRows, hostBusRow, hostDCRow, hostDriveDeliveryChecksRows,
	} {
		b = rows(b, sel)
	}
	return withPanelIDs(b.WithRow(nativeHeatmaps(sel)).Build())
}

// hostNowRow adds the row of the host's figures now.
func hostNowRow(b *dashboard.DashboardBuilder, sel string) *dashboard.DashboardBuilder {
	jitter := jitterQuantity()
	return b.
		WithRow(dashboard.NewRowBuilder("Now")).
		WithPanel(hostStat("Cycle period", "Configured (target) cycle period.", series("ecagent_cycle_target_seconds", sel), unitSeconds)).
		WithPanel(hostStat("p99 jitter / period", "p99 of |period − target| in the last closed window (exact), as a share of the cycle period: orange from 5 %, red from 10 % (the default jitter budget).",
			perCycle(series(jitter.window, sel, `stat="p99"`), sel), unitRatio).
			Thresholds(thresholds(jitter.orange, jitter.red)).ColorMode(common.BigValueColorModeBackground)).
		WithPanel(hostStat("Max jitter / period", "Largest |period − target| in the last closed window (exact), as a share of the cycle period: orange from 25 %, red from 50 %.",
			perCycle(series(jitter.window, sel, `stat="max"`), sel), unitRatio).
			Thresholds(thresholds(0.25, 0.5)).ColorMode(common.BigValueColorModeBackground)).
		WithPanel(hostStat("Cycle process", "Whether the real-time cycle process runs.", series("ecagent_cycle_process_up", sel), "none").
			Mappings(valueText([3]string{"1", "running", "green"}, [3]string{"0", "down", "red"})).Span(2)).
		WithPanel(hostStat("Cycle process starts", "Times the agent started the cycle process in the dashboard's time range (restarts after a crash count here).",
			fmt.Sprintf("round(increase(%s[%s]))", series("ecagent_cycle_process_starts_total", sel), dashRange), unitCount).Span(2)).
		WithPanel(hostStat("Bring-up failures", "Bring-ups of the cycle process that failed in a row, while none runs (0 once one does); "+
			"the agent tries again without end. The reason label of ecagent_cycle_process_bringup_failures, /readyz and the MQTT state topic say why.",
			fmt.Sprintf("sum(%s)", series("ecagent_cycle_process_bringup_failures", sel)), unitCount).Span(2)).
		WithPanel(hostStat("Maintenance socket", "Whether the cycle process serves its maintenance socket (ecagent slaves, reg, sii …); refused when another user holds its place.", series("ecagent_maintenance_socket_up", sel), "none").
			Mappings(valueText([3]string{"1", "served", "green"}, [3]string{"0", "refused", "red"})).Span(2)).
		WithPanel(hostStat("Slaves", "Slaves found on the segment.", series("ecagent_bus_slaves", sel), unitCount)).
		WithPanel(hostStat("Expected WKC", "Working counter the cyclic frame should come back with.", series("ecagent_expected_wkc", sel), unitCount)).
		WithPanel(hostStat("Agent version", "ecagent version (ecagent_build_info).", series("ecagent_build_info", sel), "none").
			Targets([]cog.Builder[variants.Dataquery]{query(series("ecagent_build_info", sel), "{{version}}")}).
			TextMode(common.BigValueTextModeName))
}

// hostTimingRows adds the rows of cycle timing: jitter, wake-up latency, period, job and CPU load.
func hostTimingRows(b *dashboard.DashboardBuilder, sel string) *dashboard.DashboardBuilder {
	jitter, wakeup := jitterQuantity(), wakeupQuantity()
	return b.
		WithRow(dashboard.NewRowBuilder("Jitter and wake-up latency")).
		WithPanel(heatmapPanel(jitter.title+" (classic buckets)", jitter.unit,
			"Distribution of "+jitter.what+" per time step, from the classic buckets (1-2-5 steps from 1 µs to 10 ms), which every Prometheus stores. With native histograms ingested, the finer heatmaps are in the collapsed row at the bottom.",
			query(heatmapClassic(jitter.histogram, sel), "{{le}}")).Height(9).Span(12)).
		WithPanel(quantilePanel(jitter, sel).Height(9).Span(12)).
		WithPanel(heatmapPanel(wakeup.title+" (classic buckets)", wakeup.unit,
			"Distribution of "+wakeup.what+" per time step, from the classic buckets. Growing wake-up latency points at the scheduler or power management.",
			query(heatmapClassic(wakeup.histogram, sel), "{{le}}")).Height(9).Span(12)).
		WithPanel(quantilePanel(wakeup, sel).Height(9).Span(12)).
		WithRow(dashboard.NewRowBuilder("Cycle period, job and CPU load")).
		WithPanel(periodBand(sel).Height(9).Span(12)).
		WithPanel(quantilePanel(jobQuantity(), sel).Height(9).Span(12)).
		WithPanel(cpuLoad(sel).Height(9).Span(24))
}

// hostBusRow adds the row of the bus: round trip, errors, slave states and events.
func hostBusRow(b *dashboard.DashboardBuilder, sel string) *dashboard.DashboardBuilder {
	return b.
		WithRow(dashboard.NewRowBuilder("Bus")).
		WithPanel(quantilePanel(frameRTTQuantity(), sel).Height(8).Span(12)).
		WithPanel(busErrors(sel).Height(8).Span(12)).
		WithPanel(slaveStates(sel).Height(8).Span(16)).
		WithPanel(alStatusCodes(sel).Height(8).Span(8)).
		WithPanel(slaveData(sel).Height(8).Span(16)).
		WithPanel(staleSlaves(sel).Height(8).Span(8)).
		WithPanel(escErrors(sel).Height(8).Span(12)).
		WithPanel(busEvents(sel).Height(8).Span(12)).
		WithPanel(cableErrors(sel).Height(8).Span(24))
}

// hostDCRow adds the row of the distributed clocks.
func hostDCRow(b *dashboard.DashboardBuilder, sel string) *dashboard.DashboardBuilder {
	return b.
		WithRow(dashboard.NewRowBuilder("Distributed clocks")).
		WithPanel(hostStat("Distributed clocks", "Whether distributed clocks are configured on the segment.", series("ecagent_dc_enabled", sel), "none").
			Mappings(valueText([3]string{"1", "on", "green"}, [3]string{"0", "off", "text"})).Span(4)).
		WithPanel(hostStat("Reference clock", "Position of the slave whose clock is the reference (−1 without distributed clocks).",
			series("ecagent_dc_reference_position", sel), "none").Span(4)).
		WithPanel(hostStat("SYNC0 cycle", "SYNC0 cycle time the slaves are configured with.", series("ecagent_dc_sync0_cycle_seconds", sel), unitSeconds).Span(4)).
		WithPanel(hostStat("SYNC0 shift", "Where SYNC0 lies in the cycle, on the distributed-clock time.", series("ecagent_dc_sync0_shift_seconds", sel), unitSeconds).Span(4)).
		WithPanel(hostStat("SYNC1 shift", "Shift of SYNC1 from SYNC0 (0 without SYNC1).", series("ecagent_dc_sync1_shift_seconds", sel), unitSeconds).Span(4)).
		WithPanel(hostStat("p99 DC time difference", "p99 of the absolute system time difference in the last closed window (exact). Above 1 µs the slaves are not synchronised.",
			series("ecagent_dc_time_difference_window_seconds", sel, `stat="p99"`), unitSeconds).Span(4).
			Thresholds(thresholds(500e-9, 1e-6)).ColorMode(common.BigValueColorModeValue)).
		WithPanel(quantilePanel(dcQuantity(), sel).Height(8).Span(12)).
		WithPanel(quantilePanel(dcControllerQuantity(), sel).Height(8).Span(12))
}

// hostDriveDeliveryChecksRows adds the rows of the drives, MQTT delivery and the real-time checks.
func hostDriveDeliveryChecksRows(b *dashboard.DashboardBuilder, sel string) *dashboard.DashboardBuilder {
	return b.
		WithRow(dashboard.NewRowBuilder("Drives")).
		WithPanel(driveStates(sel).Height(8).Span(16)).
		WithPanel(driveErrorCodes(sel).Height(8).Span(8)).
		WithPanel(driveEvents(sel).Height(8).Span(16)).
		WithPanel(lastEmergencies(sel).Height(8).Span(8)).
		WithRow(dashboard.NewRowBuilder("MQTT delivery")).
		WithPanel(mqttRates(sel).Height(8).Span(12)).
		WithPanel(mqttBuffer(sel).Height(8).Span(12)).
		WithRow(dashboard.NewRowBuilder("Real-time checks")).
		WithPanel(rtChecks(sel).Height(10).Span(12)).
		WithPanel(rtSettings(sel).Height(10).Span(6)).
		WithPanel(collectors(sel).Height(10).Span(6))
}

// hostStat is the latest value of one series.
func hostStat(title, description, expr, unit string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Description(description).
		Datasource(datasource()).
		WithTarget(query(expr, title)).
		Unit(unit).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		ColorMode(common.BigValueColorModeNone).
		GraphMode(common.BigValueGraphModeNone).
		Height(3).Span(3)
}

// quantilePanel plots a quantity's p50, p99 and p99.9 from the histogram
// and the exact maximum of the window statistics, which histograms blur:
// as a share of the cycle period with the quantity's thresholds, or in
// seconds for the absolute ones (the DC time difference, which EtherCAT
// bounds by 1 µs whatever the cycle).
func quantilePanel(q quantity, sel string) *timeseries.PanelBuilder {
	unit, scale, how := unitRatio, func(e string) string { return perCycle(e, sel) }, "as a share of the cycle period"
	if q.absolute {
		unit, scale, how = q.unit, func(e string) string { return e }, "in seconds"
	}
	p := timeSeries(q.title+": quantiles and exact maximum", unit,
		fmt.Sprintf("p50, p99 and p99.9 of the %s from the histogram over the rate interval; max is the largest value of any cycle (exact window statistic, the largest window in each step); %s. Dashed: orange and red thresholds.", q.what, how))
	for _, qq := range []struct {
		q      float64
		legend string
	}{{0.5, "p50"}, {0.99, "p99"}, {0.999, "p99.9"}} {
		p = p.WithTarget(query(scale(quantile(qq.q, q.histogram, sel, "", rateInterval)), qq.legend))
	}
	return p.WithTarget(query(scale(fmt.Sprintf("max_over_time(%s[%s])", series(q.window, sel, `stat="max"`), rateInterval)), "max (exact)")).
		OverrideByName("max (exact)", []dashboard.DynamicConfigValue{{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": "red"}}}).
		Thresholds(thresholds(q.orange, q.red)).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
}

// periodBand draws the cycle period's min/max band per window around the
// target, as a multiple of the target (1 on time); the band's top is the
// exact window maximum.
func periodBand(sel string) *timeseries.PanelBuilder {
	win := "ecagent_cycle_period_window_seconds"
	return timeSeries("Cycle period: min/max band, multiple of the target", "none",
		"Shortest and longest period between two wake-ups (exact window statistics; the extremes of all windows in each step) and the period histogram's p0.1 and p99.9, divided by the configured period (1 is on time): orange from 1.1, red from 1.5.").
		WithTarget(query(perCycle(fmt.Sprintf("min_over_time(%s[%s])", series(win, sel, `stat="min"`), rateInterval), sel), "min")).
		WithTarget(query(perCycle(fmt.Sprintf("max_over_time(%s[%s])", series(win, sel, `stat="max"`), rateInterval), sel), "max (exact)")).
		WithTarget(query(perCycle(quantile(0.001, "ecagent_cycle_period_seconds", sel, "", rateInterval), sel), "p0.1")).
		WithTarget(query(perCycle(quantile(0.999, "ecagent_cycle_period_seconds", sel, "", rateInterval), sel), "p99.9")).
		FillOpacity(0).
		Thresholds(thresholds(1.1, 1.5)).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		OverrideByName("max (exact)", []dashboard.DynamicConfigValue{
			{Id: "custom.fillBelowTo", Value: "min"},
			{Id: "custom.fillOpacity", Value: 20},
		})
}

// cpuLoad puts the cycle's own load beside the host's, so a jitter spike
// can be tied to load.
func cpuLoad(sel string) *timeseries.PanelBuilder {
	load := "ecagent_cycle_cpu_load_window_ratio"
	return timeSeries("CPU load", unitRatio,
		"Cycle CPU load = job duration / cycle period (exact window mean and max, p99 from the histogram); busy fraction of the cycle's core and of the whole host (/proc/stat); CPU used by the cycle process, in CPUs.").
		WithTarget(query(series(load, sel, `stat="mean"`), "cycle load mean")).
		WithTarget(query(quantile(0.99, "ecagent_cycle_cpu_load_ratio", sel, "", rateInterval), "cycle load p99")).
		WithTarget(query(fmt.Sprintf("max_over_time(%s[%s])", series(load, sel, `stat="max"`), rateInterval), "cycle load max")).
		WithTarget(query(series("ecagent_cycle_core_busy_ratio", sel), "cycle core busy")).
		WithTarget(query(series("ecagent_host_cpu_busy_ratio", sel), "host busy")).
		WithTarget(query(fmt.Sprintf("rate(%s[%s])", series("ecagent_cycle_process_cpu_seconds_total", sel), rateInterval), "cycle process CPU")).
		Thresholds(thresholds(0.5, 0.8)).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		Min(0)
}

// busErrors plots the error counters as rates.
func busErrors(sel string) *timeseries.PanelBuilder {
	p := timeSeries("Bus and cycle errors per second", unitPerSec,
		"Cycles that lost a frame and the frames lost (a cycle of several frames can lose more than one), working counter errors, overruns (jobs that ended after the next deadline) and those of the cycles that carried acyclic datagrams (mailbox, register access, recovery), skipped deadlines, cycles woken late by the cycle's own yield to the Go scheduler (the process's doing; other late wake-ups are the host's), samples the agent dropped, received frames discarded (by reason), lost frames whose answer came late, and frames the kernel dropped before the cycle read them; the cycles the agent received, those that carried acyclic datagrams, the cyclic frames sent and the frames the socket received, on the right axis. Acyclic overruns at a share well above the acyclic cycles' share are the maintenance traffic's doing.")
	for _, c := range []struct{ name, legend string }{
		{"ecagent_lost_frames_total", "cycles that lost a frame"},
		{"ecagent_cyclic_frames_lost_total", "frames lost"},
		{"ecagent_late_answers_total", "late answers (of the lost)"},
		{"ecagent_cyclic_frames_late_total", "frames answered late"},
		{"ecagent_link_kernel_drops_total", "frames the kernel dropped"},
		{"ecagent_wkc_errors_total", "WKC errors"},
		{"ecagent_cycle_overruns_total", "overruns"},
		{"ecagent_acyclic_cycle_overruns_total", "overruns (acyclic cycles)"},
		{"ecagent_cycle_skipped_total", "skipped deadlines"},
		{"ecagent_cycle_yield_late_total", "late from own yield"},
		{"ecagent_sample_ring_drops_total", "samples dropped"},
		{"ecagent_frames_discarded_total", "frames discarded ({{reason}})"},
	} {
		p = p.WithTarget(query(fmt.Sprintf("rate(%s[%s])", series(c.name, sel), rateInterval), c.legend))
	}
	cycles, acyclic, sent, received := "cycles (right axis)", "acyclic cycles (right axis)", "frames sent (right axis)", "frames received (right axis)"
	return p.WithTarget(query(fmt.Sprintf("rate(%s[%s])", series("ecagent_cycles_total", sel), rateInterval), cycles)).
		WithTarget(query(fmt.Sprintf("rate(%s[%s])", series("ecagent_acyclic_cycles_total", sel), rateInterval), acyclic)).
		WithTarget(query(fmt.Sprintf("rate(%s[%s])", series("ecagent_cyclic_frames_sent_total", sel), rateInterval), sent)).
		WithTarget(query(fmt.Sprintf("rate(%s[%s])", series("ecagent_link_frames_received_total", sel), rateInterval), received)).
		Min(0).
		OverrideByName(cycles, []dashboard.DynamicConfigValue{
			{Id: "custom.axisPlacement", Value: "right"},
			{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": "text"}},
		}).
		OverrideByName(acyclic, []dashboard.DynamicConfigValue{{Id: "custom.axisPlacement", Value: "right"}}).
		OverrideByName(sent, []dashboard.DynamicConfigValue{{Id: "custom.axisPlacement", Value: "right"}}).
		OverrideByName(received, []dashboard.DynamicConfigValue{{Id: "custom.axisPlacement", Value: "right"}})
}

// busEvents counts the faults of the bus and what recovery did about them,
// by kind and slave.
func busEvents(sel string) *timeseries.PanelBuilder {
	return timeSeries("Faults and recovery", unitCount,
		"Events of the bus in each interval, by kind and slave: slaves lost, found, reconnected or refused, AL errors acknowledged or refusing OP, the bus alarm, the link, cycle process crashes and restarts.").
		WithTarget(query(fmt.Sprintf("sum by (kind, position, name) (increase(%s[%s])) > 0", series("ecagent_bus_events_total", sel), rateInterval),
			"{{kind}} {{position}} {{name}}")).
		Min(0)
}

// escErrors plots the slaves' ESC error counters that are not zero.
func escErrors(sel string) *timeseries.PanelBuilder {
	return timeSeries("Slave ESC error counters", unitCount,
		"ESC error counters (registers 0x0300–0x0313, saturating at 255) that are not zero, per slave and port. lost_link and rx_error locate a bad cable or connector.").
		WithTarget(query(series("ecagent_slave_port_errors", sel)+" > 0", "{{position}} {{name}} port {{port}} {{counter}}")).
		WithTarget(query(series("ecagent_slave_esc_errors", sel)+" > 0", "{{position}} {{name}} {{counter}}")).
		Min(0)
}

// cableErrors plots, per slave port, the damaged frames it receives a
// minute: what alert EcagentCableErrors compares with its threshold (1).
// Forwarded errors are left out, so the port shown is the first one behind
// the bad cable; the registers are gauges a write clears, which rate()
// takes for a counter reset.
func cableErrors(sel string) *timeseries.PanelBuilder {
	return timeSeries("CRC errors per slave port (per minute)", unitCount,
		"Invalid frames and RX errors a minute at each slave port (ESC registers 0x0300–0x0307), forwarded errors left out: the port shown is the one behind the bad cable (port 0: the cable from the master's side; port 1: to the next slave). Above 1 a minute for 5 minutes, alert EcagentCableErrors fires.").
		WithTarget(query(fmt.Sprintf(`sum by (position, name, port) (rate(%s[%s])) * 60 > 0`,
			series("ecagent_slave_port_errors", sel, `counter=~"invalid_frame|rx_error"`), rateInterval),
			"{{position}} {{name}} port {{port}}")).
		Min(0)
}

// slaveStates is the state of each slave over time: its AL state while it
// answers, lost or refused while it does not.
func slaveStates(sel string) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().
		Title("Slave states").
		Description("EtherCAT AL state of each slave while it answers (+ERR with the AL status error bit set; the table beside says why), lost while it does not answer, refused while another device answers at its position.").
		Datasource(datasource()).
		WithTarget(query(slaveState(sel), "{{position}} {{name}}")).
		Mappings(slaveStateNames()).
		ShowValue(common.VisibilityModeAuto).
		MergeValues(true).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false))
}

// slaveData is the quality of each slave's process data over time. The
// state set ecagent_slave_data_quality{quality} becomes one code per
// slave: 1 good, 2 stale, 3 invalid, from the series at 1 only, so it
// reads the same whether the agent exports the zeros (metrics.detail
// full) or not.
func slaveData(sel string) *statetimeline.PanelBuilder {
	var terms []string
	for i, q := range []string{"good", "stale", "invalid"} {
		terms = append(terms, fmt.Sprintf("%d * (%s == 1)", i+1, series("ecagent_slave_data_quality", sel, `quality="`+q+`"`)))
	}
	return statetimeline.NewPanelBuilder().
		Title("Slave process data").
		Description("Quality of each slave's process data: good while it is exchanged every cycle; stale while the values are the last ones received (the slave is lost or out of SAFEOP/OP, the cycle or the link is down, a bus alarm is raised); invalid when there are none to show (another device at its position).").
		Datasource(datasource()).
		WithTarget(query("sum by (position, name) (\n  "+strings.Join(terms, "\nor ")+"\n)", "{{position}} {{name}}")).
		Mappings(dataQualities()).
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false))
}

// staleSlaves lists the slaves whose process data is not good and for how
// long.
func staleSlaves(sel string) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title("Slaves without good data").
		Description("Slaves whose process data is stale or invalid now, and for how long (ecagent_slave_data_quality_since_timestamp_seconds).").
		Datasource(datasource()).
		WithTarget(tableQuery("A", fmt.Sprintf("time() - %s\nunless on (%s)\n(%s == 1)",
			series("ecagent_slave_data_quality_since_timestamp_seconds", sel), bySlave, series("ecagent_slave_data_quality", sel, `quality="good"`)))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "unit", Value: unitSeconds}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true, "__name__": true, "site": true, "line": true, "host": true, "job": true, "instance": true},
			"renameByName":  map[string]any{"Value": "for"},
		}}).
		NoValue("every slave's data is good")
}

// alStatusCodes lists the slaves that report an AL status code.
func alStatusCodes(sel string) *table.PanelBuilder {
	return codeTable("AL status codes",
		"Slaves reporting an AL status code (the reason a slave refused or left a state; 0x001B sync manager watchdog, 0x002C fatal sync error, …). Empty while every slave is fine.",
		series("ecagent_slave_al_status_code", sel)+" != 0", "AL status code", "all slaves report no error")
}

// driveStates is the CiA 402 state of each drive over time.
func driveStates(sel string) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().
		Title("Drive states").
		Description("CiA 402 state of each drive: operation enabled is running; fault needs a fault reset once the cause is gone (the drive's error code is in the table beside).").
		Datasource(datasource()).
		WithTarget(query(series("ecagent_drive_state", sel), "{{position}} {{name}}")).
		Mappings(driveStateNames()).
		ShowValue(common.VisibilityModeAuto).
		MergeValues(true).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false))
}

// codeTable lists the slaves whose code series is not 0, the code in
// hexadecimal.
func codeTable(title, description, expr, column, empty string) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		WithTarget(tableQuery("A", expr)).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "unit", Value: "hex0x"}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true, "__name__": true, "site": true, "line": true, "host": true, "job": true, "instance": true},
			"renameByName":  map[string]any{"Value": column},
		}}).
		NoValue(empty)
}

// driveErrorCodes lists the drives in fault with their error code.
func driveErrorCodes(sel string) *table.PanelBuilder {
	return codeTable("Drive error codes",
		"Drives in fault and their error code (object 0x603F; 0x2310 over current, 0x3220 DC link under-voltage, 0x8611 following error, 0xFFxx manufacturer specific, …). The MQTT drive-fault event names the code's meaning.",
		series("ecagent_drive_error_code", sel)+" != 0", "error code", "no drive in fault")
}

// driveEvents plots drive faults and CoE emergencies per slave as rates.
func driveEvents(sel string) *timeseries.PanelBuilder {
	return timeSeries("Drive faults and CoE emergencies per second", unitPerSec,
		"Faults of each CiA 402 drive and CoE emergency messages of each slave (error resets included), per second; slaves without any are left out.").
		WithTarget(query(fmt.Sprintf("rate(%s[%s]) > 0", series("ecagent_drive_faults_total", sel), rateInterval), "{{position}} {{name}} faults")).
		WithTarget(query(fmt.Sprintf("rate(%s[%s]) > 0", series("ecagent_coe_emergencies_total", sel), rateInterval), "{{position}} {{name}} emergencies")).
		Min(0)
}

// lastEmergencies lists the slaves whose last CoE emergency was an error
// (not an error reset).
func lastEmergencies(sel string) *table.PanelBuilder {
	return codeTable("Last CoE emergency",
		"Error code of the last CoE emergency message of each slave whose last message was not an error reset (CiA 301 classes: 0x2xxx current, 0x3xxx voltage, 0x4xxx temperature, 0x8xxx monitoring, 0xFFxx device specific).",
		series("ecagent_coe_last_emergency_code", sel)+" != 0", "error code", "no slave reports an emergency")
}

// mqttRates plots the MQTT publisher's message counters as rates.
func mqttRates(sel string) *timeseries.PanelBuilder {
	p := timeSeries("MQTT messages per second", unitPerSec,
		"Messages handed to the MQTT client, acknowledged by the broker, and dropped because the buffer was full; reconnects to the broker.")
	for _, c := range []struct{ name, legend string }{
		{"ecagent_mqtt_messages_published_total", "published"},
		{"ecagent_mqtt_messages_delivered_total", "delivered"},
		{"ecagent_mqtt_messages_dropped_total", "dropped"},
		{"ecagent_mqtt_reconnects_total", "reconnects"},
	} {
		p = p.WithTarget(query(fmt.Sprintf("rate(%s[%s])", series(c.name, sel), rateInterval), c.legend))
	}
	return p.Min(0).
		OverrideByName("dropped", []dashboard.DynamicConfigValue{{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": "red"}}})
}

// mqttBuffer plots the undelivered messages and the connection state.
func mqttBuffer(sel string) *timeseries.PanelBuilder {
	return timeSeries("MQTT buffer and connection", unitCount,
		"Messages waiting for the broker in the bounded buffer (mqtt.buffer), and whether the agent is connected (right axis, 1 connected).").
		WithTarget(query(series("ecagent_mqtt_messages_buffered", sel), "buffered")).
		WithTarget(query(series("ecagent_mqtt_connected", sel), "connected")).
		Min(0).
		OverrideByName("connected", []dashboard.DynamicConfigValue{
			{Id: "custom.axisPlacement", Value: "right"},
			{Id: "max", Value: 1},
			{Id: "custom.drawStyle", Value: "line"},
			{Id: "custom.lineInterpolation", Value: "stepAfter"},
		})
}

// rtChecks shows every host real-time check's status over time. The state
// set ecagent_rt_check{check, status} becomes one code per check: 1 pass,
// 2 warn, 3 fail, 4 skip, from the series at 1 only (as slaveData).
func rtChecks(sel string) *statetimeline.PanelBuilder {
	var terms []string
	for i, status := range []string{"pass", "warn", "fail", "skip"} {
		terms = append(terms, fmt.Sprintf("%d * (%s == 1)", i+1, series("ecagent_rt_check", sel, `status="`+status+`"`)))
	}
	return statetimeline.NewPanelBuilder().
		Title("Real-time checks").
		Description("Every host check of `ecagent rtcheck` (PREEMPT_RT, isolcpus, governor, IRQ affinity, NIC coalescing …), run every minute by the agent. `ecagent rtcheck` on the host says what a failing check found and how to fix it.").
		Datasource(datasource()).
		WithTarget(query("sum by (check) (\n  "+strings.Join(terms, "\nor ")+"\n)", "{{check}}")).
		Mappings(checkStatuses()).
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		RowHeight(0.8).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false))
}

// rtSettings shows whether the host applied each real-time setting the
// cycle process asked for.
func rtSettings(sel string) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().
		Title("Real-time settings of the cycle process").
		Description("SCHED_FIFO, CPU affinity, mlockall and /dev/cpu_dma_latency as requested by the configuration: applied or refused by the host.").
		Datasource(datasource()).
		WithTarget(query(series("ecagent_rt_setting", sel), "{{setting}}")).
		Mappings(valueText([3]string{"1", "applied", "green"}, [3]string{"0", "refused", "red"})).
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false))
}

// collectors shows whether the agent could read what its collectors need.
func collectors(sel string) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().
		Title("Agent collectors").
		Description("Whether the agent could read /proc/stat (host_cpu) and the cycle process's /proc/PID/stat (cycle_process) at each scrape.").
		Datasource(datasource()).
		WithTarget(query(series("ecagent_scrape_collector_success", sel), "{{collector}}")).
		Mappings(valueText([3]string{"1", "ok", "green"}, [3]string{"0", "failing", "red"})).
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false))
}

// nativeHeatmaps is a collapsed row of heatmaps from the native
// histograms (finer buckets), opt-in: a stock Prometheus without native
// histograms leaves them empty.
func nativeHeatmaps(sel string) *dashboard.RowBuilder {
	row := dashboard.NewRowBuilder("Native-histogram heatmaps (Prometheus with native histograms)").Collapsed(true)
	for _, q := range []quantity{jitterQuantity(), wakeupQuantity(), jobQuantity(), frameRTTQuantity()} {
		row = row.WithPanel(heatmapPanel(q.title+" (native histogram)", q.unit,
			"Distribution of "+q.what+" per time step, from the native histogram (about 9 % per bucket). Empty unless Prometheus ingests native histograms (--enable-feature=native-histograms on 2.x, scrape_native_histograms on 3.x).",
			query(heatmapNative(q.histogram, sel), "")).Height(9).Span(12))
	}
	return row
}

// MQTTSeries lists the MQTT publisher's series the dashboards read. Package
// mqtt exports and documents them (they are not in metrics.Documented);
// the tests check that it still does.
func MQTTSeries() []string {
	return []string{
		"ecagent_mqtt_messages_published_total",
		"ecagent_mqtt_messages_delivered_total",
		"ecagent_mqtt_messages_dropped_total",
		"ecagent_mqtt_reconnects_total",
		"ecagent_mqtt_messages_buffered",
		"ecagent_mqtt_connected",
	}
}
