package main

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/sim"
)

// eepromReadTime builds the segment `ecagent sim ARGS --devices EL1004`
// serves, on a clock the test moves, and returns how long an EEPROM read
// keeps 0x0502 busy there, to 1 µs.
func eepromReadTime(t *testing.T, args ...string) int64 {
	t.Helper()
	var out bytes.Buffer
	fs, f := newSimFlags(&env{stdout: &out, stderr: &out})
	if err := fs.Parse(append(args, "--devices", "EL1004")); err != nil {
		t.Fatal(err)
	}
	opts, err := f.options(fs.Changed("sii-busy-frames"), fs.Changed("seed"))
	if err != nil {
		t.Fatal(err)
	}
	devs, err := sim.ParseDevices(*f.devices)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(1_000_000)
	seg := sim.NewSegment(devs, append(opts, sim.WithClock(func() int64 { return now }))...)
	send := func(cmd wire.Command, data []byte) wire.Datagram {
		t.Helper()
		var b wire.Builder
		if err := b.Reset(make([]byte, wire.MaxFrameLen), [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, [6]byte{2}); err != nil {
			t.Fatal(err)
		}
		if err := b.AppendData(cmd, 0, wire.PhysicalAddress(0, 0x0502), data); err != nil {
			t.Fatal(err)
		}
		frame := append([]byte(nil), b.Bytes()...)
		if !seg.Process(frame) {
			t.Fatal("frame not processed")
		}
		var fr wire.Frame
		if err := fr.Decode(frame); err != nil {
			t.Fatal(err)
		}
		var d wire.Datagram
		it := fr.Datagrams()
		if !it.Next(&d) || d.WKC != 1 {
			t.Fatalf("%v 0x0502: no answer from the device (WKC %d)", cmd, d.WKC)
		}
		return d
	}
	// Read EEPROM word 0 (position 0: auto-increment address 0).
	send(wire.APWR, []byte{0x00, 0x01, 0, 0, 0, 0})
	start := now
	for now-start < 5_000_000 {
		if binary.LittleEndian.Uint16(send(wire.APRD, make([]byte, 2)).Data)&0x8000 == 0 {
			return now - start
		}
		now += 1_000
	}
	t.Fatal("EEPROM still busy after 5 ms")
	return 0
}

// TestSimSeedDrawsTheDevicesTimes: `ecagent sim --seed N` serves devices
// whose times are drawn from their spreads (an EL1004's EEPROM read:
// 0.681–0.695 ms, issue 37), the same for the same seed, not all the same
// for several seeds; without --seed every read takes the typical time.
func TestSimSeedDrawsTheDevicesTimes(t *testing.T) {
	const typical = 688_000
	if got := eepromReadTime(t); got != typical {
		t.Errorf("without --seed: EEPROM read %d ns, want the typical %d", got, typical)
	}
	if a, b := eepromReadTime(t, "--seed", "3"), eepromReadTime(t, "--seed", "3"); a != b {
		t.Errorf("--seed 3 twice: %d and %d ns", a, b)
	}
	times := map[int64]bool{}
	for _, seed := range []string{"1", "2", "3", "4", "5", "6"} {
		got := eepromReadTime(t, "--seed", seed)
		if got < 681_000 || got > 696_000 {
			t.Errorf("--seed %s: EEPROM read %d ns, outside the real spread 0.681–0.695 ms", seed, got)
		}
		times[got] = true
	}
	if len(times) < 2 {
		t.Errorf("six seeds drew the same EEPROM read time %v: no spread", times)
	}
}
