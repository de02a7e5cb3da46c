package otlp

import (
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics"
)

// Units, as UCUM codes.
const (
	unitSeconds = "s"
	unitRatio   = "1"
	counterUnit = "{event}"
	// unitWKC and unitValues are annotations (UCUM curly braces), like
	// counterUnit: the Collector's Prometheus translation adds no suffix
	// for them.
	unitWKC    = "{wkc}"
	unitValues = "{value}"
)

// Names of the instruments fed by the sample stream besides the
// quantities' and the counters' (see quantityName and counterName): the
// mirrors of ecagent_window_samples, ecagent_expected_wkc and
// ecagent_cycle_target_seconds.
const (
	nameWindowSamples = "ecagent.window_samples"
	nameExpectedWKC   = "ecagent.expected_wkc"
	nameTarget        = "ecagent.cycle_target"
)

// quantityName returns the name of a quantity's histogram, e.g.
// ecagent.cycle_jitter; its window gauge is the same name with "_window".
func quantityName(q cyclestats.Quantity) string { return "ecagent." + q.Info().Stem }

// quantityUnit returns the UCUM code of a quantity's unit.
func quantityUnit(q cyclestats.Quantity) string {
	if q.Info().Unit == cyclestats.UnitRatio {
		return unitRatio
	}
	return unitSeconds
}

// counterName returns the name of a counter, e.g. ecagent.lost_frames.
func counterName(c cyclestats.Counter) string { return "ecagent." + c.Info().Stem }

// Names and units of the instruments fed by the cycle's events (the
// Exporter's event methods), per slave.
const (
	nameEmergencies   = "ecagent.coe_emergencies"
	nameLastEmergency = "ecagent.coe_last_emergency_code"
	nameDriveState    = "ecagent.drive_state"
	nameDriveFaults   = "ecagent.drive_faults"
	nameDriveError    = "ecagent.drive_error_code"
	// unitCode and unitState are annotations (UCUM curly braces): the
	// Collector's Prometheus translation adds no suffix for them.
	unitCode  = "{code}"
	unitState = "{state}"
)

// instrumentKind is what prometheusName needs to know of an instrument.
type instrumentKind int

const (
	kindHistogram instrumentKind = iota + 1
	kindGauge
	kindCounter
)

// prometheusName returns the Prometheus name an OpenTelemetry Collector
// gives an instrument of this package (the otlptranslator rules for these
// names): dots become underscores, the unit s adds _seconds and 1 adds
// _ratio, counters end in _total. It is the name of the matching family
// of the agent's /metrics.
func prometheusName(name, unit string, kind instrumentKind) string {
	n := strings.ReplaceAll(name, ".", "_")
	switch unit {
	case unitSeconds:
		n += "_seconds"
	case unitRatio:
		n += "_ratio"
	}
	if kind == kindCounter {
		n += "_total"
	}
	return n
}

// helpOf returns the help text of a documented Prometheus family.
func helpOf(catalog []metrics.Series, name string) (string, error) {
	for _, s := range catalog {
		if s.Name == name {
			return s.Help, nil
		}
	}
	return "", fmt.Errorf("%s mirrors no documented series", name)
}
