// Package cyclestats defines once what the agent measures of the cycle
// from the samples the cycle process writes into the shared-memory ring
// (package shm), and computes it: the figures of each sample and the exact
// statistics of each window. Every output renders these figures and none
// computes one of its own: package metrics as Prometheus series, package
// agent/metrics/otlp as OpenTelemetry instruments, package mqtt as the JSON
// stats message and the Sparkplug edge node's statistics metrics, and the
// bench report. It runs in the agent, never in the cycle process, and
// knows nothing of its renderers: it imports shm only.
//
// # The rows
//
// Quantity lists what a sample measures (the period, the jitter, the
// wake-up latency, …) and Counter what it counts (cycles, overruns, lost
// frames, …, and the segment counters the segment holds as running
// totals). Each has a row (Quantity.Info, Counter.Info) that names it
// without any renderer's spelling — a stem, a unit, help texts, a key and
// places in the MQTT statistics — from which each renderer derives its
// own names: Prometheus ecagent_<stem>_seconds and ecagent_<stem>_total,
// OpenTelemetry ecagent.<stem>, JSON <key>_ns, Sparkplug
// Stats/<key>_<stat>_ns at a fixed alias. Adding a counter is adding a
// row (and, for a segment counter, its reading in ReadSegment): every
// renderer, the generated documentation and the dashboards' checks follow.
//
// # The computation
//
// Deriver.Derive turns one sample into its Figures: which quantities it
// measured and their values, what it adds to each counter.
// Deriver.SetSegment takes the segment counters' running totals
// (ReadSegment), which continue across a new cycle process. Windows adds
// each sample's figures to the open window and Close returns its Report:
// the exact statistics of each quantity (package agent/cyclestats/stats: the
// max is exact, the percentiles nearest-rank, so each is a measured value)
// and what each counter grew by. Observe and Derive do not allocate;
// Close sorts the window's values and does not allocate either.
package cyclestats
