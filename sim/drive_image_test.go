package sim

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/ethercat/sii"
)

func TestAKDImageFollowsTheRealOne(t *testing.T) {
	real, err := os.ReadFile(filepath.Join(realHW, "sii", "akd.bin"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := sii.Parse(real)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDevice("AKD")
	if err != nil {
		t.Fatal(err)
	}
	got, err := sii.Parse(d.SII())
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	gh, wh := got.Header, want.Header
	gh.Identity.SerialNumber, wh.Identity.SerialNumber = 0, 0
	gh.Checksum, wh.Checksum = 0, 0
	if gh != wh {
		t.Errorf("header\n got %+v\nwant %+v", gh, wh)
	}
	if got.OrderCode() != want.OrderCode() || got.Name() != want.Name() {
		t.Errorf("order %q name %q, want %q %q", got.OrderCode(), got.Name(), want.OrderCode(), want.Name())
	}
	if *got.General != *want.General {
		t.Errorf("General\n got %+v\nwant %+v", *got.General, *want.General)
	}
	for i, sm := range want.SyncManagers {
		if got.SyncManagers[i] != sm {
			t.Errorf("SM%d %+v, want %+v", i, got.SyncManagers[i], sm)
		}
	}
	if !slices.Equal(got.FMMUs, want.FMMUs) || !slices.Equal(got.DC, want.DC) {
		t.Errorf("FMMUs %v DC %+v, want %v %+v", got.FMMUs, got.DC, want.FMMUs, want.DC)
	}
	if !d.hasDC {
		t.Error("the built-in AKD has no DC unit")
	}
}

// The real AKD image runs as a drive too, with its own default PDO
// assignment: 0x1701 (interpolation data 0x60C1:1, controlword) and
// 0x1B01 (position actual internal value, statusword); without 0x6060 in
// the outputs it runs in CSP.
func TestRealAKDImageIsADrive(t *testing.T) {
	path := filepath.Join(realHW, "sii", "akd.bin")
	d, err := NewDevice(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name() != "AKD" || !d.hasDC || d.DriveState() != state.SwitchOnDisabled {
		t.Fatalf("%q DC %v state %v", d.Name(), d.hasDC, d.DriveState())
	}
	r := newDriveRig(t, path, 6, 6)
	target := int32(countsPerRev / 100)
	// 0x1701: set-point first, controlword after it.
	put := func(cw uint16) {
		binary.LittleEndian.PutUint32(r.out[0:], uint32(target))
		binary.LittleEndian.PutUint16(r.out[4:], cw)
	}
	for _, cw := range []uint16{0x06, 0x07, 0x0F} {
		put(cw)
		r.cycle(time.Millisecond)
	}
	r.run(100 * time.Millisecond)
	sw := binary.LittleEndian.Uint16(r.in[4:])
	pos := int32(binary.LittleEndian.Uint32(r.in[0:]))
	if sw&0x6F != 0x27 || pos < target-20 || pos > target+20 {
		t.Errorf("statusword %#04x position %d, want operation enabled at %d", sw, pos, target)
	}
}
