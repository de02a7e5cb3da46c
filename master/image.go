package master

// ProcessImage is the master's copy of the process data: one byte slice
// that mirrors the logical address space the FMMUs map, outputs first and
// inputs after them (see mapProcessData for the layout rules):
//
//	logical 0 ………………… outputs (Outputs(), bit-packed) ……… | inputs (Inputs(), from a fresh byte) ……|
//	        EL2004#1 bits 0–3, EL2004#2 bits 4–7, EL4132 bytes 1–4 | EL1014#1 bits 0–3, EL1014#2 bits 4–7 |
//
// Each slave's place is in Slave.Outputs and Slave.Inputs, bit offsets
// relative to the start of the respective area; bit k of a byte is the
// bit of value 1<<k, multi-bit fields are little endian, as on the wire.
//
// Exchange copies Outputs() into the frame before sending and the received
// inputs into Inputs() afterwards. The image belongs to the goroutine that
// calls Exchange: it is not safe for concurrent use, and the accessors
// allocate nothing so the cycle may call them.
type ProcessImage struct {
	buf      []byte
	outBytes int
}

func newProcessImage(outBytes, inBytes int) *ProcessImage {
	return &ProcessImage{buf: make([]byte, outBytes+inBytes), outBytes: outBytes}
}

// Bytes returns the whole image, outputs then inputs, as the logical
// address space from address 0 holds it.
func (p *ProcessImage) Bytes() []byte { return p.buf }

// Outputs returns the output area (master to slaves). Writes to it go out
// with the next Exchange.
func (p *ProcessImage) Outputs() []byte { return p.buf[:p.outBytes:p.outBytes] }

// Inputs returns the input area (slaves to master) as of the last Exchange.
func (p *ProcessImage) Inputs() []byte { return p.buf[p.outBytes:] }

// SetOutputBit sets output bit `bit` of slave s (0 = its first output bit).
func (p *ProcessImage) SetOutputBit(s *Slave, bit int, v bool) error {
	var x uint64
	if v {
		x = 1
	}
	return p.SetOutputValue(s, bit, 1, x)
}

// OutputBit returns output bit `bit` of slave s as it will be sent.
func (p *ProcessImage) OutputBit(s *Slave, bit int) (bool, error) {
	v, err := p.OutputValue(s, bit, 1)
	return v != 0, err
}

// InputBit returns input bit `bit` of slave s as last received.
func (p *ProcessImage) InputBit(s *Slave, bit int) (bool, error) {
	v, err := p.InputValue(s, bit, 1)
	return v != 0, err
}

// InputValue returns n bits (1 to 64) of slave s's inputs from bit `bit`
// on, little endian: the field's first bit is bit 0 of the result. An
// analog input channel of 16 bits at bit 16 is InputValue(s, 16, 16).
func (p *ProcessImage) InputValue(s *Slave, bit, n int) (uint64, error) {
	if !fits(s.Inputs, bit, n) {
		return 0, ErrBitRange
	}
	return getBits(p.Inputs(), s.Inputs.Offset+bit, n), nil
}

// OutputValue returns n bits (1 to 64) of slave s's outputs from bit `bit`
// on, little endian.
func (p *ProcessImage) OutputValue(s *Slave, bit, n int) (uint64, error) {
	if !fits(s.Outputs, bit, n) {
		return 0, ErrBitRange
	}
	return getBits(p.Outputs(), s.Outputs.Offset+bit, n), nil
}

// SetOutputValue stores the low n bits (1 to 64) of v in slave s's outputs
// from bit `bit` on, little endian, leaving the neighbouring bits (maybe
// another slave's) alone.
func (p *ProcessImage) SetOutputValue(s *Slave, bit, n int, v uint64) error {
	if !fits(s.Outputs, bit, n) {
		return ErrBitRange
	}
	setBits(p.Outputs(), s.Outputs.Offset+bit, n, v)
	return nil
}

// InputBits appends slave s's inputs to dst, shifted so that its first
// input bit is bit 0 of the first appended byte, in (Len+7)/8 bytes, and
// returns the extended slice. It allocates only when dst lacks capacity.
func (p *ProcessImage) InputBits(s *Slave, dst []byte) []byte {
	return appendBits(dst, p.Inputs(), s.Inputs)
}

// OutputBits appends slave s's outputs to dst the same way.
func (p *ProcessImage) OutputBits(s *Slave, dst []byte) []byte {
	return appendBits(dst, p.Outputs(), s.Outputs)
}

// SetOutputBits replaces slave s's outputs with the first Outputs.Len bits
// of src (its first bit is bit 0 of src[0]). src must hold them all.
func (p *ProcessImage) SetOutputBits(s *Slave, src []byte) error {
	if len(src)*8 < s.Outputs.Len {
		return ErrBitRange
	}
	out := p.Outputs()
	for done := 0; done < s.Outputs.Len; done += 8 {
		n := min(8, s.Outputs.Len-done)
		setBits(out, s.Outputs.Offset+done, n, uint64(src[done/8]))
	}
	return nil
}

// fits reports whether bits [bit, bit+n) lie within r and n is 1 to 64.
func fits(r BitRange, bit, n int) bool {
	return n >= 1 && n <= 64 && bit >= 0 && bit+n <= r.Len
}

func appendBits(dst, area []byte, r BitRange) []byte {
	for done := 0; done < r.Len; done += 8 {
		n := min(8, r.Len-done)
		dst = append(dst, byte(getBits(area, r.Offset+done, n)))
	}
	return dst
}

// getBits reads n bits from b starting at bit offset off, little endian.
func getBits(b []byte, off, n int) uint64 {
	var v uint64
	for i := 0; i < n; {
		pos := off + i
		shift := pos % 8
		take := min(8-shift, n-i)
		v |= uint64(b[pos/8]>>shift&(1<<take-1)) << i
		i += take
	}
	return v
}

// setBits writes the low n bits of v into b from bit offset off.
func setBits(b []byte, off, n int, v uint64) {
	for i := 0; i < n; {
		pos := off + i
		shift := pos % 8
		take := min(8-shift, n-i)
		mask := byte(1<<take-1) << shift
		b[pos/8] = b[pos/8]&^mask | byte(v>>i)<<shift&mask
		i += take
	}
}
