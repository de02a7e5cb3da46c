// Package docs holds the repository's documentation beyond the README:
// operations, deployment, performance, architecture, and the metrics and
// MQTT references.
//
// The package has no code of its own. Its tests generate the reference
// sections of metrics.md and mqtt.md from the agent's own code (the
// Prometheus registry's descriptors, the OTLP exporter's instruments and
// the messages the MQTT publisher sends), fail when a committed file has
// drifted from what the code says, and check that every relative link of
// README.md and docs/*.md names a file of the repository. Regenerate with
//
//	go test ./docs -update
package docs
