package sii

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// FuzzParse checks that Parse never panics, that every error but a checksum error comes
// with a nil Device, and that whatever Parse accepts Encode reproduces: the same bytes up
// to the end marker (checksum corrected, a zero EEPROM size chosen) and the same Device.
func FuzzParse(f *testing.F) {
	for _, name := range realNames {
		img := testsupport.RealImage(f, name)
		f.Add(img)
		f.Add(img[:endMarker(f, img)+2])
		f.Add(img[:0x100])
	}
	f.Fuzz(func(t *testing.T, img []byte) {
		d, err := Parse(img)
		var ce *ChecksumError
		if err != nil && !errors.As(err, &ce) {
			if d != nil {
				t.Fatalf("Parse returned a Device with %v", err)
			}
			return
		}
		if d == nil {
			t.Fatalf("Parse returned no Device with error %v", err)
		}
		_ = d.Validate()
		_, _, _ = d.Name(), d.InputBits(), d.OutputBits()

		out, err := Encode(d)
		if err != nil {
			return // e.g. a header EEPROM size too small for the categories
		}
		end := endMarker(t, img) + 2
		want := bytes.Clone(img[:end])
		want[checksumOffset] = CRC8(want[:checksumOffset])
		if d.Header.EEPROMSize == 0 {
			copy(want[0x7C:], out[0x7C:0x7E])
		}
		if len(out) < end || !bytes.Equal(out[:end], want) {
			t.Fatalf("Encode(Parse(img)) differs from img up to the end marker at byte %d:\n%x\n%x", end, out[:min(end, len(out))], want)
		}
		d2, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Encode(d)) = %v", err)
		}
		d.Header.Checksum, d.Header.EEPROMSize = d2.Header.Checksum, binary.LittleEndian.Uint16(out[0x7C:])
		if !reflect.DeepEqual(d, d2) {
			t.Fatalf("Parse(Encode(d)) differs from d:\n%+v\n%+v", d, d2)
		}
	})
}
