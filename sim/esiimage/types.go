package esiimage

import (
	"strconv"
	"strings"
)

// CoE data type indexes (ETG.1000.6 Table 64, ETG.1020 Table 98) of the
// base types ESI files name.
const (
	TypeBool          uint16 = 0x0001
	TypeInt8          uint16 = 0x0002
	TypeInt16         uint16 = 0x0003
	TypeInt32         uint16 = 0x0004
	TypeUint8         uint16 = 0x0005
	TypeUint16        uint16 = 0x0006
	TypeUint32        uint16 = 0x0007
	TypeReal32        uint16 = 0x0008
	TypeVisibleString uint16 = 0x0009
	TypeOctetString   uint16 = 0x000A
	TypeUnicodeString uint16 = 0x000B
	TypeTimeOfDay     uint16 = 0x000C
	TypeTimeDiff      uint16 = 0x000D
	TypeDomain        uint16 = 0x000F
	TypeInt24         uint16 = 0x0010
	TypeReal64        uint16 = 0x0011
	TypeInt40         uint16 = 0x0012
	TypeInt48         uint16 = 0x0013
	TypeInt56         uint16 = 0x0014
	TypeInt64         uint16 = 0x0015
	TypeUint24        uint16 = 0x0016
	TypeUint40        uint16 = 0x0018
	TypeUint48        uint16 = 0x0019
	TypeUint56        uint16 = 0x001A
	TypeUint64        uint16 = 0x001B
	TypeGUID          uint16 = 0x001D
	TypeByte          uint16 = 0x001E
	TypeWord          uint16 = 0x001F
	TypeDword         uint16 = 0x0020
	TypeBitArr8       uint16 = 0x002D
	TypeBitArr16      uint16 = 0x002E
	TypeBitArr32      uint16 = 0x002F
	TypeBit1          uint16 = 0x0030 // BIT1 … BIT8 are 0x0030 … 0x0037
)

// baseTypes maps the ETG.2000 names of base types (IEC 61131-3 names and
// the CoE names some tools write) to their CoE index.
var baseTypes = map[string]uint16{
	"BOOL": TypeBool, "BOOLEAN": TypeBool, "BIT": TypeBool,
	"SINT": TypeInt8, "INTEGER8": TypeInt8,
	"INT": TypeInt16, "INTEGER16": TypeInt16,
	"DINT": TypeInt32, "INTEGER32": TypeInt32,
	"USINT": TypeUint8, "UNSIGNED8": TypeUint8,
	"UINT": TypeUint16, "UNSIGNED16": TypeUint16,
	"UDINT": TypeUint32, "UNSIGNED32": TypeUint32,
	"REAL": TypeReal32, "REAL32": TypeReal32,
	"LREAL": TypeReal64, "REAL64": TypeReal64,
	"VISIBLE_STRING": TypeVisibleString, "OCTET_STRING": TypeOctetString,
	"UNICODE_STRING": TypeUnicodeString,
	"TIME_OF_DAY":    TypeTimeOfDay, "TIME_DIFFERENCE": TypeTimeDiff, "DOMAIN": TypeDomain,
	"INT24": TypeInt24, "INTEGER24": TypeInt24, "INT40": TypeInt40, "INT48": TypeInt48, "INT56": TypeInt56,
	"LINT": TypeInt64, "INTEGER64": TypeInt64,
	"UINT24": TypeUint24, "UNSIGNED24": TypeUint24, "UINT40": TypeUint40, "UINT48": TypeUint48, "UINT56": TypeUint56,
	"ULINT": TypeUint64, "UNSIGNED64": TypeUint64,
	"GUID": TypeGUID, "BYTE": TypeByte, "WORD": TypeWord, "DWORD": TypeDword,
	"BITARR8": TypeBitArr8, "BITARR16": TypeBitArr16, "BITARR32": TypeBitArr32,
}

// CoEType returns the CoE data type index of an ESI base type name (BOOL,
// INT, UDINT, BIT2, STRING(6), ARRAY [0..3] OF BYTE …), as an SII PDO
// entry and an SDO information entry description carry it, and false for
// a name that is not a base type (a record or an array the dictionary
// declares).
func CoEType(name string) (uint16, bool) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if t, ok := baseTypes[n]; ok {
		return t, true
	}
	switch {
	case strings.HasPrefix(n, "STRING("):
		return TypeVisibleString, true
	case strings.HasPrefix(n, "WSTRING("):
		return TypeUnicodeString, true
	case strings.HasPrefix(n, "ARRAY") && strings.HasSuffix(n, "OF BYTE"):
		return TypeOctetString, true
	}
	if k, ok := strings.CutPrefix(n, "BIT"); ok {
		if v, err := strconv.Atoi(k); err == nil && v >= 1 && v <= 8 {
			return TypeBit1 + uint16(v-1), true
		}
	}
	return 0, false
}
