package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register adds a collector of another subsystem (the MQTT publisher, say)
// to the registry, with the fleet labels added to its series like to every
// other. Its series are its own to document.
func (r *Registry) Register(c prometheus.Collector) error {
	if err := r.labelled.Register(c); err != nil {
		return fmt.Errorf("metrics: registering a collector: %w", err)
	}
	return nil
}

// Unregister removes a collector added with Register.
func (r *Registry) Unregister(c prometheus.Collector) bool { return r.labelled.Unregister(c) }
