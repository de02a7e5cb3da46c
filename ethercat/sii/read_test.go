package sii

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// countingReader records the reads a master would make of a device's EEPROM.
type countingReader struct {
	img      Image
	bytes    int // total bytes read
	maxChunk int
	maxEnd   int // highest byte offset read, exclusive
	fail     error
}

func (r *countingReader) ReadWords(wordAddr uint16, dst []byte) error {
	if r.fail != nil {
		return r.fail
	}
	r.bytes += len(dst)
	r.maxChunk = max(r.maxChunk, len(dst))
	r.maxEnd = max(r.maxEnd, 2*int(wordAddr)+len(dst))
	return r.img.ReadWords(wordAddr, dst)
}

func TestReadRealImages(t *testing.T) {
	for _, name := range realNames {
		t.Run(name, func(t *testing.T) {
			img := testsupport.RealImage(t, name)
			end := endMarker(t, img) + 2
			r := &countingReader{img: img}
			got, err := Read(context.Background(), r, len(img))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, img[:end]) {
				t.Fatalf("Read returned %d bytes, want the %d up to and including the end marker", len(got), end)
			}
			// Each category is read with the next category's header: at most the two
			// bytes after the end marker are read beyond it, and nothing twice.
			if r.bytes != r.maxEnd || r.maxEnd > end+2 {
				t.Errorf("read %d bytes up to byte %d; want each byte once, up to %d", r.bytes, r.maxEnd, end+2)
			}
			if r.maxChunk > readChunk {
				t.Errorf("largest read %d bytes, want at most %d", r.maxChunk, readChunk)
			}
			if _, err := Parse(got); err != nil {
				t.Errorf("Parse(Read) = %v", err)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	el2004 := testsupport.RealImage(t, "el2004")
	end := endMarker(t, el2004)
	blank := bytes.Repeat([]byte{0xFF}, 2048)
	noEnd := bytes.Clone(el2004)
	clear(noEnd[end:]) // empty NOP categories up to the last word, which has no size word
	boom := errors.New("EEPROM busy")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		r       WordReader
		max     int
		want    error
		wantLen int
	}{
		{"blank EEPROM reads only the header", context.Background(), Image(blank), 2048, nil, HeaderSize + 2},
		{"limit just holds the end marker", context.Background(), Image(el2004), end + 2, nil, end + 2},
		{"limit cuts the last category", context.Background(), Image(el2004), end, ErrTruncated, 0},
		{"limit below a header", context.Background(), Image(el2004), 64, nil, 0},
		{"no end marker", context.Background(), Image(noEnd), len(noEnd), ErrTruncated, 0},
		{"reader fails", context.Background(), &countingReader{fail: boom}, 2048, boom, 0},
		{"image shorter than the limit", context.Background(), Image(el2004[:0x100]), 2048, ErrOutOfRange, 0},
		{"cancelled", canceled, Image(el2004), 2048, context.Canceled, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(tt.ctx, tt.r, tt.max)
			switch {
			case tt.want == nil && tt.wantLen == 0:
				if err == nil {
					t.Errorf("Read = %d bytes, want an error", len(got))
				}
			case tt.want == nil:
				if err != nil || len(got) != tt.wantLen {
					t.Errorf("Read = %d bytes, %v; want %d bytes", len(got), err, tt.wantLen)
				}
			default:
				if !errors.Is(err, tt.want) || got != nil {
					t.Errorf("Read = %d bytes, %v; want %v", len(got), err, tt.want)
				}
			}
		})
	}
}

func TestImageReadWords(t *testing.T) {
	img := Image(testsupport.RealImage(t, "el2004"))
	dst := make([]byte, 8)
	if err := img.ReadWords(0x08, dst); err != nil || !bytes.Equal(dst, img[0x10:0x18]) {
		t.Errorf("ReadWords(0x08) = %x, %v; want %x", dst, err, img[0x10:0x18])
	}
	if err := img.ReadWords(0x3FF, dst[:2]); err != nil {
		t.Errorf("ReadWords of the last word: %v", err)
	}
	if err := img.ReadWords(0x3FF, dst[:4]); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("ReadWords past the end = %v, want ErrOutOfRange", err)
	}
	if err := img.ReadWords(0, dst[:3]); err == nil {
		t.Error("ReadWords of 3 bytes succeeded, want an error")
	}
	if n := testing.AllocsPerRun(100, func() { _ = img.ReadWords(0x40, dst) }); n != 0 {
		t.Errorf("ReadWords allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { CRC8(img[:14]) }); n != 0 {
		t.Errorf("CRC8 allocates %v times, want 0", n)
	}
}

func TestLoadFile(t *testing.T) {
	img, err := LoadFile(testsupport.RealHW(t, "sii", "akd.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(img, testsupport.RealImage(t, "akd")) {
		t.Error("LoadFile content differs from the file")
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadFile of a missing file = %v, want fs.ErrNotExist", err)
	}
}

func BenchmarkImageReadWords(b *testing.B) {
	img := Image(testsupport.RealImage(b, "el2004"))
	dst := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := img.ReadWords(0x40, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	img := Image(testsupport.RealImage(b, "akd"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(ctx, img, len(img)); err != nil {
			b.Fatal(err)
		}
	}
}
