// Package otlp exports the cycle's measurements through OpenTelemetry: the
// same figures as the Prometheus endpoint of package metrics, pushed with
// the OTLP exporter over gRPC or HTTP/protobuf to a collector. It runs in
// the agent process only, beside metrics.Consumer, and is off unless an
// endpoint is configured.
//
// # Use
//
//	opts := otlp.Options{Endpoint: cfg.OTLP.Endpoint, Protocol: …, Interval: …,
//		Site: cfg.Site, Line: cfg.Line, Host: cfg.Host, Version: build.Version,
//		Target: cfg.Cycle.Period}
//	if opts.Enabled() {
//		exp, err := otlp.New(ctx, opts)
//		// drain loop (the goroutine that calls metrics.Consumer.Observe):
//		exp.Observe(&sample)
//		// every metrics.window, with the consumer's report:
//		exp.Window(report)
//		// for the cycle's events, beside the metrics.Registry calls:
//		exp.Emergency(pos, name, code)          // shm.EventEmergency
//		exp.SetDriveState(pos, name, state)     // shm.EventDriveState
//		exp.DriveFault(pos, name, code)         // shm.EventDriveFault
//		exp.DriveFaultCleared(pos, name)        // shm.EventDriveFaultCleared
//		// on the way out:
//		exp.Shutdown(ctx)
//	}
//
// # What is exported
//
// Instrument names are chosen so that an OpenTelemetry Collector's
// Prometheus translation (dots to underscores, the unit as a suffix,
// counters with _total) gives back the names of the Prometheus endpoint:
// ecagent.cycle_jitter (unit s) becomes ecagent_cycle_jitter_seconds. The
// names, units and descriptions of the sample's figures come from the rows
// of package cyclestats (cyclestats.Quantity, cyclestats.Counter: the
// instrument is ecagent.<stem>), and the figures themselves from
// cyclestats.Deriver, the computation the Prometheus consumer records
// too; this package only records them. A test checks the
// mirror both ways: every instrument translates to a documented
// Prometheus family of its type, and every documented family has an
// instrument, except those it lists as Prometheus-only with the reason
// (the bus scan's, the cycle process supervision's, the host's and the
// build's gauges, which do not come from the sample or event rings).
//
//   - Histograms, as base-2 exponential histograms (at most 160 buckets,
//     the scale chosen by the SDK; over 1 µs … 10 ms that is scale 3,
//     about 9 % per bucket, the resolution of the native Prometheus
//     histograms), with min and max: ecagent.cycle_period,
//     ecagent.cycle_jitter (|period − target|), ecagent.wakeup_latency,
//     ecagent.job_duration, ecagent.frame_rtt, ecagent.dc_time_difference,
//     ecagent.dc_controller_error (seconds) and ecagent.cycle_cpu_load
//     (job / target period, unit 1).
//   - Counters, one per counter of package cyclestats (ecagent.cycles,
//     ecagent.lost_frames, …; docs/metrics.md lists them all), exported
//     from the start at 0; the segment counters, running totals the
//     segment holds (ecagent.sample_ring_drops, the frame and link
//     totals), are observed at each export.
//   - Gauges of the exact window statistics, recorded when a window closes,
//     with the attribute stat (min, max, mean, stddev, p50, p90, p99,
//     p999): ecagent.cycle_period_window … ecagent.cycle_cpu_load_window;
//     and ecagent.window_samples with the attribute quantity, the number
//     of values behind each quantity's statistics.
//   - Gauges read at each export: ecagent.cycle_target (seconds) and
//     ecagent.expected_wkc (from the first sample on).
//   - Per slave, with the attributes position (int) and name, from the
//     event methods: the counters ecagent.coe_emergencies and
//     ecagent.drive_faults, the gauges ecagent.coe_last_emergency_code,
//     ecagent.drive_state (the numbers of ecagent_drive_state) and
//     ecagent.drive_error_code. They appear with the first event.
//
// Besides stat, quantity and the per-slave attributes, data points carry no
// attributes of their own; the fleet identity is the resource:
// service.name (ecagent), service.version, service.instance.id
// (site/line/host), host.name, and site, line and host verbatim (so that dashboards written for the Prometheus labels
// work on the Collector's output with resource_to_telemetry_conversion).
//
// # Configuration and the OTEL_* environment
//
// Options.Endpoint is a base URL like OTEL_EXPORTER_OTLP_ENDPOINT: for
// HTTP, /v1/metrics is appended; https:// means TLS, http:// plain text.
// What Options leave empty, the standard environment variables decide,
// read by the OpenTelemetry exporters themselves:
// OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY, _INSECURE and
// OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE; this package reads
// OTEL_EXPORTER_OTLP_[METRICS_]PROTOCOL (grpc or http/protobuf), and the
// SDK OTEL_METRIC_EXPORT_INTERVAL, OTEL_METRIC_EXPORT_TIMEOUT,
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME. OTEL_SDK_DISABLED=true
// and OTEL_METRICS_EXPORTER=none turn the export off.
//
// # Cost
//
// Observe derives the sample's figures (allocation-free) and records up to
// eight histogram values and up to six counter increments into the
// OpenTelemetry SDK: about 1 µs per sample on a 2-core
// VM, and no allocation (a test proves it), so it adds nothing for the
// agent process's garbage collector. The export itself runs on the SDK's
// own goroutine.
package otlp
