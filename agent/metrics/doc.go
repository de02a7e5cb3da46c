// Package metrics turns the cycle samples that the cycle process writes into
// the shared-memory ring (package shm) into what the plant and the
// fleet see: Prometheus histograms, counters and exact window statistics,
// the bus, slave and host gauges, and the HTTP endpoint that serves them.
// Nothing here runs in the cycle process.
//
// # Use
//
// The agent builds one Registry, gives its Consumer to the goroutine that
// drains the sample ring, and serves the registry:
//
//	reg, err := metrics.NewRegistry(metrics.Options{Site: …, Line: …, Host: …,
//		Target: cfg.Cycle.Period, Window: cfg.Metrics.Window, CycleCore: cfg.Cycle.Core})
//	c := reg.Consumer()
//	// drain loop (one goroutine):
//	n := ring.Drain(buf)
//	for i := range buf[:n] { c.Observe(&buf[i]) }
//	ring.Commit()
//	c.SetSegment(cyclestats.ReadSegment(ring, seg.Heartbeat()))
//	// every metrics.window, same goroutine:
//	report := c.CloseWindow() // a cyclestats.Report, for MQTT and OTLP too
//
//	srv, err := metrics.NewServer(reg, metrics.ServerOptions{Listen: cfg.Metrics.Listen,
//		WebConfigFile: cfg.Metrics.WebConfig, Ready: busInOPAndCycleRunning})
//	go srv.Run(ctx)
//
// gives it the bus model the agent folds the cycle's events into
// (SetBusModel, package busstate), and tells the registry what it learns
// elsewhere: SetSlaves after a scan, SetSlaveErrorCounters, CycleProcessStarted,
// CycleProcessAttached and CycleProcessExited, SetRTSetting for each
// real-time setting the cycle process asked the host for,
// SetMaintenanceSocket for its maintenance socket, SetRTCheck
// for each host check, and SetDC once the distributed clocks are
// configured. For the cycle's events (the shared-memory event ring) it
// calls, with the slave's position and name:
//
//	shm.EventEmergency          code, _, _ := ev.Emergency(); reg.Emergency(pos, name, code)
//	shm.EventDriveState         reg.SetDriveState(pos, name, int(ev.Value), ev.TextString())
//	shm.EventDriveFault         reg.DriveFault(pos, name, uint16(ev.Value))
//	shm.EventDriveFaultCleared  reg.DriveFaultCleared(pos, name)
//
// These methods are safe for concurrent use, like every Set method.
//
// # What is exported
//
// Documented lists every family with its type, help text and labels
// (SeriesMarkdown renders it for the README). Every series carries the
// fleet labels site, line and host from the configuration, never a
// per-cycle value. In short:
//
//   - Histograms (seconds, classic buckets and native buckets with factor
//     1.1): ecagent_cycle_period_seconds, ecagent_cycle_jitter_seconds
//     (|period − target|), ecagent_wakeup_latency_seconds (wake − deadline),
//     ecagent_job_duration_seconds (end − wake), ecagent_frame_rtt_seconds
//     (receive − send, lost frames left out),
//     ecagent_dc_time_difference_seconds (absolute, when measured),
//     ecagent_dc_controller_error_seconds (absolute error of the controller
//     keeping the cycle on the DC reference time, when measured) and
//     ecagent_cycle_cpu_load_ratio (job duration / target period). Classic
//     buckets are 1-2-5 steps from 1 µs to 10 ms for the timings, from 10 ns
//     to 1 ms for the DC difference and controller error, target ± those
//     steps for the period.
//   - Window gauges, the same quantities over the last closed window with a
//     stat label (min, max, mean, stddev, p50, p90, p99, p999):
//     ecagent_cycle_period_window_seconds, ecagent_cycle_jitter_window_seconds,
//     ecagent_wakeup_latency_window_seconds, ecagent_job_duration_window_seconds,
//     ecagent_frame_rtt_window_seconds, ecagent_dc_time_difference_window_seconds,
//     ecagent_dc_controller_error_window_seconds,
//     ecagent_cycle_cpu_load_window_ratio, and ecagent_window_samples{quantity}
//     for the number of values behind each. The max is exact (histograms
//     blur it); percentiles are nearest-rank, so each is a measured value.
//     The signed jitter (period − target) is the period's statistic minus
//     ecagent_cycle_target_seconds; cyclestats.Report carries it directly.
//   - Counters: one per counter of package cyclestats, ecagent_<stem>_total
//     (ecagent_cycles_total, ecagent_lost_frames_total, …, the segment's
//     ecagent_sample_ring_drops_total and frame and link totals; the
//     README's table lists them all), ecagent_cycle_process_starts_total,
//     ecagent_cycle_process_cpu_seconds_total, and per slave
//     ecagent_coe_emergencies_total{position,name} (CoE emergency
//     messages, 0 from the scan on) and
//     ecagent_drive_faults_total{position,name} (CiA 402 drives).
//   - Gauges: ecagent_cycle_target_seconds, ecagent_expected_wkc,
//     ecagent_bus_slaves, the slave states (see below),
//     ecagent_slave_port_errors{position,name,port,counter} and
//     ecagent_slave_esc_errors{position,name,counter},
//     ecagent_coe_last_emergency_code{position,name},
//     ecagent_drive_state{position,name} (the CiA 402 state: 1 not ready
//     to switch on, 2 switch on disabled, 3 ready to switch on, 4 switched
//     on, 5 operation enabled, 6 quick stop active, 7 fault reaction
//     active, 8 fault, 0 unknown; numbered by package ethercat/cia402/state), ecagent_drive_error_code{position,name}
//     (0x603F while in fault, else 0), ecagent_dc_enabled,
//     ecagent_dc_reference_position (−1 without DC),
//     ecagent_dc_sync0_cycle_seconds, ecagent_dc_sync0_shift_seconds,
//     ecagent_dc_sync1_shift_seconds,
//     ecagent_cycle_process_up, ecagent_host_cpu_busy_ratio,
//     ecagent_cycle_core_busy_ratio,
//     ecagent_scrape_collector_success{collector},
//     ecagent_rt_setting{setting} (1 applied, 0 refused),
//     ecagent_maintenance_socket_up{socket} (0: the cycle process refused
//     to serve its control socket),
//     ecagent_rt_check{check,status} and ecagent_build_info (from
//     client_golang's collectors/version; branch and tags are empty unless
//     the linker sets them).
//
// Besides these, the agent process's own go_* and process_* families and
// promhttp_metric_handler_errors_total are exported, with the fleet labels
// too.
//
// ecagent_rt_check is a state set: for each check, one series per status
// (pass, warn, fail, skip), 1 for the current status and 0 for the others.
// `ecagent_rt_check{status="fail"} == 1` alerts on a failing check; a
// check changing status flips two series instead of creating a new one.
//
// # Slave states
//
// The per-slave state series are not kept here: at each scrape they are
// rendered from one snapshot of the bus model, the model /readyz, MQTT and
// the log render too, so no output can call a slave OP that another calls
// lost. Each carries position and name:
//
//   - ecagent_slave_up: 1 while the slave answers (present or being
//     reconnected), 0 while it does not (lost, or refused: another device
//     at its position). Like Prometheus's own up, `== 0` is the alert.
//   - ecagent_slave_al_state: the AL state as last read while the slave
//     answers (1 INIT, 2 PREOP, 3 BOOT, 4 SAFEOP, 8 OP), 0 while it does
//     not. A slave that does not answer has no state, and the OP it was
//     last seen in must not stand for one; removing the series instead
//     would leave `ecagent_slave_al_state != 8` quiet, since an absent
//     series compares to nothing.
//   - ecagent_slave_al_error (the AL status error bit) and
//     ecagent_slave_al_status_code (its reason, 0 without the bit):
//     SAFEOP+ERR 0x001B is al_state 4, al_error 1, al_status_code 27.
//   - ecagent_slave_presence{presence} (present, lost, refused,
//     reconnecting) and ecagent_slave_data_quality{quality} (good, stale,
//     invalid): state sets like ecagent_rt_check.
//   - ecagent_slave_data_quality_since_timestamp_seconds: when the data
//     quality took its current value; `time() - …` is how long a slave's
//     inputs have been stale.
//
// The host busy fractions are computed from /proc/stat between the last
// two readings, which are taken at scrape time but at most once a second.
// Busy is everything but idle and iowait.
//
// # One definition of a sample's figures
//
// What a cycle sample measures is defined once, in package cyclestats:
// Quantity and Counter list the figures, each with a row (stem, unit,
// help text), and Documented takes its entries for them from there,
// naming each family after its row (HistogramName, WindowName,
// CounterName). cyclestats.Deriver computes the Figures of each sample
// (which quantities it measured and their values, what it adds to each
// counter), cyclestats.Windows the exact statistics of each window, and
// cyclestats.Report.Values gives a closed window's statistics of a
// quantity in its unit. The Consumer records those figures as Prometheus
// series; package agent/metrics/otlp records the same figures, from its own
// Deriver, as OpenTelemetry instruments named after the same rows, and
// package mqtt publishes the window reports. None of them computes a
// figure of its own.
//
// # Cost
//
// Consumer.Observe does not allocate (a test proves it) and costs about
// 0.3 µs per sample on a 2-core VM: Deriver.Derive (allocation-free
// too), up to eight histogram observations and seven window adds. CloseWindow sorts the window's values (under 1 ms for a 10 s
// window at 1 kHz) and does not allocate either.
package metrics
