package otlp

import (
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/metrics"
)

// quantity indexes the measured figures, in the order of metrics'
// quantities.
type quantity int

const (
	qPeriod quantity = iota
	qJitter
	qWakeup
	qJob
	qFrameRTT
	qDCTimeDiff
	qDCCtlErr
	qCPULoad
	numQuantities
)

// numStats is the number of window statistics (metrics.WindowStats).
const numStats = 8

// Units, as UCUM codes.
const (
	unitSeconds = "s"
	unitRatio   = "1"
	counterUnit = "{event}"
)

// quantitySpec names a quantity's histogram; its window gauge is the same
// name with "_window".
type quantitySpec struct{ name, unit string }

func quantitySpecs() [numQuantities]quantitySpec {
	return [numQuantities]quantitySpec{
		qPeriod:     {"ecagent.cycle_period", unitSeconds},
		qJitter:     {"ecagent.cycle_jitter", unitSeconds},
		qWakeup:     {"ecagent.wakeup_latency", unitSeconds},
		qJob:        {"ecagent.job_duration", unitSeconds},
		qFrameRTT:   {"ecagent.frame_rtt", unitSeconds},
		qDCTimeDiff: {"ecagent.dc_time_difference", unitSeconds},
		qDCCtlErr:   {"ecagent.dc_controller_error", unitSeconds},
		qCPULoad:    {"ecagent.cycle_cpu_load", unitRatio},
	}
}

// Counter names.
const (
	nameCycles     = "ecagent.cycles"
	nameOverruns   = "ecagent.cycle_overruns"
	nameSkipped    = "ecagent.cycle_skipped"
	nameLostFrames = "ecagent.lost_frames"
	nameWKCErrors  = "ecagent.wkc_errors"
	nameRingDrops  = "ecagent.sample_ring_drops"
)

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
