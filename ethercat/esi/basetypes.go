package esi

import (
	"strconv"
	"strings"
)

// isBaseType reports whether name is a base data type of ETG.2000 (the
// IEC 61131-3 names, their sized variants, strings and byte arrays),
// which a dictionary need not declare.
func isBaseType(name string) bool {
	n := strings.ToUpper(strings.TrimSpace(name))
	for _, p := range []string{"STRING(", "WSTRING(", "ARRAY [", "ARRAY[", "BIT"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	switch n {
	case "OCTET_STRING", "VISIBLE_STRING", "UNICODE_STRING", "DOMAIN":
		return true
	}
	_, ok := baseBits(n)
	return ok
}

// baseBits returns the size in bits of a fixed-size base type.
func baseBits(name string) (uint32, bool) {
	n := strings.ToUpper(strings.TrimSpace(name))
	switch n {
	case "BOOL", "BIT":
		return 1, true
	case "BYTE", "SINT", "USINT", "BITARR8":
		return 8, true
	case "WORD", "INT", "UINT", "BITARR16":
		return 16, true
	case "INT24", "UINT24":
		return 24, true
	case "DWORD", "DINT", "UDINT", "REAL", "REAL32", "BITARR32":
		return 32, true
	case "INT40", "UINT40":
		return 40, true
	case "INT48", "UINT48", "TIME_OF_DAY", "TIME_DIFFERENCE":
		return 48, true
	case "INT56", "UINT56":
		return 56, true
	case "LWORD", "LINT", "ULINT", "LREAL", "REAL64":
		return 64, true
	case "GUID":
		return 128, true
	}
	if k, ok := strings.CutPrefix(n, "BIT"); ok { // BIT1 … BIT16
		if v, err := strconv.Atoi(k); err == nil && v >= 1 && v <= 16 {
			return uint32(v), true
		}
	}
	return 0, false
}
