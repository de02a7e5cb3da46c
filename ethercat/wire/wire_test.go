package wire

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	"strings"

	"github.com/ecagent/ecagent/internal/pcapng"
)

const capturesDir = "../../testdata/real-hw/captures"

// realFrames returns every EtherCAT frame of every real capture.
func realFrames(tb testing.TB) map[string][][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(capturesDir, "*.pcapng"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no captures in %s (err %v)", capturesDir, err)
	}
	out := map[string][][]byte{}
	for _, f := range files {
		pkts, err := pcapng.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, p := range pkts {
			if len(p.Data) >= 14 && binary.BigEndian.Uint16(p.Data[12:]) == EtherType {
				out[filepath.Base(f)] = append(out[filepath.Base(f)], p.Data)
			}
		}
	}
	return out
}

func TestDecodeRealCaptures(t *testing.T) {
	for name, frames := range realFrames(t) {
		cmds := map[Command]int{}
		for i, b := range frames {
			var f Frame
			if err := f.Decode(b); err != nil {
				t.Fatalf("%s frame %d: %v", name, i, err)
			}
			it := f.Datagrams()
			var d Datagram
			n, bytes := 0, 0
			for it.Next(&d) {
				if !d.Command.Valid() {
					t.Errorf("%s frame %d: invalid command %v", name, i, d.Command)
				}
				cmds[d.Command]++
				n++
				bytes += d.Len()
			}
			if err := it.Err(); err != nil {
				t.Fatalf("%s frame %d: datagram at offset %d: %v", name, i, it.Offset(), err)
			}
			if n == 0 || bytes != int(f.Header.Length) {
				t.Errorf("%s frame %d: %d datagrams covering %d bytes, header says %d", name, i, n, bytes, f.Header.Length)
			}
		}
		t.Logf("%s: %d frames, commands %v", name, len(frames), cmds)
	}
}

func TestBuilderRoundTrip(t *testing.T) {
	var b Builder
	buf := make([]byte, MaxFrameLen)
	dst := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	src := [6]byte{0x02, 0, 0, 0, 0, 1}
	if err := b.Reset(buf, dst, src); err != nil {
		t.Fatal(err)
	}
	type dg struct {
		cmd  Command
		idx  uint8
		addr uint32
		data []byte
	}
	want := []dg{
		{BRD, 1, PhysicalAddress(0, 0x0000), make([]byte, 2)},
		{APWR, 2, PhysicalAddress(PositionADP(3), 0x0010), []byte{0xe9, 0x03}},
		{LRW, 3, 0x00010000, []byte{1, 2, 3, 4, 5}},
		{FRMW, 4, PhysicalAddress(0x1001, 0x0910), make([]byte, 8)},
	}
	for _, w := range want {
		if err := b.AppendData(w.cmd, w.idx, w.addr, w.data); err != nil {
			t.Fatal(err)
		}
	}
	frame := b.Bytes()
	if n, err := Validate(frame); err != nil || n != len(want) {
		t.Fatalf("Validate = %d, %v; want %d datagrams", n, err, len(want))
	}
	var f Frame
	if err := f.Decode(frame); err != nil {
		t.Fatal(err)
	}
	if string(f.Destination()) != string(dst[:]) || string(f.Source()) != string(src[:]) {
		t.Errorf("addresses % x → % x", f.Source(), f.Destination())
	}
	it := f.Datagrams()
	var d Datagram
	for i := 0; it.Next(&d); i++ {
		w := want[i]
		if d.Command != w.cmd || d.Index != w.idx || d.Address != w.addr || string(d.Data) != string(w.data) || d.WKC != 0 {
			t.Errorf("datagram %d = %v idx %d addr %#x data % x wkc %d; want %v %d %#x % x", i, d.Command, d.Index, d.Address, d.Data, d.WKC, w.cmd, w.idx, w.addr, w.data)
		}
		if d.More != (i < len(want)-1) {
			t.Errorf("datagram %d: more = %v", i, d.More)
		}
		d.SetWKC(uint16(10 + i))
	}
	// Working counters written through the view land in the frame.
	it = f.Datagrams()
	for i := 0; it.Next(&d); i++ {
		if d.WKC != uint16(10+i) {
			t.Errorf("datagram %d: wkc %d after SetWKC", i, d.WKC)
		}
	}
	if PositionADP(3) != 0xFFFD || ADP(PhysicalAddress(0xFFFD, 0x10)) != 0xFFFD || ADO(PhysicalAddress(0xFFFD, 0x10)) != 0x10 {
		t.Error("address helpers")
	}
}

func TestBuilderLimits(t *testing.T) {
	var b Builder
	if err := b.Reset(make([]byte, 10), [6]byte{}, [6]byte{}); !errors.Is(err, ErrBufferTooSmall) {
		t.Errorf("short buffer: %v", err)
	}
	if err := b.Reset(make([]byte, 40), [6]byte{}, [6]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(LRD, 0, 0, 12); err != nil {
		t.Fatalf("12 bytes fit in 40: %v", err)
	}
	if _, err := b.Append(LRD, 0, 0, 1); !errors.Is(err, ErrFrameFull) {
		t.Errorf("overfull append: %v", err)
	}
	if _, err := b.Append(LRD, 0, 0, MaxDataLen+1); !errors.Is(err, ErrDataTooLong) {
		t.Errorf("over-long datagram: %v", err)
	}
}

// frameWith returns a valid frame holding one datagram with n data bytes.
func frameWith(n int) []byte {
	var b Builder
	buf := make([]byte, MaxFrameLen)
	_ = b.Reset(buf, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, [6]byte{2})
	_, _ = b.Append(FPRD, 7, PhysicalAddress(0x1001, 0x0130), n)
	return append([]byte(nil), b.Bytes()...)
}

func TestDecodeMalformed(t *testing.T) {
	good := frameWith(2)
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrShortFrame},
		{"ethernet only", good[:14], ErrShortFrame},
		{"ipv4", mut(func(b []byte) []byte { b[12], b[13] = 0x08, 0x00; return b }), ErrNotEtherCAT},
		{"type 4", mut(func(b []byte) []byte { b[15] = 0x40; return b }), ErrUnsupportedType},
		{"header longer than frame", mut(func(b []byte) []byte { b[14] = 0xff; b[15] = 0x17; return b }), ErrHeaderLength},
		{"truncated frame", good[:len(good)-3], ErrHeaderLength},
		{"datagram overruns", mut(func(b []byte) []byte { b[16+6] = 0x40; return b }), ErrDatagramOverrun},
		{"more bit without datagram", mut(func(b []byte) []byte { b[16+7] |= 0x80; return b }), ErrDatagramHeader},
		{"zero length", mut(func(b []byte) []byte { b[14], b[15] = 0, 0x10; return b }), ErrNoDatagram},
		{"truncated datagram header", mut(func(b []byte) []byte { b[14], b[15] = 5, 0x10; return b }), ErrDatagramHeader},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := Validate(c.frame)
			if !errors.Is(err, c.want) || n != 0 {
				t.Errorf("Validate = %d, %v; want 0, %v", n, err, c.want)
			}
		})
	}
}

func TestVLANTaggedFrame(t *testing.T) {
	good := frameWith(4)
	tagged := append(append(append([]byte(nil), good[:12]...), 0x81, 0x00, 0x00, 0x05), good[12:]...)
	if n, err := Validate(tagged); err != nil || n != 1 {
		t.Errorf("tagged frame: %d, %v", n, err)
	}
}

func TestCommandProperties(t *testing.T) {
	for _, c := range []struct {
		cmd          Command
		name         string
		mode         Addressing
		reads, write bool
	}{
		{NOP, "NOP", AddressingNone, false, false},
		{APRD, "APRD", AddressingPosition, true, false},
		{FPWR, "FPWR", AddressingConfigured, false, true},
		{BRW, "BRW", AddressingBroadcast, true, true},
		{LRW, "LRW", AddressingLogical, true, true},
		{ARMW, "ARMW", AddressingPosition, true, true},
		{FRMW, "FRMW", AddressingConfigured, true, true},
		{Command(99), "Command(99)", AddressingNone, false, false},
	} {
		if c.cmd.String() != c.name || c.cmd.Addressing() != c.mode || c.cmd.Reads() != c.reads || c.cmd.Writes() != c.write {
			t.Errorf("%v: %s %v %v %v", c.cmd, c.cmd.String(), c.cmd.Addressing(), c.cmd.Reads(), c.cmd.Writes())
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	buf := make([]byte, MaxFrameLen)
	var b Builder
	frame := frameWith(64)
	allocs := testing.AllocsPerRun(1000, func() {
		_ = b.Reset(buf, [6]byte{}, [6]byte{})
		d, _ := b.Append(LRW, 1, 0, 64)
		d[0] = 1
		var f Frame
		if f.Decode(frame) != nil {
			panic("decode")
		}
		it := f.Datagrams()
		var dg Datagram
		for it.Next(&dg) {
			dg.SetWKC(dg.WKC + 3)
		}
		_, _ = Validate(frame[:20]) // error path too
	})
	if allocs != 0 {
		t.Errorf("encode+decode allocates %v times per run", allocs)
	}
}

func BenchmarkDecode(b *testing.B) {
	frame := frameWith(64)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		var f Frame
		_ = f.Decode(frame)
		it := f.Datagrams()
		var d Datagram
		for it.Next(&d) {
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	buf := make([]byte, MaxFrameLen)
	var bl Builder
	b.ReportAllocs()
	for b.Loop() {
		_ = bl.Reset(buf, [6]byte{}, [6]byte{})
		_, _ = bl.Append(LRW, 1, 0, 64)
		_, _ = bl.Append(FRMW, 2, PhysicalAddress(0x1001, 0x0910), 8)
	}
}

// TestCommandNames pins every mnemonic: String is generated (stringer).
func TestCommandNames(t *testing.T) {
	want := "NOP APRD APWR APRW FPRD FPWR FPRW BRD BWR BRW LRD LWR LRW ARMW FRMW Command(15) Command(255)"
	var got []string
	for _, c := range []Command{NOP, APRD, APWR, APRW, FPRD, FPWR, FPRW, BRD, BWR, BRW, LRD, LWR, LRW, ARMW, FRMW, 15, 255} {
		got = append(got, c.String())
	}
	if g := strings.Join(got, " "); g != want {
		t.Errorf("names %q, want %q", g, want)
	}
}
