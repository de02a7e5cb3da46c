// Package docs holds the repository's documentation beyond the README:
// operations, deployment, performance (and its dated log), architecture,
// and the metrics and MQTT references.
//
// The package has no code of its own. Its tests generate the reference
// sections of metrics.md and mqtt.md from the agent's own code (the
// Prometheus registry's descriptors, the OTLP exporter's instruments and
// the messages the MQTT publisher sends), fail when a committed file has
// drifted from what the code says, check that every relative link of
// README.md and docs/*.md names a file of the repository and every anchor
// a heading of its file, and keep performance.md to today's figures in
// under 300 lines (its dated record is performance-log.md). Regenerate with
//
//	go test ./docs -update
package docs
