package coe

import "fmt"

// AbortCode is an SDO abort code (ETG.1000.6, SDO abort codes, taken from
// CiA 301).
type AbortCode uint32

// SDO abort codes.
const (
	AbortToggle             AbortCode = 0x05030000
	AbortTimeout            AbortCode = 0x05040000
	AbortCommand            AbortCode = 0x05040001
	AbortBlockSize          AbortCode = 0x05040002
	AbortSequence           AbortCode = 0x05040003
	AbortCRC                AbortCode = 0x05040004
	AbortOutOfMemory        AbortCode = 0x05040005
	AbortUnsupportedAccess  AbortCode = 0x06010000
	AbortWriteOnly          AbortCode = 0x06010001
	AbortReadOnly           AbortCode = 0x06010002
	AbortSubIndexWriteOnly  AbortCode = 0x06010003
	AbortCompleteAccess     AbortCode = 0x06010004
	AbortObjectTooLong      AbortCode = 0x06010005
	AbortObjectMapped       AbortCode = 0x06010006
	AbortNoObject           AbortCode = 0x06020000
	AbortNotMappable        AbortCode = 0x06040041
	AbortPDOLength          AbortCode = 0x06040042
	AbortIncompatible       AbortCode = 0x06040043
	AbortDeviceIncompatible AbortCode = 0x06040047
	AbortHardware           AbortCode = 0x06060000
	AbortLengthMismatch     AbortCode = 0x06070010
	AbortLengthHigh         AbortCode = 0x06070012
	AbortLengthLow          AbortCode = 0x06070013
	AbortNoSubIndex         AbortCode = 0x06090011
	AbortValueRange         AbortCode = 0x06090030
	AbortValueHigh          AbortCode = 0x06090031
	AbortValueLow           AbortCode = 0x06090032
	AbortModuleList         AbortCode = 0x06090033
	AbortMaxBelowMin        AbortCode = 0x06090036
	AbortGeneral            AbortCode = 0x08000000
	AbortTransfer           AbortCode = 0x08000020
	AbortLocalControl       AbortCode = 0x08000021
	AbortDeviceState        AbortCode = 0x08000022
	AbortNoDictionary       AbortCode = 0x08000023
	AbortNoData             AbortCode = 0x08000024
)

// Meaning returns the standard meaning of the code, or "" for a code the
// standard does not define.
func (c AbortCode) Meaning() string {
	switch c {
	case AbortToggle:
		return "toggle bit not changed"
	case AbortTimeout:
		return "SDO protocol timeout"
	case AbortCommand:
		return "client/server command specifier not valid or unknown"
	case AbortBlockSize:
		return "invalid block size"
	case AbortSequence:
		return "invalid sequence number"
	case AbortCRC:
		return "CRC error"
	case AbortOutOfMemory:
		return "out of memory"
	case AbortUnsupportedAccess:
		return "unsupported access to an object"
	case AbortWriteOnly:
		return "attempt to read a write-only object"
	case AbortReadOnly:
		return "attempt to write a read-only object"
	case AbortSubIndexWriteOnly:
		return "subindex cannot be written, subindex 0 must be 0 for write access"
	case AbortCompleteAccess:
		return "complete access not supported for variable length objects"
	case AbortObjectTooLong:
		return "object length exceeds mailbox size"
	case AbortObjectMapped:
		return "object mapped to RxPDO, SDO download blocked"
	case AbortNoObject:
		return "object does not exist in the object dictionary"
	case AbortNotMappable:
		return "object cannot be mapped into the PDO"
	case AbortPDOLength:
		return "number and length of the objects to be mapped would exceed the PDO length"
	case AbortIncompatible:
		return "general parameter incompatibility"
	case AbortDeviceIncompatible:
		return "general internal incompatibility in the device"
	case AbortHardware:
		return "access failed due to a hardware error"
	case AbortLengthMismatch:
		return "data type does not match, length of service parameter does not match"
	case AbortLengthHigh:
		return "data type does not match, length of service parameter too high"
	case AbortLengthLow:
		return "data type does not match, length of service parameter too low"
	case AbortNoSubIndex:
		return "subindex does not exist"
	case AbortValueRange:
		return "value range of parameter exceeded"
	case AbortValueHigh:
		return "value of parameter written too high"
	case AbortValueLow:
		return "value of parameter written too low"
	case AbortModuleList:
		return "detected module ident list does not match configured module ident list"
	case AbortMaxBelowMin:
		return "maximum value is less than minimum value"
	case AbortGeneral:
		return "general error"
	case AbortTransfer:
		return "data cannot be transferred or stored to the application"
	case AbortLocalControl:
		return "data cannot be transferred or stored to the application because of local control"
	case AbortDeviceState:
		return "data cannot be transferred or stored to the application because of the present device state"
	case AbortNoDictionary:
		return "object dictionary dynamic generation fails or no object dictionary is present"
	case AbortNoData:
		return "no data available"
	}
	return ""
}

// String formats the code with its meaning.
func (c AbortCode) String() string {
	if m := c.Meaning(); m != "" {
		return fmt.Sprintf("%#08x (%s)", uint32(c), m)
	}
	return fmt.Sprintf("%#08x", uint32(c))
}

// AbortError is an SDO transfer aborted by the slave (or by the master,
// when it gives up on a transfer). Branch on Code with errors.As.
type AbortError struct {
	Index    uint16
	SubIndex uint8
	Code     AbortCode
}

// Error names the object and the abort code's meaning.
func (e *AbortError) Error() string {
	return fmt.Sprintf("SDO %#04x:%02x aborted: %v", e.Index, e.SubIndex, e.Code)
}
