package sim

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// akdSDO sends an SDO request (command byte, index, sub-index, 4 data
// bytes) through the AKD's 1 KiB mailbox and returns the reply's SDO part
// (command byte onwards).
func akdSDO(t *testing.T, seg *Segment, req []byte) []byte {
	t.Helper()
	msg := make([]byte, 0x400)
	binary.LittleEndian.PutUint16(msg, uint16(2+len(req)))
	msg[5] = mbxTypeCoE // counter 0: a master that does not count, each request served
	binary.LittleEndian.PutUint16(msg[6:], coeSDORequest<<12)
	copy(msg[8:], req)
	if d := one(t, seg, phys(wire.FPWR, 0x1001, 0x1800, msg)); d.WKC != 1 {
		t.Fatalf("mailbox write: WKC %d", d.WKC)
	}
	for range 10 {
		d := one(t, seg, phys(wire.FPRD, 0x1001, 0x1C00, make([]byte, 0x400)))
		if d.WKC != 1 {
			continue
		}
		if binary.LittleEndian.Uint16(d.Data[6:])>>12 != coeSDOResponse {
			continue // an emergency
		}
		return d.Data[8:16]
	}
	t.Fatal("no SDO reply")
	return nil
}

// akdSDOUpload reads index:sub (expedited) through the AKD's mailbox.
func akdSDOUpload(t *testing.T, r *driveRig, index uint16, sub uint8) []byte {
	t.Helper()
	rep := akdSDO(t, r.seg, []byte{0x40, byte(index), byte(index >> 8), sub, 0, 0, 0, 0})
	if rep[0]&0xE0 != 0x40 || rep[0]&0x02 == 0 {
		t.Fatalf("upload %#04x:%d: reply % x", index, sub, rep)
	}
	return append([]byte(nil), rep[4:8-int(rep[0]>>2&3)]...)
}

// akdSDODownload writes data (1, 2 or 4 bytes, expedited) to index:sub.
func akdSDODownload(t *testing.T, seg *Segment, index uint16, sub uint8, data []byte) {
	t.Helper()
	req := []byte{0x23 | byte(4-len(data))<<2, byte(index), byte(index >> 8), sub, 0, 0, 0, 0}
	copy(req[4:], data)
	if rep := akdSDO(t, seg, req); rep[0] != 0x60 {
		t.Fatalf("download %#04x:%d = % x: reply % x", index, sub, data, rep)
	}
}

func TestDriveSDOReadsLiveValues(t *testing.T) {
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.enable(ModeCSV)
	r.setTargetVelocity(rpm(100))
	r.run(20 * time.Millisecond)
	// The SDO transfer takes cycles: compare with the inputs of the
	// cycle the reply was served in (statusword and mode stay the same).
	if sw := akdSDOUpload(t, r, objStatusword, 0); binary.LittleEndian.Uint16(sw) != r.statusword() || r.statusword()&0x6F != 0x27 {
		t.Errorf("SDO 0x6041 = % x, inputs %#04x", sw, r.statusword())
	}
	if m := akdSDOUpload(t, r, objModesDisplay, 0); !bytes.Equal(m, []byte{byte(ModeCSV)}) {
		t.Errorf("SDO 0x6061 = % x, want 09", m)
	}
	if dt := akdSDOUpload(t, r, 0x1000, 0); binary.LittleEndian.Uint32(dt) != deviceTypeServo {
		t.Errorf("SDO 0x1000 = % x", dt)
	}
	if sm := akdSDOUpload(t, r, objSupportedModes, 0); binary.LittleEndian.Uint32(sm) != 0x380 {
		t.Errorf("SDO 0x6502 = % x, want CSP, CSV, CST", sm)
	}
	if v := akdSDOUpload(t, r, objVelocityActual, 0); int32(binary.LittleEndian.Uint32(v)) <= 0 {
		t.Errorf("SDO 0x606C = % x, want the motor's positive velocity", v)
	}
}

// The drive takes its objects wherever the PDO assignment puts them: here
// the real AKD's fixed 0x1724 (target position, controlword, torque
// offset) and 0x1B26 (statusword, position, torque, digital inputs,
// analog input, following error), assigned over SDO in PREOP.
func TestDriveFollowsTheAssignedPDOs(t *testing.T) {
	r := newDriveRigWith(t, "AKD", 8, 18, func(seg *Segment) {
		for _, a := range []struct{ sm, pdo uint16 }{{0x1C12, 0x1724}, {0x1C13, 0x1B26}} {
			akdSDODownload(t, seg, a.sm, 0, []byte{0})
			akdSDODownload(t, seg, a.sm, 1, binary.LittleEndian.AppendUint16(nil, a.pdo))
			akdSDODownload(t, seg, a.sm, 0, []byte{1})
		}
	})
	if o, i := r.dev.OutputSize(), r.dev.InputSize(); o != 8 || i != 18 {
		t.Fatalf("process data %d/%d bytes, want 8/18", o, i)
	}
	put := func(target int32, cw uint16) {
		binary.LittleEndian.PutUint32(r.out[0:], uint32(target))
		binary.LittleEndian.PutUint16(r.out[4:], cw)
	}
	for _, cw := range []uint16{0x06, 0x07, 0x0F} {
		put(0, cw)
		r.cycle(time.Millisecond)
	}
	// Move at 1 rev/s: the following error in 0x60F4 is what Drive
	// reports and stays small.
	for i := range int32(100) {
		put(i*countsPerRev/1000, 0x0F)
		r.cycle(time.Millisecond)
		sw := binary.LittleEndian.Uint16(r.in[0:])
		fe := int32(binary.LittleEndian.Uint32(r.in[14:]))
		st, _ := r.dev.Drive()
		if sw&0x6F != 0x27 || fe != st.FollowingError || fe > countsPerRev/100 || fe < -countsPerRev/100 {
			t.Fatalf("cycle %d: statusword %#04x, 0x60F4 %d (Drive: %d)", i, sw, fe, st.FollowingError)
		}
	}
	if pos := int32(binary.LittleEndian.Uint32(r.in[2:])); pos < 99*countsPerRev/1000-countsPerRev/100 {
		t.Errorf("position %d after 100 ms at 1 rev/s", pos)
	}
}

// The following error window is a parameter: written over SDO in OP, it
// takes effect in the next cycle; 0xFFFFFFFF switches the check off.
func TestDriveFollowingWindowParameter(t *testing.T) {
	for _, tt := range []struct {
		window uint32 // 0: the default
		step   int32
		fault  bool
	}{{0, 1000, false}, {100, 1000, true}, {0, countsPerRev, true}, {math.MaxUint32, countsPerRev, false}} {
		r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
		r.enable(ModeCSP)
		if tt.window != 0 {
			akdSDODownload(t, r.seg, objFollowingWindow, 0, binary.LittleEndian.AppendUint32(nil, tt.window))
			if got := akdSDOUpload(t, r, objFollowingWindow, 0); binary.LittleEndian.Uint32(got) != tt.window {
				t.Errorf("0x6065 reads % x after writing %d", got, tt.window)
			}
		}
		r.setTargetPosition(tt.step)
		r.cycle(time.Millisecond)
		r.settle()
		if got := r.state() == state.FaultReactionActive || r.state() == state.Fault; got != tt.fault {
			t.Errorf("window %d, step of %d counts: %v (0x603F %#04x), want fault %v",
				tt.window, tt.step, r.state(), r.errorCode(), tt.fault)
		}
	}
}

// The outputs a master may map into RxPDOs (controlword, mode, targets,
// torque offset) are writable over SDO in PREOP, SAFEOP and OP, as on the
// real AKD, and read back what was written; the inputs stay read-only.
func TestDriveOutputObjectsWritableOverSDO(t *testing.T) {
	outputs := []struct {
		index uint16
		sub   uint8
		value []byte
	}{
		{objControlword, 0, []byte{0x06, 0x00}},
		{objModesOfOperation, 0, []byte{byte(ModeCSV)}},
		{objTargetTorque, 0, []byte{0x2C, 0x01}},
		{objTargetPosition, 0, []byte{1, 2, 3, 4}},
		{objTorqueOffset, 0, []byte{0x0A, 0x00}},
		{objTargetVelocity, 0, []byte{5, 6, 7, 0}},
		{objInterpolationData, 1, []byte{8, 9, 10, 0}},
	}
	r := newDriveRigWith(t, "AKD", akdOutLen, akdInLen, func(seg *Segment) {
		for _, o := range outputs {
			akdSDODownload(t, seg, o.index, o.sub, o.value)
			if got := akdSDOUpload(t, &driveRig{t: t, seg: seg}, o.index, o.sub); !bytes.Equal(got, o.value) {
				t.Errorf("PREOP: %#04x:%d reads % x after writing % x", o.index, o.sub, got, o.value)
			}
		}
		if m := akdSDOUpload(t, &driveRig{t: t, seg: seg}, objModesDisplay, 0); !bytes.Equal(m, []byte{byte(ModeCSV)}) {
			t.Errorf("PREOP: 0x6061 = % x after writing 0x6060 = 09, want 09", m)
		}
	})
	// In OP the mode goes on over SDO while the PDO does not carry one
	// (0 leaves the mode as it is).
	r.setMode(0)
	r.settle()
	akdSDODownload(t, r.seg, objModesOfOperation, 0, []byte{byte(ModeCST)})
	r.settle()
	if m := r.modeDisplay(); m != ModeCST {
		t.Errorf("OP: 0x6061 in the inputs = %d after writing 0x6060 = 10 over SDO", m)
	}
	rep := akdSDO(t, r.seg, []byte{0x2B, 0x41, 0x60, 0, 0, 0, 0, 0}) // download 0x6041:0
	if rep[0] != 0x80 || binary.LittleEndian.Uint32(rep[4:]) != abortReadOnly {
		t.Errorf("write of the statusword 0x6041: reply % x, want abort %#08x", rep, abortReadOnly)
	}
}

// An output that no assigned RxPDO maps takes its value from SDO: with
// 0x1702 (target velocity, controlword) assigned, 0x6060 written over SDO
// in PREOP runs the drive in CSV.
func TestDriveModeOverSDOWhenNotMapped(t *testing.T) {
	r := newDriveRigWith(t, "AKD", 6, akdInLen, func(seg *Segment) {
		akdSDODownload(t, seg, 0x1C12, 0, []byte{0})
		akdSDODownload(t, seg, 0x1C12, 1, binary.LittleEndian.AppendUint16(nil, 0x1702))
		akdSDODownload(t, seg, 0x1C12, 0, []byte{1})
		akdSDODownload(t, seg, objModesOfOperation, 0, []byte{byte(ModeCSV)})
	})
	for _, cw := range []uint16{0x06, 0x07, 0x0F} {
		binary.LittleEndian.PutUint16(r.out[4:], cw)
		r.cycle(time.Millisecond)
	}
	binary.LittleEndian.PutUint32(r.out[0:], uint32(rpm(60)))
	r.run(200 * time.Millisecond)
	if r.state() != state.OperationEnabled || r.modeDisplay() != ModeCSV {
		t.Fatalf("state %v, mode display %d; want operation enabled in CSV", r.state(), r.modeDisplay())
	}
	if got := akdSDOUpload(t, r, objModesOfOperation, 0); !bytes.Equal(got, []byte{byte(ModeCSV)}) {
		t.Errorf("0x6060 reads % x, want 09", got)
	}
	if v := float64(r.velocity()); !within(v, float64(rpm(60)), float64(rpm(60))/10) {
		t.Errorf("velocity %v counts/s, want about %d (60 rpm)", v, rpm(60))
	}
}
