package sim

import (
	"slices"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// segment128 is 128 EL3004 in PREOP with their mailboxes set up, as a
// master leaves them before process data, and the frame a 1 ms cycle
// sends them: an LRW over the process image and the AL status of all.
func segment128(tb testing.TB, opts ...Option) (*Segment, []byte) {
	tb.Helper()
	specs := slices.Repeat([]string{"EL3004"}, 128)
	devs, err := ParseDevices(specs)
	if err != nil {
		tb.Fatal(err)
	}
	seg := frameClocked(NewSegment(devs, opts...))
	if err := seg.Preset(0x1001, esc.StatePreOp); err != nil {
		tb.Fatal(err)
	}
	frame := frameOf(tb, logical(wire.LRW, 0, make([]byte, 128*8)), phys(wire.BRD, 0, 0x0130, make([]byte, 2)),
		phys(wire.FPRD, 0x1001, 0x080D, make([]byte, 1)))
	return seg, frame
}

// BenchmarkProcess128 carries the cycle frame through 128 devices, with
// constant inputs and with inputs that change every frame (the counter
// 'ecagent sim' runs by default: 24 entries of 1 to 16 bits per EL3004).
func BenchmarkProcess128(b *testing.B) {
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"constant", nil},
		{"counter", []Option{WithInputPattern(Pattern{Kind: PatternCounter})}},
	} {
		b.Run(c.name, func(b *testing.B) {
			seg, frame := segment128(b, c.opts...)
			buf := make([]byte, len(frame))
			b.ReportAllocs()
			for b.Loop() {
				copy(buf, frame)
				seg.Process(buf)
			}
		})
	}
	// With a batch of the error-counter reads that ride the cycle's frame
	// (master.Bus.ReadAll): 16 configured-address reads, each for one of
	// the 128 devices, beside an LRW of half the image (the frame's
	// 1500-byte limit).
	b.Run("counter+16reads", func(b *testing.B) {
		seg, _ := segment128(b, WithInputPattern(Pattern{Kind: PatternCounter}))
		dgs := []dg{logical(wire.LRW, 0, make([]byte, 128*4)), phys(wire.BRD, 0, 0x0130, make([]byte, 2))}
		for i := range 16 {
			dgs = append(dgs, phys(wire.FPRD, 0x1001+uint16(i)*8, 0x0300, make([]byte, 20)))
		}
		frame := frameOf(b, dgs...)
		buf := make([]byte, len(frame))
		b.ReportAllocs()
		for b.Loop() {
			copy(buf, frame)
			seg.Process(buf)
		}
	})
}

// TestProcess128AllocationFree keeps Process allocation-free on a long line.
func TestProcess128AllocationFree(t *testing.T) {
	seg, frame := segment128(t)
	buf := make([]byte, len(frame))
	if a := testing.AllocsPerRun(50, func() { copy(buf, frame); seg.Process(buf) }); a != 0 {
		t.Errorf("Process allocates %v times a frame through 128 devices", a)
	}
	copy(buf, frame)
	seg.Process(buf)
	if d := datagrams(buf)[1]; d.WKC != 128 {
		t.Errorf("BRD AL status: WKC %d, want 128", d.WKC)
	}
}
