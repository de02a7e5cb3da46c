package pcapng

import (
	"encoding/binary"
	"path/filepath"
	"testing"
)

// The EtherCAT frame counts are what tshark reports for each capture.
var realCaptures = map[string]int{
	"ethercrab-dc.pcapng":                    3604,
	"ethercrab-detect-ek1100-el1004.pcapng":  2,
	"ethercrab-ek1914-el3004-mailbox.pcapng": 994,
	"soem-sdinfo-ek1100-el1004.pcapng":       580,
	"twincat-run-ek1100-el1004.pcapng":       553,
}

func TestReadRealCaptures(t *testing.T) {
	for name, want := range realCaptures {
		f := filepath.Join("../../testdata/real-hw/captures", name)
		pkts, err := ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ecat := 0
		for _, p := range pkts {
			if len(p.Data) >= 14 && binary.BigEndian.Uint16(p.Data[12:]) == 0x88A4 {
				ecat++
			}
		}
		if ecat != want {
			t.Errorf("%s: %d EtherCAT frames among %d packets, want %d", name, ecat, len(pkts), want)
		}
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{
		{0x0A, 0x0D, 0x0D, 0x0A, 5, 0, 0, 0},
		{0x0A, 0x0D, 0x0D, 0x0A, 0xff, 0xff, 0, 0, 0x4D, 0x3C, 0x2B, 0x1A},
		{0xD4, 0xC3, 0xB2, 0xA1, 0, 0},
	} {
		if _, err := Parse(b); err == nil {
			t.Errorf("Parse(% x) succeeded", b)
		}
	}
}
