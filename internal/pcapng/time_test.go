package pcapng

import (
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"
)

// block encodes one little-endian pcapng block of type typ around body
// (padded to 32 bits).
func block(typ uint32, body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	n := uint32(12 + len(body))
	b := binary.LittleEndian.AppendUint32(nil, typ)
	b = binary.LittleEndian.AppendUint32(b, n)
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, n)
}

func sectionHeader() []byte {
	body := binary.LittleEndian.AppendUint32(nil, byteOrderMagic)
	body = append(body, 1, 0, 0, 0)                           // version 1.0
	body = binary.LittleEndian.AppendUint64(body, ^uint64(0)) // section length unknown
	return block(blockSectionHeader, body)
}

// interfaceBlock is an Ethernet interface description with the given
// options (code, value) pairs.
func interfaceBlock(opts ...[]byte) []byte {
	body := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	for _, o := range opts {
		body = append(body, o...)
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
	}
	return block(blockInterfaceDesc, append(body, 0, 0, 0, 0))
}

func option(code uint16, v []byte) []byte {
	b := binary.LittleEndian.AppendUint16(nil, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	return append(b, v...)
}

func packetBlock(iface uint32, ts uint64) []byte {
	body := binary.LittleEndian.AppendUint32(nil, iface)
	body = binary.LittleEndian.AppendUint32(body, uint32(ts>>32))
	body = binary.LittleEndian.AppendUint32(body, uint32(ts))
	body = binary.LittleEndian.AppendUint32(body, 1)
	body = binary.LittleEndian.AppendUint32(body, 1)
	return block(blockEnhancedPacket, append(body, 0xAA))
}

func TestTimeFollowsInterfaceResolution(t *testing.T) {
	offset := binary.LittleEndian.AppendUint64(nil, 100)
	b := append(sectionHeader(), interfaceBlock()...)                                            // µs (default)
	b = append(b, interfaceBlock(option(optTSResol, []byte{9}))...)                              // ns
	b = append(b, interfaceBlock(option(optTSResol, []byte{0x80 | 10}))...)                      // 2^-10 s
	b = append(b, interfaceBlock(option(optTSOffset, offset), option(optTSResol, []byte{3}))...) // ms + 100 s
	b = append(b, packetBlock(0, 1_500_001)...)
	b = append(b, packetBlock(1, 1_500_000_001)...)
	b = append(b, packetBlock(2, 1024+512)...)
	b = append(b, packetBlock(3, 2_250)...)
	pkts, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{1_500_001_000, 1_500_000_001, 1_500_000_000, 102_250_000_000}
	if len(pkts) != len(want) {
		t.Fatalf("%d packets, want %d", len(pkts), len(want))
	}
	for i, p := range pkts {
		if p.Time != want[i] {
			t.Errorf("packet %d (interface %d): time %d ns, want %d", i, p.Interface, p.Time, want[i])
		}
	}
}

func TestTimeOfNanosecondPcap(t *testing.T) {
	for _, c := range []struct {
		magic uint32
		want  int64
	}{{0xA1B2C3D4, 7_000_250_000}, {0xA1B23C4D, 7_000_000_250}} {
		b := binary.LittleEndian.AppendUint32(nil, c.magic)
		b = append(b, make([]byte, 20)...)
		for _, v := range []uint32{7, 250, 1, 1} {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		pkts, err := Parse(append(b, 0xAA))
		if err != nil {
			t.Fatal(err)
		}
		if len(pkts) != 1 || pkts[0].Time != c.want {
			t.Errorf("magic %#x: %+v, want time %d", c.magic, pkts, c.want)
		}
	}
}

// TestRealCaptureTimes checks that the real captures' times are plausible
// wall-clock times that never go backwards: the replay runs its virtual
// clock from them.
func TestRealCaptureTimes(t *testing.T) {
	lo := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	hi := time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for name := range realCaptures {
		pkts, err := ReadFile(filepath.Join("../../testdata/real-hw/captures", name))
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range pkts {
			if p.Time < lo || p.Time > hi {
				t.Fatalf("%s: packet %d at %v, not a plausible capture time", name, i, time.Unix(0, p.Time).UTC())
			}
			if i > 0 && p.Time < pkts[i-1].Time {
				t.Errorf("%s: packet %d at %d ns, before packet %d at %d ns", name, i, p.Time, i-1, pkts[i-1].Time)
			}
		}
	}
}
