package sim

import (
	"fmt"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
)

// The exported view of a device's drive: its status snapshot and actual
// values, and fault injection.

// theDrive returns d's drive application, or nil.
func (d *Device) theDrive() *drive {
	dr, _ := d.app.(*drive)
	return dr
}

// DriveStatus is a snapshot of a simulated drive.
type DriveStatus struct {
	State       state.State
	Statusword  uint16 // 0x6041 as the master reads it
	Controlword uint16 // 0x6040 as the drive last took it
	Mode        int8   // modes of operation display, 0x6061
	ErrorCode   uint16 // 0x603F
	Position    int32  // counts, 0x6064 (2^20 per revolution)
	Velocity    int32  // counts/s, 0x606C
	Torque      int16  // per mille of the rated torque, 0x6077
	// FollowingError is target minus actual position in CSP (0x60F4),
	// else 0.
	FollowingError int32
}

// Drive returns the state of the device's drive, and false when the
// device is not a simulated drive.
func (d *Device) Drive() (DriveStatus, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dr := d.theDrive()
	if dr == nil {
		return DriveStatus{}, false
	}
	before := dr.state
	if dr.checkCommunication(); dr.state != before {
		dr.writeInputs()
	}
	return DriveStatus{
		State: dr.state, Statusword: dr.status(), Controlword: uint16(dr.controlword), Mode: dr.mode,
		ErrorCode: dr.errorCode, Position: dr.motor.actualPosition(), Velocity: dr.motor.actualVelocity(),
		Torque: dr.motor.actualTorque(), FollowingError: dr.following,
	}, true
}

// DriveState returns the CiA 402 state of the device's drive, or
// state.Unknown for a device that is not a simulated drive.
func (d *Device) DriveState() state.State {
	s, _ := d.Drive()
	return s.State
}

// DriveActual returns the drive's actual position (counts, 2^20 per
// revolution), velocity (counts/s) and torque (per mille of the rated
// torque), as 0x6064, 0x606C and 0x6077 show them; zeros for a device
// that is not a simulated drive.
func (d *Device) DriveActual() (position int32, velocity int32, torque int16) {
	s, _ := d.Drive()
	return s.Position, s.Velocity, s.Torque
}

// InjectDriveFault faults the device's drive with error code code, as an
// internal fault of the drive would: 0x603F, the fault bit, an emergency
// and the fault reaction follow. A fault reset clears it. It fails with
// ErrNotADrive for a device that is not a simulated drive, and does
// nothing to a drive already in fault or fault reaction.
func (d *Device) InjectDriveFault(code uint16) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	dr := d.theDrive()
	if dr == nil {
		return fmt.Errorf("%w: %s", ErrNotADrive, d.name)
	}
	dr.raise(code, false)
	dr.writeInputs()
	return nil
}
