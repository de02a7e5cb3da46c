// Package bitfield copies the bit fields of EtherCAT process data: a PDO
// entry or a variable occupies any number of bits from any bit of an
// image, least significant bit first (ETG.1000.6), so neither end need
// fall on a byte.
package bitfield

// Copy copies n bits from bit from of src to bit to of dst, least
// significant bit first; it stops at the first bit that falls outside
// either slice, leaving the rest of dst as it is.
func Copy(dst []byte, to int, src []byte, from, n int) {
	for k := range n {
		s, t := from+k, to+k
		if s/8 >= len(src) || t/8 >= len(dst) {
			return
		}
		if src[s/8]&(1<<(s%8)) != 0 {
			dst[t/8] |= 1 << (t % 8)
		} else {
			dst[t/8] &^= 1 << (t % 8)
		}
	}
}

// Value returns the n bits at bit from of src as an unsigned number,
// least significant bit first: at most 64 of them, and those past the end
// of src read as 0.
func Value(src []byte, from, n int) uint64 {
	var v uint64
	for k := range min(n, 64) {
		s := from + k
		if s/8 >= len(src) {
			break
		}
		if src[s/8]&(1<<(s%8)) != 0 {
			v |= 1 << k
		}
	}
	return v
}
