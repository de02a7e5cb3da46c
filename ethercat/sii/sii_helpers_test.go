package sii

import (
	"encoding/binary"
	"testing"
)

// realNames are the SII images read from real devices
// (testsupport.RealImage: ground truth this project did not write).
var realNames = []string{"ek1100", "el2004", "el2262", "el2828", "el2889", "akd"}

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
