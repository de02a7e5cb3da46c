package mqtt

import "fmt"

// emergencyCode is one exactly known emergency error code.
type emergencyCode struct {
	code    uint16
	meaning string
}

// emergencyCodes are error codes whose meaning is fixed by CiA 301, the
// drive profile CiA 402 (IEC 61800-7-201; the codes of object 0x603F are
// from the same table) or ETG.1000.6 (the EtherCAT state machine codes
// 0xA0xx). Codes not listed here are named by their class.
func emergencyCodes() []emergencyCode {
	return []emergencyCode{
		{0x2310, "continuous over current (device output side)"},
		{0x3210, "DC link over-voltage"},
		{0x3220, "DC link under-voltage"},
		{0x4210, "device temperature too high"},
		{0x5530, "EEPROM fault"},
		{0x6010, "software reset by watchdog"},
		{0x6320, "parameter error"},
		{0x7121, "motor blocked"},
		{0x7305, "incremental sensor 1 fault"},
		{0x7500, "communication error"},
		{0x8110, "CAN overrun (objects lost)"},
		{0x8120, "CAN in error passive mode"},
		{0x8130, "life guard or heartbeat error"},
		{0x8210, "PDO not processed due to length error"},
		{0x8220, "PDO length exceeded"},
		{0x8311, "excess torque"},
		{0x8400, "velocity (speed) controller error"},
		{0x8500, "position controller error"},
		{0x8611, "following error"},
		{0x8612, "reference limit"},
		{0x8700, "sync controller error"},
		{0xA000, "transition from PREOP to SAFEOP failed"},
		{0xA001, "transition from SAFEOP to OP failed"},
	}
}

// emergencyClass is the meaning of a range of error codes: those whose
// bits under mask equal prefix.
type emergencyClass struct {
	prefix, mask uint16
	meaning      string
}

// emergencyClasses name the classes of CiA 301's error code table, the
// narrower ones (two hexadecimal digits) first.
func emergencyClasses() []emergencyClass {
	return []emergencyClass{
		{0x0000, 0xFF00, "error reset or no error"},
		{0x2100, 0xFF00, "current, device input side"},
		{0x2200, 0xFF00, "current inside the device"},
		{0x2300, 0xFF00, "current, device output side"},
		{0x3100, 0xFF00, "mains voltage"},
		{0x3200, 0xFF00, "voltage inside the device"},
		{0x3300, 0xFF00, "output voltage"},
		{0x4100, 0xFF00, "ambient temperature"},
		{0x4200, 0xFF00, "device temperature"},
		{0x6100, 0xFF00, "internal software"},
		{0x6200, 0xFF00, "user software"},
		{0x6300, 0xFF00, "data set"},
		{0x8100, 0xFF00, "communication"},
		{0x8200, 0xFF00, "protocol error"},
		{0xF000, 0xFF00, "additional functions"},
		{0xFF00, 0xFF00, "device specific"},
		{0x1000, 0xF000, "generic error"},
		{0x2000, 0xF000, "current"},
		{0x3000, 0xF000, "voltage"},
		{0x4000, 0xF000, "temperature"},
		{0x5000, 0xF000, "device hardware"},
		{0x6000, 0xF000, "device software"},
		{0x7000, 0xF000, "additional modules"},
		{0x8000, 0xF000, "monitoring"},
		{0x9000, 0xF000, "external error"},
	}
}

// EmergencyMeaning says what an emergency error code (or a CiA 402 error
// code, object 0x603F) means: the exact meaning of a known code, else its
// class, with "unknown class" for codes outside every class.
func EmergencyMeaning(code uint16) string {
	for _, c := range emergencyCodes() {
		if c.code == code {
			return c.meaning
		}
	}
	for _, c := range emergencyClasses() {
		if code&c.mask == c.prefix {
			return c.meaning
		}
	}
	return fmt.Sprintf("unknown class 0x%02X", code>>8)
}
