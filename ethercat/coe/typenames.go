package coe

import (
	"strconv"
	"strings"
)

// CoE data type indexes (ETG.1000.6 Table 64, ETG.1020 Table 98) of the
// base types ESI and ENI files name.
const (
	TypeBool          DataType = 0x0001
	TypeInt8          DataType = 0x0002
	TypeInt16         DataType = 0x0003
	TypeInt32         DataType = 0x0004
	TypeUint8         DataType = 0x0005
	TypeUint16        DataType = 0x0006
	TypeUint32        DataType = 0x0007
	TypeReal32        DataType = 0x0008
	TypeVisibleString DataType = 0x0009
	TypeOctetString   DataType = 0x000A
	TypeUnicodeString DataType = 0x000B
	TypeTimeOfDay     DataType = 0x000C
	TypeTimeDiff      DataType = 0x000D
	TypeDomain        DataType = 0x000F
	TypeInt24         DataType = 0x0010
	TypeReal64        DataType = 0x0011
	TypeInt40         DataType = 0x0012
	TypeInt48         DataType = 0x0013
	TypeInt56         DataType = 0x0014
	TypeInt64         DataType = 0x0015
	TypeUint24        DataType = 0x0016
	TypeUint40        DataType = 0x0018
	TypeUint48        DataType = 0x0019
	TypeUint56        DataType = 0x001A
	TypeUint64        DataType = 0x001B
	TypeGUID          DataType = 0x001D
	TypeByte          DataType = 0x001E
	TypeWord          DataType = 0x001F
	TypeDword         DataType = 0x0020
	TypeBitArr8       DataType = 0x002D
	TypeBitArr16      DataType = 0x002E
	TypeBitArr32      DataType = 0x002F
	TypeBit1          DataType = 0x0030 // BIT1 … BIT8 are 0x0030 … 0x0037
)

// typeNames maps the ETG.2000 names of base types (IEC 61131-3 names and
// the CoE names some tools write) to their CoE index.
var typeNames = map[string]DataType{
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

// TypeByName returns the CoE data type of a base type as ESI and ENI files
// name it (the IEC 61131-3 names BOOL, INT, UDINT …, BIT2, STRING(6),
// ARRAY [0..3] OF BYTE, and the CoE names UNSIGNED16 …), as an SII PDO
// entry and an SDO information entry description carry it, and false for
// a name that is not a base type (a record or an array a dictionary
// declares).
func TypeByName(name string) (DataType, bool) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if t, ok := typeNames[n]; ok {
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
			return TypeBit1 + DataType(v-1), true
		}
	}
	return 0, false
}
