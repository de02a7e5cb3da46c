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
	m, _ := meaningOf(abortMeanings[:], c)
	return m
}

// abortMeanings are the SDO abort codes' standard meanings. It is never
// written.
var abortMeanings = [...]codeMeaning[AbortCode]{
	{AbortToggle, 0, "toggle bit not changed"},
	{AbortTimeout, 0, "SDO protocol timeout"},
	{AbortCommand, 0, "client/server command specifier not valid or unknown"},
	{AbortBlockSize, 0, "invalid block size"},
	{AbortSequence, 0, "invalid sequence number"},
	{AbortCRC, 0, "CRC error"},
	{AbortOutOfMemory, 0, "out of memory"},
	{AbortUnsupportedAccess, 0, "unsupported access to an object"},
	{AbortWriteOnly, 0, "attempt to read a write-only object"},
	{AbortReadOnly, 0, "attempt to write a read-only object"},
	{AbortSubIndexWriteOnly, 0, "subindex cannot be written, subindex 0 must be 0 for write access"},
	{AbortCompleteAccess, 0, "complete access not supported for variable length objects"},
	{AbortObjectTooLong, 0, "object length exceeds mailbox size"},
	{AbortObjectMapped, 0, "object mapped to RxPDO, SDO download blocked"},
	{AbortNoObject, 0, "object does not exist in the object dictionary"},
	{AbortNotMappable, 0, "object cannot be mapped into the PDO"},
	{AbortPDOLength, 0, "number and length of the objects to be mapped would exceed the PDO length"},
	{AbortIncompatible, 0, "general parameter incompatibility"},
	{AbortDeviceIncompatible, 0, "general internal incompatibility in the device"},
	{AbortHardware, 0, "access failed due to a hardware error"},
	{AbortLengthMismatch, 0, "data type does not match, length of service parameter does not match"},
	{AbortLengthHigh, 0, "data type does not match, length of service parameter too high"},
	{AbortLengthLow, 0, "data type does not match, length of service parameter too low"},
	{AbortNoSubIndex, 0, "subindex does not exist"},
	{AbortValueRange, 0, "value range of parameter exceeded"},
	{AbortValueHigh, 0, "value of parameter written too high"},
	{AbortValueLow, 0, "value of parameter written too low"},
	{AbortModuleList, 0, "detected module ident list does not match configured module ident list"},
	{AbortMaxBelowMin, 0, "maximum value is less than minimum value"},
	{AbortGeneral, 0, "general error"},
	{AbortTransfer, 0, "data cannot be transferred or stored to the application"},
	{AbortLocalControl, 0, "data cannot be transferred or stored to the application because of local control"},
	{AbortDeviceState, 0, "data cannot be transferred or stored to the application because of the present device state"},
	{AbortNoDictionary, 0, "object dictionary dynamic generation fails or no object dictionary is present"},
	{AbortNoData, 0, "no data available"},
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
