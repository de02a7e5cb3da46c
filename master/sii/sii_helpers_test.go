package sii

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// realDir holds SII images read from real devices (ground truth this project did not write).
const realDir = "../../testdata/real-hw/sii"

var realNames = []string{"ek1100", "el2004", "el2262", "el2828", "el2889", "akd"}

func realImage(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realDir, name+".bin"))
	if err != nil {
		t.Fatalf("real image: %v", err)
	}
	return b
}

// endMarker returns the byte offset of the end marker of a well-formed image.
func endMarker(t testing.TB, img []byte) int {
	t.Helper()
	off := HeaderSize
	for off+2 <= len(img) {
		if binary.LittleEndian.Uint16(img[off:]) == uint16(CategoryEnd) {
			return off
		}
		if off+4 > len(img) {
			break
		}
		off += 4 + 2*int(binary.LittleEndian.Uint16(img[off+2:]))
	}
	t.Fatalf("no end marker")
	return 0
}
