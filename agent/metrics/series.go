package metrics

import (
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/agent/cyclestats"
)

// SeriesType is the Prometheus type of a documented series, spelled as in
// the text exposition format's TYPE line.
type SeriesType string

// The series types ecagent exports.
const (
	TypeCounter   SeriesType = "counter"
	TypeGauge     SeriesType = "gauge"
	TypeHistogram SeriesType = "histogram"
)

// Series documents one metric family that the agent exports. [Documented]
// lists them all; the registry takes each family's help text from there, so
// the list, the exposition and the README cannot drift apart.
type Series struct {
	// Name is the metric family name, e.g. "ecagent_cycle_jitter_seconds".
	Name string
	// Type is counter, gauge or histogram.
	Type SeriesType
	// Help is the family's HELP text.
	Help string
	// Labels are the family's own labels, besides the fleet labels every
	// series carries (see [FleetLabels]).
	Labels []string
	// Conditional says when the family can be absent from a scrape; empty
	// means it is always present.
	Conditional string
}

// HistogramName returns the Prometheus name of quantity q's histogram,
// from its row: ecagent_<stem>_seconds, or _ratio for a ratio.
func HistogramName(q cyclestats.Quantity) string { return "ecagent_" + q.Info().Stem + unitSuffix(q) }

// WindowName returns the Prometheus name of quantity q's window gauges:
// its histogram's name with "window" before the unit.
func WindowName(q cyclestats.Quantity) string {
	return "ecagent_" + q.Info().Stem + "_window" + unitSuffix(q)
}

// CounterName returns the Prometheus name of counter c, from its row:
// ecagent_<stem>_total.
func CounterName(c cyclestats.Counter) string { return "ecagent_" + c.Info().Stem + "_total" }

// unitSuffix is the base unit's suffix of q's names.
func unitSuffix(q cyclestats.Quantity) string {
	if q.Info().Unit == cyclestats.UnitRatio {
		return "_ratio"
	}
	return "_seconds"
}

// Metric family names besides those of the quantities and counters of the
// cycle (HistogramName, WindowName, CounterName). Counters end in _total.
const (
	nameWindowSamples     = "ecagent_window_samples"
	nameTarget            = "ecagent_cycle_target_seconds"
	nameExpectedWKC       = "ecagent_expected_wkc"
	nameBusSlaves         = "ecagent_bus_slaves"
	nameSlaveALState      = "ecagent_slave_al_state"
	nameSlaveALStatus     = "ecagent_slave_al_status_code"
	nameSlaveUp           = "ecagent_slave_up"
	nameSlaveALError      = "ecagent_slave_al_error"
	nameSlavePresence     = "ecagent_slave_presence"
	nameSlaveQuality      = "ecagent_slave_data_quality"
	nameSlaveQualitySince = "ecagent_slave_data_quality_since_timestamp_seconds"
	nameSlavePortErrors   = "ecagent_slave_port_errors"
	nameSlaveESCErrors    = "ecagent_slave_esc_errors"
	nameProcessUp         = "ecagent_cycle_process_up"
	nameProcessStarts     = "ecagent_cycle_process_starts_total"
	nameBringUpFailures   = "ecagent_cycle_process_bringup_failures"
	nameBusEvents         = "ecagent_bus_events_total"
	nameProcessCPU        = "ecagent_cycle_process_cpu_seconds_total"
	nameHostBusy          = "ecagent_host_cpu_busy_ratio"
	nameCoreBusy          = "ecagent_cycle_core_busy_ratio"
	nameCollectorOK       = "ecagent_scrape_collector_success"
	nameRTSetting         = "ecagent_rt_setting"
	nameMaintenanceUp     = "ecagent_maintenance_socket_up"
	nameRTCheck           = "ecagent_rt_check"
	nameBuildInfo         = "ecagent_build_info"
	nameDCEnabled         = "ecagent_dc_enabled"
	nameDCReference       = "ecagent_dc_reference_position"
	nameDCSync0Cycle      = "ecagent_dc_sync0_cycle_seconds"
	nameDCSync0Shift      = "ecagent_dc_sync0_shift_seconds"
	nameDCSync1Shift      = "ecagent_dc_sync1_shift_seconds"
	nameEmergencies       = "ecagent_coe_emergencies_total"
	nameLastEmergency     = "ecagent_coe_last_emergency_code"
	nameDriveState        = "ecagent_drive_state"
	nameDriveFaults       = "ecagent_drive_faults_total"
	nameDriveErrorCode    = "ecagent_drive_error_code"
)

// Label names.
const (
	labelSite     = "site"
	labelLine     = "line"
	labelHost     = "host"
	labelStat     = "stat"
	labelQuantity = "quantity"
	labelPosition = "position"
	labelName     = "name"
	labelPort     = "port"
	labelCounter  = "counter"
	labelSetting  = "setting"
	labelCheck    = "check"
	labelStatus   = "status"
	labelColl     = "collector"
	labelKind     = "kind"
	labelReason   = "reason"
	labelPresence = "presence"
	labelQuality  = "quality"
	labelSocket   = "socket"
)

// FleetLabels returns the names of the labels every series carries, with
// values from the configuration: site, line and host.
func FleetLabels() []string { return []string{labelSite, labelLine, labelHost} }

// WindowStats returns the values of the stat label of the window gauges
// (ecagent_*_window_*), in cyclestats.Stat order, the order the README
// lists them. Percentiles use the nearest-rank definition of package
// agent/cyclestats/stats, so every figure is a value that was actually
// measured.
func WindowStats() []string {
	out := make([]string, cyclestats.NumStats)
	for st := range cyclestats.NumStats {
		out[st] = st.String()
	}
	return out
}

// Documented returns every metric family the agent exports (besides the
// standard go_* and process_* families of the agent process itself), in a
// stable order. Each call returns a fresh slice.
func Documented() []Series {
	out := make([]Series, 0, 64)
	for q := range cyclestats.NumQuantities {
		out = append(out, Series{Name: HistogramName(q), Type: TypeHistogram, Help: q.Info().Help})
	}
	for q := range cyclestats.NumQuantities {
		out = append(out, Series{Name: WindowName(q), Type: TypeGauge, Labels: []string{labelStat}, Help: q.Info().WindowHelp})
	}
	out = append(out, Series{Name: nameWindowSamples, Type: TypeGauge, Labels: []string{labelQuantity},
		Help: "Number of values behind the window statistics of a quantity in the last closed window."})
	for c := range cyclestats.NumCounters {
		out = append(out, Series{Name: CounterName(c), Type: TypeCounter, Help: c.Info().Help})
	}
	for _, group := range [][]Series{busSeries(), devicesSeries(), eventSeries(), processSeries(), setupSeries()} {
		out = append(out, group...)
	}
	return out
}

// busSeries documents the families of the segment and its slaves: the configuration, the scan and the state model.
func busSeries() []Series {
	return []Series{
		{Name: nameTarget, Type: TypeGauge, Help: "Configured (target) cycle period."},
		{Name: nameExpectedWKC, Type: TypeGauge, Help: "Working counter the bus configuration expects of the cyclic frame.",
			Conditional: "after the first cycle sample"},
		{Name: nameBusSlaves, Type: TypeGauge, Help: "Number of slaves found on the EtherCAT segment."},
		{Name: nameSlaveUp, Type: TypeGauge, Labels: []string{labelPosition, labelName},
			Help:        "1 while a configured slave answers at its position (present, or being reconnected), 0 while it does not (lost, or another device answers in its place).",
			Conditional: "once the cycle process brought the bus up"},
		{Name: nameSlaveALState, Type: TypeGauge, Labels: []string{labelPosition, labelName},
			Help:        "EtherCAT application-layer state of a slave as last read while it answers: 1 INIT, 2 PREOP, 3 BOOT, 4 SAFEOP, 8 OP; 0 while it does not answer (lost or refused).",
			Conditional: "once the cycle process brought the bus up"},
		{Name: nameSlaveALError, Type: TypeGauge, Labels: []string{labelPosition, labelName},
			Help:        "1 while a slave's AL status has the error bit set (e.g. SAFEOP+ERR), 0 otherwise.",
			Conditional: "once the cycle process brought the bus up"},
		{Name: nameSlaveALStatus, Type: TypeGauge, Labels: []string{labelPosition, labelName},
			Help:        "AL status code of a slave (register 0x0134) while its AL status has the error bit set; 0 otherwise.",
			Conditional: "while a slave reports an AL status code (always with metrics.detail full)"},
		{Name: nameSlavePresence, Type: TypeGauge, Labels: []string{labelPosition, labelName, labelPresence},
			Help:        "Presence of a configured slave as a state set: 1 for the current one (present, lost, refused: another device at its position, reconnecting); with metrics.detail full also 0 for the others.",
			Conditional: "once the cycle process brought the bus up"},
		{Name: nameSlaveQuality, Type: TypeGauge, Labels: []string{labelPosition, labelName, labelQuality},
			Help:        "Quality of a slave's process data as a state set: 1 for the current one (good: exchanged in the last cycle; stale: the last values received; invalid: none to show); with metrics.detail full also 0 for the others.",
			Conditional: "once the cycle process brought the bus up"},
		{Name: nameSlaveQualitySince, Type: TypeGauge, Labels: []string{labelPosition, labelName},
			Help:        "Unix time at which a slave's process data took its current quality.",
			Conditional: "while a slave's data is not good (always with metrics.detail full)"},
		{Name: nameSlavePortErrors, Type: TypeGauge, Labels: []string{labelPosition, labelName, labelPort, labelCounter},
			Help:        "ESC error counter of a slave's port (registers 0x0300-0x030B, 0x0310-0x0313; saturates at 255): invalid_frame, rx_error, forwarded_rx_error or lost_link.",
			Conditional: "once the agent read the slaves' error counters and one counted (always with metrics.detail full)"},
		{Name: nameSlaveESCErrors, Type: TypeGauge, Labels: []string{labelPosition, labelName, labelCounter},
			Help:        "ESC error counter of a slave not tied to a port (registers 0x030C-0x030D; saturates at 255): processing_unit or pdi.",
			Conditional: "once the agent read the slaves' error counters and one counted (always with metrics.detail full)"},
	}
}

// devicesSeries documents the families of distributed clocks and the devices' own reports (CoE emergencies, CiA 402 drives).
func devicesSeries() []Series {
	return []Series{
		{Name: nameDCEnabled, Type: TypeGauge, Help: "1 when distributed clocks are configured on the segment, 0 otherwise."},
		{Name: nameDCReference, Type: TypeGauge, Help: "Position of the slave whose clock is the distributed-clock reference; -1 when distributed clocks are off."},
		{Name: nameDCSync0Cycle, Type: TypeGauge, Help: "SYNC0 cycle time the slaves are configured with; 0 when distributed clocks are off."},
		{Name: nameDCSync0Shift, Type: TypeGauge, Help: "Shift of SYNC0 from the start of the cycle on the distributed-clock time; 0 when distributed clocks are off."},
		{Name: nameDCSync1Shift, Type: TypeGauge, Help: "Shift of SYNC1 from SYNC0; 0 when distributed clocks are off or SYNC1 is not used."},
		{Name: nameEmergencies, Type: TypeCounter, Labels: []string{labelPosition, labelName},
			Help:        "CoE emergency messages a slave sent, error resets (error code 0) included.",
			Conditional: "once the bus was scanned"},
		{Name: nameLastEmergency, Type: TypeGauge, Labels: []string{labelPosition, labelName},
			Help:        "Error code (CiA 301) of the last CoE emergency message a slave sent; 0 after an error reset.",
			Conditional: "once a slave sent a CoE emergency"},
		{Name: nameDriveState, Type: TypeGauge, Labels: []string{labelPosition, labelName},
			Help: "CiA 402 state of a drive: 1 not ready to switch on, 2 switch on disabled, 3 ready to switch on, " +
				"4 switched on, 5 operation enabled, 6 quick stop active, 7 fault reaction active, 8 fault; 0 unknown.",
			Conditional: "once a CiA 402 drive reported its state"},
		{Name: nameDriveFaults, Type: TypeCounter, Labels: []string{labelPosition, labelName},
			Help:        "Times a CiA 402 drive went to fault.",
			Conditional: "once a CiA 402 drive reported its state"},
		{Name: nameDriveErrorCode, Type: TypeGauge, Labels: []string{labelPosition, labelName},
			Help:        "Error code (object 0x603F) of a CiA 402 drive in fault; 0 when it is not in fault.",
			Conditional: "once a CiA 402 drive reported its state"},
	}
}

// processSeries documents the families of the cycle process and the host.
func processSeries() []Series {
	return []Series{
		{Name: nameProcessUp, Type: TypeGauge, Help: "1 while the cycle process runs cycles, 0 when it is not running or its heartbeat stopped."},
		{Name: nameProcessStarts, Type: TypeCounter, Help: "Times the agent started the cycle process."},
		{Name: nameBringUpFailures, Type: TypeGauge, Labels: []string{labelReason},
			Help: "Bring-ups of the cycle process that failed in a row since one last ran, under the reason of the last " +
				"(link, no-answer, not-as-configured, failed); 0 (with metrics.detail full) under the other reasons, and under all once a cycle process runs. " +
				"The agent tries again without end, backing off from 0.1 s to 10 s.",
			Conditional: "after a failed bring-up (always with metrics.detail full, once the agent has its bus model)"},
		{Name: nameProcessCPU, Type: TypeCounter, Help: "CPU time (user and system) the running cycle process has used, from /proc/PID/stat.",
			Conditional: "while the cycle process runs"},
		{Name: nameHostBusy, Type: TypeGauge, Help: "Busy fraction of all CPUs of the host between the last two readings of /proc/stat (at most one reading per second).",
			Conditional: "from the first scrape at which /proc/stat has advanced"},
		{Name: nameCoreBusy, Type: TypeGauge, Help: "Busy fraction of the cycle's CPU between the last two readings of /proc/stat (at most one reading per second).",
			Conditional: "when the cycle is pinned to a CPU; from the first scrape at which /proc/stat has advanced"},
		{Name: nameCollectorOK, Type: TypeGauge, Labels: []string{labelColl},
			Help: "1 if the collector (host_cpu, cycle_process) could read its source at this scrape, 0 if not."},
	}
}

// setupSeries documents the families of the host's real-time settings and checks, the maintenance socket and the build.
func setupSeries() []Series {
	return []Series{
		{Name: nameRTSetting, Type: TypeGauge, Labels: []string{labelSetting},
			Help:        "Real-time setting of the cycle process: 1 applied, 0 refused by the host.",
			Conditional: "for settings the configuration asks for, once the cycle process reported them"},
		{Name: nameMaintenanceUp, Type: TypeGauge, Labels: []string{labelSocket},
			Help: "1 while the cycle process serves its maintenance (control) socket, 0 when it refused to: its place belongs " +
				"to another user or is a symbolic link (the log says why); the cycle runs on, maintenance commands cannot reach it.",
			Conditional: "once the cycle process reported it"},
		{Name: nameRTCheck, Type: TypeGauge, Labels: []string{labelCheck, labelStatus},
			Help:        "Host real-time check result as a state set: 1 for the check's current status (pass, warn, fail, skip), 0 for the others.",
			Conditional: "once the agent ran the host checks"},
		{Name: nameBuildInfo, Type: TypeGauge, Labels: []string{"version", "revision", "branch", "goversion", "goos", "goarch", "tags"},
			Help: "A metric with a constant '1' value labeled by version, revision, branch, goversion from which ecagent was built, and the goos and goarch for the build."},
	}
}

// helpOf returns the help text of a documented family; it panics on an
// undocumented name, which is a programming error caught by every test
// that builds a Registry.
func helpOf(catalog []Series, name string) string {
	for _, s := range catalog {
		if s.Name == name {
			return s.Help
		}
	}
	panic(fmt.Sprintf("metrics: series %q is not documented", name))
}

// SeriesMarkdown renders the documented series as a Markdown table (name,
// type, labels, meaning), ready for a README.
func SeriesMarkdown() string {
	var b strings.Builder
	b.WriteString("| series | type | labels | meaning |\n|---|---|---|---|\n")
	for _, s := range Documented() {
		labels := "—"
		if len(s.Labels) > 0 {
			labels = "`" + strings.Join(s.Labels, "`, `") + "`"
		}
		help := s.Help
		if s.Conditional != "" {
			help += " *Present " + s.Conditional + ".*"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Name, s.Type, labels, strings.ReplaceAll(help, "|", `\|`))
	}
	return b.String()
}
