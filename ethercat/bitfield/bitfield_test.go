package bitfield

import (
	"bytes"
	"testing"
)

func TestCopy(t *testing.T) {
	for _, tt := range []struct {
		name        string
		dst, src    []byte
		to, from, n int
		want        []byte
	}{
		{"whole bytes", []byte{0, 0}, []byte{0xa5, 0x3c}, 0, 0, 16, []byte{0xa5, 0x3c}},
		{"into the middle, others kept", []byte{0xff, 0xff}, []byte{0x00}, 4, 0, 6, []byte{0x0f, 0xfc}},
		{"from the middle", []byte{0x00}, []byte{0xf0}, 0, 4, 4, []byte{0x0f}},
		{"across a byte", []byte{0, 0}, []byte{0xff}, 6, 0, 4, []byte{0xc0, 0x03}},
		{"past the source's end", []byte{0xff, 0xff}, []byte{0x00}, 0, 4, 12, []byte{0xf0, 0xff}},
		{"past the destination's end", []byte{0x00}, []byte{0xff, 0xff}, 4, 0, 12, []byte{0xf0}},
		{"nothing", []byte{0x5a}, []byte{0xff}, 0, 0, 0, []byte{0x5a}},
	} {
		Copy(tt.dst, tt.to, tt.src, tt.from, tt.n)
		if !bytes.Equal(tt.dst, tt.want) {
			t.Errorf("%s: % x, want % x", tt.name, tt.dst, tt.want)
		}
	}
}

func TestValue(t *testing.T) {
	for _, tt := range []struct {
		name    string
		src     []byte
		from, n int
		want    uint64
	}{
		{"a byte", []byte{0xa5}, 0, 8, 0xa5},
		{"across bytes", []byte{0xf0, 0x0f}, 4, 8, 0xff},
		{"least significant first", []byte{0x34, 0x12}, 0, 16, 0x1234},
		{"past the end reads 0", []byte{0xff}, 4, 12, 0x0f},
		{"at most 64 bits", bytes.Repeat([]byte{0xff}, 10), 0, 80, ^uint64(0)},
		{"nothing", []byte{0xff}, 0, 0, 0},
	} {
		if got := Value(tt.src, tt.from, tt.n); got != tt.want {
			t.Errorf("%s: %#x, want %#x", tt.name, got, tt.want)
		}
	}
}
