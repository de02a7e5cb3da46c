package otlp

import (
	"context"
	"testing"

	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/contract"
)

// prometheusOnly lists, with the reason, the documented Prometheus
// families that have no OpenTelemetry instrument on purpose. The Exporter
// is fed the cycle's sample ring and its events; these families come from
// what the agent learns elsewhere (the bus scan, the supervision of the
// cycle process, the host, its own build) or describe the Prometheus
// endpoint itself.
func prometheusOnly() map[string]string {
	const (
		scan    = "set from the bus scan and the slaves' registers, not from the sample or event ring"
		dc      = "the distributed-clock configuration, set once after the bus scan"
		process = "the supervision of the cycle process by the agent"
		host    = "read from the host's /proc at scrape time"
		model   = "rendered from the agent's bus model (package busstate) at scrape time, not from the sample or event ring the Exporter is fed; OTLP users get each slave's presence, AL state and data quality in the MQTT state messages, which render the same model"
	)
	only := map[string]string{
		"ecagent_bus_slaves":                                 scan,
		"ecagent_slave_up":                                   model,
		"ecagent_slave_al_state":                             model,
		"ecagent_slave_al_error":                             model,
		"ecagent_slave_al_status_code":                       model,
		"ecagent_slave_presence":                             model,
		"ecagent_slave_data_quality":                         model,
		"ecagent_slave_data_quality_since_timestamp_seconds": model,
		"ecagent_slave_port_errors":                          scan,
		"ecagent_slave_esc_errors":                           scan,
		"ecagent_bus_events_total":                           "the bus supervisor's events, counted by the agent; OTLP users get the same events over MQTT",
		"ecagent_dc_enabled":                                 dc,
		"ecagent_dc_reference_position":                      dc,
		"ecagent_dc_sync0_cycle_seconds":                     dc,
		"ecagent_dc_sync0_shift_seconds":                     dc,
		"ecagent_dc_sync1_shift_seconds":                     dc,
		"ecagent_cycle_process_up":                           process,
		"ecagent_cycle_process_starts_total":                 process,
		"ecagent_maintenance_socket_up":                      "reported once by the cycle process at start in its bus description, not a measurement of the cycle",
		"ecagent_cycle_process_bringup_failures":             model,
		"ecagent_cycle_process_cpu_seconds_total":            host,
		"ecagent_host_cpu_busy_ratio":                        host,
		"ecagent_cycle_core_busy_ratio":                      host,
		"ecagent_scrape_collector_success":                   "the success of a scrape's collectors: a property of the Prometheus endpoint",
		"ecagent_rt_setting":                                 "reported once by the cycle process at start, not a measurement of the cycle",
		"ecagent_rt_check":                                   "the host doctor's verdicts, not a measurement of the cycle",
		"ecagent_build_info":                                 "build identity; OpenTelemetry carries it as the resource attribute service.version",
	}
	for _, e := range contract.Events() {
		if c := e.Counter; c.Stem != "" {
			only[metrics.EventCounterName(c)] = "counted by the agent from the cycle's " + e.Name + " events, as ecagent_bus_events_total"
		}
	}
	return only
}

// TestNamesMirrorPrometheus checks the mirror both ways on what the
// Exporter actually exports, every method exercised: each instrument
// translates to a documented Prometheus family of the same type, and each
// documented family has an instrument unless prometheusOnly names it.
func TestNamesMirrorPrometheus(t *testing.T) {
	e, rcv := newHTTPExporter(t, ProtocolHTTPProtobuf)
	ctx := context.Background()
	reg, err := metrics.NewRegistry(metrics.Options{Site: "plant-1", Line: "line-3", Host: "ipc-7", Target: testTarget, CycleCore: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range testSamples(1000) {
		e.Observe(&s)
		reg.Consumer().Observe(&s)
	}
	e.SetSegment(ringDrops(1))
	e.Window(reg.Consumer().CloseWindow())
	e.Emergency(1, "AKD", 0x8611)
	e.SetDriveState(1, "AKD", 8) // fault
	e.DriveFault(1, "AKD", 0x7305)
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	documented := map[string]metrics.SeriesType{}
	for _, s := range metrics.Documented() {
		documented[s.Name] = s.Type
	}
	only := prometheusOnly()
	mirrored := map[string]string{} // Prometheus name → instrument
	for _, ex := range rcv.Exports() {
		for _, rm := range ex.Request.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					kind, typ := kindGauge, metrics.TypeGauge
					switch {
					case m.GetExponentialHistogram() != nil:
						kind, typ = kindHistogram, metrics.TypeHistogram
					case m.GetSum() != nil:
						kind, typ = kindCounter, metrics.TypeCounter
					}
					p := prometheusName(m.GetName(), m.GetUnit(), kind)
					mirrored[p] = m.GetName()
					if got, ok := documented[p]; !ok || got != typ {
						t.Errorf("instrument %s (unit %q) translates to %s, documented as %q; want a documented %s",
							m.GetName(), m.GetUnit(), p, got, typ)
					}
					if reason, ok := only[p]; ok {
						t.Errorf("%s is mirrored by %s but listed as Prometheus-only (%s)", p, m.GetName(), reason)
					}
				}
			}
		}
	}
	for name := range documented {
		if _, ok := mirrored[name]; !ok && only[name] == "" {
			t.Errorf("%s has no OpenTelemetry instrument and is not listed as Prometheus-only", name)
		}
	}
	for name := range only {
		if _, ok := documented[name]; !ok {
			t.Errorf("Prometheus-only %s is not a documented family", name)
		}
	}
}
