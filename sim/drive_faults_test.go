package sim

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// emergencyIn reads the send mailbox and returns the error code of the
// CoE emergency in it, and whether there was one.
func emergencyIn(t *testing.T, r *driveRig) (uint16, bool) {
	t.Helper()
	for range 4 {
		d := one(t, r.seg, phys(wire.FPRD, 0x1001, 0x1C00, make([]byte, 0x400)))
		if d.WKC == 0 {
			r.cycle(0)
			continue
		}
		if d.Data[5]&0x0F == mbxTypeCoE && binary.LittleEndian.Uint16(d.Data[6:])>>12 == 1 {
			return binary.LittleEndian.Uint16(d.Data[8:]), true
		}
	}
	return 0, false
}

func TestDriveFaultsAndReset(t *testing.T) {
	tests := []struct {
		name  string
		mode  int8
		jump  func(r *driveRig)
		code  uint16
		clear func(r *driveRig) // makes the cause go away before the reset
	}{
		{"CSP target jump", ModeCSP, func(r *driveRig) { r.setTargetPosition(countsPerRev) }, ErrorCodeFollowing,
			func(r *driveRig) { r.setTargetPosition(r.position()) }},
		{"CSV target beyond max motor speed", ModeCSV, func(r *driveRig) { r.setTargetVelocity(rpm(7000)) }, ErrorCodeVelocity,
			func(r *driveRig) { r.setTargetVelocity(0) }},
		{"CSV target step", ModeCSV, func(r *driveRig) { r.setTargetVelocity(rpm(3000)) }, ErrorCodeVelocity,
			func(r *driveRig) { r.setTargetVelocity(0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
			r.enable(tt.mode)
			r.run(2 * time.Millisecond)
			tt.jump(r)
			r.cycle(time.Millisecond)
			r.settle()
			if s := r.state(); s != state.FaultReactionActive && s != state.Fault {
				t.Fatalf("after the jump: %v", s)
			}
			if state.Statusword(r.statusword())&state.SWFault == 0 || r.errorCode() != tt.code {
				t.Errorf("statusword %#04x, 0x603F %#04x; want the fault bit and %#04x", r.statusword(), r.errorCode(), tt.code)
			}
			r.run(20 * time.Millisecond)
			if s := r.state(); s != state.Fault {
				t.Errorf("after the fault reaction: %v", s)
			}
			if sw := r.statusword(); sw&0x4F != 0x08 {
				t.Errorf("statusword in fault %#04x", sw)
			}
			if code, ok := emergencyIn(t, r); !ok || code != tt.code {
				t.Errorf("emergency %#04x (%v), want %#04x", code, ok, tt.code)
			}
			// The reset acts on the rising edge of bit 7, once the
			// cause is gone.
			tt.clear(r)
			r.setControl(0x80)
			r.cycle(time.Millisecond)
			r.settle()
			if s := r.state(); s != state.SwitchOnDisabled || r.errorCode() != 0 {
				t.Errorf("after the fault reset: %v, 0x603F %#04x", s, r.errorCode())
			}
			r.enable(tt.mode)
		})
	}
}

func TestDriveFaultResetNeedsCauseGone(t *testing.T) {
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.enable(ModeCSV)
	r.setTargetVelocity(rpm(7000))
	r.run(20 * time.Millisecond)
	r.setControl(0x80)
	r.cycle(time.Millisecond)
	r.settle()
	if s := r.state(); s != state.Fault {
		t.Fatalf("reset with the target still beyond 0x6080: %v, want fault", s)
	}
	// Bit 7 held high is no new edge.
	r.setTargetVelocity(0)
	r.cycle(time.Millisecond)
	r.settle()
	if s := r.state(); s != state.Fault {
		t.Errorf("bit 7 held: %v, want fault", s)
	}
	r.setControl(0x00)
	r.cycle(time.Millisecond)
	r.settle()
	r.setControl(0x80)
	r.cycle(time.Millisecond)
	r.settle()
	if s := r.state(); s != state.SwitchOnDisabled {
		t.Errorf("new edge with the cause gone: %v", s)
	}
}

func TestDriveLeavingOPFaults(t *testing.T) {
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.enable(ModeCSV)
	r.toState(0x04)
	r.run(20 * time.Millisecond)
	if s := r.state(); s != state.Fault || r.errorCode() != ErrorCodeCommunication {
		t.Errorf("after leaving OP enabled: %v, 0x603F %#04x; want fault 0x8700", s, r.errorCode())
	}
	// Back in OP the master resets the fault.
	r.toState(0x08)
	r.setControl(0x80)
	r.cycle(time.Millisecond)
	r.settle()
	if s := r.state(); s != state.SwitchOnDisabled {
		t.Errorf("after the reset in OP: %v", s)
	}
}

func TestInjectDriveFault(t *testing.T) {
	el, err := NewDevice("EL3004")
	if err != nil {
		t.Fatal(err)
	}
	if err := el.InjectDriveFault(0x5530); !errors.Is(err, ErrNotADrive) {
		t.Errorf("InjectDriveFault on an EL3004: %v", err)
	}
	if s := el.DriveState(); s != state.Unknown {
		t.Errorf("DriveState of an EL3004: %v", s)
	}
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.enable(ModeCSV)
	if err := r.dev.InjectDriveFault(0x4310); err != nil {
		t.Fatal(err)
	}
	r.run(5 * time.Millisecond)
	if r.state() != state.Fault || r.errorCode() != 0x4310 || state.Statusword(r.statusword())&state.SWFault == 0 {
		t.Errorf("injected 0x4310: %v, 0x603F %#04x, statusword %#04x", r.state(), r.errorCode(), r.statusword())
	}
	r.setControl(0x80)
	r.cycle(time.Millisecond)
	r.settle()
	if r.state() != state.SwitchOnDisabled {
		t.Errorf("after the reset: %v", r.state())
	}
}
