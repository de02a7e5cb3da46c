package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// slaveKey identifies the series of one slave: its position and name
// labels.
type slaveKey struct {
	position string
	name     string
}

// deviceSeries are the per-slave series fed by the cycle's events: CoE
// emergencies and CiA 402 drive states and faults.
type deviceSeries struct {
	emergencies   *prometheus.CounterVec
	lastEmergency *prometheus.GaugeVec
	driveState    *prometheus.GaugeVec
	driveFaults   *prometheus.CounterVec
	driveError    *prometheus.GaugeVec

	// mu serialises the changes of the series with the bookkeeping of
	// which slaves have them.
	mu     sync.Mutex
	known  map[slaveKey]bool // slaves with any of these series
	drives map[slaveKey]bool // slaves with drive series
}

func newDeviceSeries(b *builder) *deviceSeries {
	return &deviceSeries{
		emergencies:   b.counterVec(nameEmergencies, labelPosition, labelName),
		lastEmergency: b.gaugeVec(nameLastEmergency, labelPosition, labelName),
		driveState:    b.gaugeVec(nameDriveState, labelPosition, labelName),
		driveFaults:   b.counterVec(nameDriveFaults, labelPosition, labelName),
		driveError:    b.gaugeVec(nameDriveErrorCode, labelPosition, labelName),
		known:         map[slaveKey]bool{},
		drives:        map[slaveKey]bool{},
	}
}

func keyOf(position int, name string) slaveKey {
	return slaveKey{position: strconv.Itoa(position), name: name}
}

// setSlaves drops the series of slaves that are no longer on the bus and
// starts the emergency counter of every slave (at 0 for a new one, so that
// the first emergency is an increase and not a new series).
func (d *deviceSeries) setSlaves(slaves []Slave) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := make(map[slaveKey]bool, len(slaves))
	for _, s := range slaves {
		now[keyOf(s.Position, s.Name)] = true
	}
	for k := range d.known {
		if !now[k] {
			d.forgetLocked(k)
		}
	}
	for k := range now {
		d.known[k] = true
		d.emergencies.WithLabelValues(k.position, k.name)
	}
}

// forgetLocked deletes every series of one slave.
func (d *deviceSeries) forgetLocked(k slaveKey) {
	d.emergencies.DeleteLabelValues(k.position, k.name)
	d.lastEmergency.DeleteLabelValues(k.position, k.name)
	d.driveState.DeleteLabelValues(k.position, k.name)
	d.driveFaults.DeleteLabelValues(k.position, k.name)
	d.driveError.DeleteLabelValues(k.position, k.name)
	delete(d.drives, k)
	delete(d.known, k)
}

// driveLocked creates the fault series of a drive seen for the first time:
// no fault so far, error code 0.
func (d *deviceSeries) driveLocked(k slaveKey) {
	if d.drives[k] {
		return
	}
	d.drives[k] = true
	d.known[k] = true
	d.driveFaults.WithLabelValues(k.position, k.name)
	d.driveError.WithLabelValues(k.position, k.name).Set(0)
}

// Emergency counts a CoE emergency message the slave at position sent
// (shm.EventEmergency; code is the first value (*shm.Event).Emergency
// returns) and sets ecagent_coe_last_emergency_code to its error code. An
// error reset (code 0) is counted as well and sets the last code to 0. It
// is safe for concurrent use.
func (r *Registry) Emergency(position int, name string, code uint16) {
	d, k := r.devices, keyOf(position, name)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.known[k] = true
	d.emergencies.WithLabelValues(k.position, k.name).Inc()
	d.lastEmergency.WithLabelValues(k.position, k.name).Set(float64(code))
}

// SetDriveState sets ecagent_drive_state of the CiA 402 drive at position
// (shm.EventDriveState: state is the event's Value, stateName its Text).
// state is the number of a state.State (package ethercat/cia402/state
// defines the numbers, 0 unknown to 8 fault) and is exported as it comes;
// the name is not exported, the gauge's help text lists the numbers. A drive's first event also starts its
// fault counter at 0 and its error code at 0. It is safe for concurrent
// use.
func (r *Registry) SetDriveState(position int, name string, state int, stateName string) {
	_ = stateName // the number is the series' value; the help text names it
	d, k := r.devices, keyOf(position, name)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.driveLocked(k)
	d.driveState.WithLabelValues(k.position, k.name).Set(float64(state))
}

// DriveFault records that the CiA 402 drive at position went to fault
// with error code code (shm.EventDriveFault: code is the event's Value,
// object 0x603F): ecagent_drive_faults_total goes up and
// ecagent_drive_error_code becomes code. The drive's state comes with its
// own EventDriveState. It is safe for concurrent use.
func (r *Registry) DriveFault(position int, name string, code uint16) {
	d, k := r.devices, keyOf(position, name)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.driveLocked(k)
	d.driveFaults.WithLabelValues(k.position, k.name).Inc()
	d.driveError.WithLabelValues(k.position, k.name).Set(float64(code))
}

// DriveFaultCleared records that the CiA 402 drive at position left the
// fault state after a fault reset (shm.EventDriveFaultCleared):
// ecagent_drive_error_code goes back to 0. It is safe for concurrent use.
func (r *Registry) DriveFaultCleared(position int, name string) {
	d, k := r.devices, keyOf(position, name)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.driveLocked(k)
	d.driveError.WithLabelValues(k.position, k.name).Set(0)
}
