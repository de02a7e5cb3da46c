package esinames

import "fmt"

// siUnits are the unit indexes of ETG.1004 (after CiA 303-2): the SI base
// and derived units.
var siUnits = map[uint8]string{
	0x01: "m", 0x02: "kg", 0x03: "s", 0x04: "A", 0x05: "K", 0x06: "mol", 0x07: "cd",
	0x10: "rad", 0x11: "sr", 0x20: "Hz", 0x21: "N", 0x22: "Pa", 0x23: "J", 0x24: "W",
	0x25: "C", 0x26: "V", 0x27: "F", 0x28: "Ω", 0x29: "S", 0x2A: "Wb", 0x2B: "T",
	0x2C: "H", 0x2D: "°C", 0x2E: "lm", 0x2F: "lx", 0x30: "Bq", 0x31: "Gy", 0x32: "Sv",
}

// siPrefixes are the decimal prefixes by power of ten.
var siPrefixes = map[int8]string{
	18: "E", 15: "P", 12: "T", 9: "G", 6: "M", 3: "k", 2: "h", 1: "da", 0: "",
	-1: "d", -2: "c", -3: "m", -6: "µ", -9: "n", -12: "p", -15: "f", -18: "a",
}

// UnitText renders an ETG.1004 unit code (an ESI's Info/Unit): the power
// of ten of the prefix in the top byte, the unit index in the next, the
// index of a denominator unit in the third, e.g. #xFD260000 is mV and
// #x00010300 m/s. A code of 0 is "" (no unit); a code with an index the
// table does not know is rendered as the code, so that it is never lost.
func UnitText(code uint32) string {
	if code == 0 {
		return ""
	}
	prefix, ok := siPrefixes[int8(code>>24)]
	num, numOK := siUnits[uint8(code>>16)]
	den, denOK := siUnits[uint8(code>>8)]
	switch {
	case !ok || !numOK && uint8(code>>16) != 0 || !denOK && uint8(code>>8) != 0:
		return fmt.Sprintf("ETG.1004 unit #x%08X", code)
	case uint8(code>>8) != 0:
		if num == "" {
			num = "1"
		}
		return prefix + num + "/" + den
	}
	return prefix + num
}
