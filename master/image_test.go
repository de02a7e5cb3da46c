package master

import (
	"bytes"
	"errors"
	"testing"
)

func TestProcessImageBits(t *testing.T) {
	slaves := referenceSet()
	l, err := mapProcessData(slaves, maxLRWData)
	if err != nil {
		t.Fatal(err)
	}
	img := newProcessImage(l.outBytes, l.inBytes)
	el2004a, el2004b, el1014a, el1014b, el4132 := slaves[1], slaves[2], slaves[3], slaves[4], slaves[5]

	steps := []struct {
		name string
		do   func() error
		out  []byte
		err  bool
	}{
		{"first EL2004 channel 1", func() error { return img.SetOutputBit(el2004a, 0, true) }, []byte{0x01, 0, 0, 0, 0}, false},
		{"second EL2004 channel 4", func() error { return img.SetOutputBit(el2004b, 3, true) }, []byte{0x81, 0, 0, 0, 0}, false},
		{"second EL2004 all on", func() error { return img.SetOutputBits(el2004b, []byte{0x0F}) }, []byte{0xF1, 0, 0, 0, 0}, false},
		{"first EL2004 channel 1 off", func() error { return img.SetOutputBit(el2004a, 0, false) }, []byte{0xF0, 0, 0, 0, 0}, false},
		{"EL4132 channel 2 = 0x1234", func() error { return img.SetOutputValue(el4132, 16, 16, 0x1234) }, []byte{0xF0, 0, 0, 0x34, 0x12}, false},
		{"bit past the end", func() error { return img.SetOutputBit(el2004a, 4, true) }, []byte{0xF0, 0, 0, 0x34, 0x12}, true},
		{"negative bit", func() error { return img.SetOutputBit(el2004a, -1, true) }, []byte{0xF0, 0, 0, 0x34, 0x12}, true},
		{"slave without outputs", func() error { return img.SetOutputBit(el1014a, 0, true) }, []byte{0xF0, 0, 0, 0x34, 0x12}, true},
		{"field of 65 bits", func() error { return img.SetOutputValue(el4132, 0, 65, 0) }, []byte{0xF0, 0, 0, 0x34, 0x12}, true},
	}
	for _, s := range steps {
		err := s.do()
		if s.err != (err != nil) || (err != nil && !errors.Is(err, ErrBitRange)) {
			t.Errorf("%s: err %v", s.name, err)
		}
		if !bytes.Equal(img.Outputs(), s.out) {
			t.Errorf("%s: outputs % x, want % x", s.name, img.Outputs(), s.out)
		}
	}
	if v, err := img.OutputValue(el4132, 16, 16); v != 0x1234 || err != nil {
		t.Errorf("OutputValue = %#x, %v", v, err)
	}
	if on, err := img.OutputBit(el2004b, 2); !on || err != nil {
		t.Errorf("OutputBit = %v, %v", on, err)
	}
	if got := img.OutputBits(el2004b, nil); !bytes.Equal(got, []byte{0x0F}) {
		t.Errorf("OutputBits = % x", got)
	}

	// Inputs: EL1014 #1 in bits 0–3, #2 in bits 4–7 of the input byte.
	img.Inputs()[0] = 0xA5
	for _, c := range []struct {
		s    *Slave
		bit  int
		want bool
	}{{el1014a, 0, true}, {el1014a, 1, false}, {el1014a, 2, true}, {el1014a, 3, false},
		{el1014b, 0, false}, {el1014b, 1, true}, {el1014b, 2, false}, {el1014b, 3, true}} {
		if got, err := img.InputBit(c.s, c.bit); got != c.want || err != nil {
			t.Errorf("InputBit(%d, %d) = %v, %v; want %v", c.s.Position, c.bit, got, err, c.want)
		}
	}
	if got := img.InputBits(el1014b, nil); !bytes.Equal(got, []byte{0x0A}) {
		t.Errorf("InputBits(EL1014 #2) = % x, want 0a", got)
	}
	if _, err := img.InputBit(el1014b, 4); !errors.Is(err, ErrBitRange) {
		t.Errorf("InputBit past the end: %v", err)
	}
	if len(img.Bytes()) != 6 || &img.Bytes()[5] != &img.Inputs()[0] {
		t.Error("Bytes is not outputs followed by inputs")
	}
	if err := img.SetOutputBits(el4132, []byte{1}); !errors.Is(err, ErrBitRange) {
		t.Errorf("SetOutputBits with too few bytes: %v", err)
	}
}

func TestBitHelpersAcrossBytes(t *testing.T) {
	for off := range 16 {
		for n := 1; n <= 64; n++ {
			b := make([]byte, 12)
			for i := range b {
				b[i] = 0xFF
			}
			v := uint64(0xA5C3_0F96_3C5A_E187) & (1<<n - 1)
			if n == 64 {
				v = 0xA5C3_0F96_3C5A_E187
			}
			setBits(b, off, n, v)
			if got := getBits(b, off, n); got != v {
				t.Fatalf("off %d n %d: got %#x want %#x", off, n, got, v)
			}
			// Bits around the field are untouched.
			if off > 0 && getBits(b, 0, off) != 1<<off-1 {
				t.Fatalf("off %d n %d: bits before the field changed", off, n)
			}
			if after := off + n; getBits(b, after, 96-after-1) != 1<<(96-after-1)-1 {
				t.Fatalf("off %d n %d: bits after the field changed", off, n)
			}
		}
	}
}

func TestProcessImageAccessorsDoNotAllocate(t *testing.T) {
	slaves := referenceSet()
	l, _ := mapProcessData(slaves, maxLRWData)
	img := newProcessImage(l.outBytes, l.inBytes)
	buf := make([]byte, 0, 8)
	allocs := testing.AllocsPerRun(1000, func() {
		_ = img.SetOutputBit(slaves[1], 2, true)
		_ = img.SetOutputValue(slaves[5], 0, 16, 0x7FFF)
		_, _ = img.InputBit(slaves[3], 1)
		_, _ = img.InputValue(slaves[4], 0, 4)
		buf = img.InputBits(slaves[3], buf[:0])
		_ = img.SetOutputBit(slaves[1], 9, true) // error path
	})
	if allocs != 0 {
		t.Errorf("accessors allocate %v times per run", allocs)
	}
}
