package esc

import "fmt"

// ALStatusCode is register 0x0134: why a slave refused a state transition
// or left a state (ETG.1000.6, table "AL status codes").
type ALStatusCode uint16

// AL status codes used by the master and the simulator; [ALStatusCode.String]
// knows the rest of the standard table.
const (
	ALNoError                   ALStatusCode = 0x0000
	ALUnspecifiedError          ALStatusCode = 0x0001
	ALInvalidStateChange        ALStatusCode = 0x0011
	ALUnknownState              ALStatusCode = 0x0012
	ALBootstrapNotSupported     ALStatusCode = 0x0013
	ALInvalidMailboxConfig      ALStatusCode = 0x0016
	ALInvalidSyncManagerConfig  ALStatusCode = 0x0017
	ALNoValidInputs             ALStatusCode = 0x0018
	ALNoValidOutputs            ALStatusCode = 0x0019
	ALSyncError                 ALStatusCode = 0x001A
	ALSyncManagerWatchdog       ALStatusCode = 0x001B
	ALInvalidSyncManagerTypes   ALStatusCode = 0x001C
	ALInvalidOutputConfig       ALStatusCode = 0x001D
	ALInvalidInputConfig        ALStatusCode = 0x001E
	ALInvalidWatchdogConfig     ALStatusCode = 0x001F
	ALNeedsInit                 ALStatusCode = 0x0021
	ALNeedsPreOp                ALStatusCode = 0x0022
	ALNeedsSafeOp               ALStatusCode = 0x0023
	ALInvalidInputMapping       ALStatusCode = 0x0024
	ALInvalidOutputMapping      ALStatusCode = 0x0025
	ALInconsistentSettings      ALStatusCode = 0x0026
	ALInvalidDCSyncConfig       ALStatusCode = 0x0030
	ALEEPROMNoAccess            ALStatusCode = 0x0050
	ALEEPROMError               ALStatusCode = 0x0051
	ALSlaveRestartedLocally     ALStatusCode = 0x0060
	ALApplicationControllerAvbl ALStatusCode = 0x00F0
)

var alStatusCodeNames = map[ALStatusCode]string{
	0x0000: "no error",
	0x0001: "unspecified error",
	0x0002: "no memory",
	0x0003: "invalid device setup",
	0x0011: "invalid requested state change",
	0x0012: "unknown requested state",
	0x0013: "bootstrap not supported",
	0x0014: "no valid firmware",
	0x0015: "invalid mailbox configuration (bootstrap)",
	0x0016: "invalid mailbox configuration",
	0x0017: "invalid sync manager configuration",
	0x0018: "no valid inputs available",
	0x0019: "no valid outputs",
	0x001A: "synchronization error",
	0x001B: "sync manager watchdog",
	0x001C: "invalid sync manager types",
	0x001D: "invalid output configuration",
	0x001E: "invalid input configuration",
	0x001F: "invalid watchdog configuration",
	0x0020: "slave needs cold start",
	0x0021: "slave needs INIT",
	0x0022: "slave needs PREOP",
	0x0023: "slave needs SAFEOP",
	0x0024: "invalid input mapping",
	0x0025: "invalid output mapping",
	0x0026: "inconsistent settings",
	0x0027: "free run not supported",
	0x0028: "sync mode not supported",
	0x0029: "free run needs 3-buffer mode",
	0x002A: "background watchdog",
	0x002B: "no valid inputs and outputs",
	0x002C: "fatal sync error",
	0x002D: "no sync error",
	0x002E: "cycle time too small",
	0x0030: "invalid DC SYNC configuration",
	0x0031: "invalid DC latch configuration",
	0x0032: "PLL error",
	0x0033: "DC sync IO error",
	0x0034: "DC sync timeout error",
	0x0035: "DC invalid sync cycle time",
	0x0036: "DC SYNC0 cycle time",
	0x0037: "DC SYNC1 cycle time",
	0x0041: "mailbox AoE",
	0x0042: "mailbox EoE",
	0x0043: "mailbox CoE",
	0x0044: "mailbox FoE",
	0x0045: "mailbox SoE",
	0x004F: "mailbox VoE",
	0x0050: "EEPROM no access",
	0x0051: "EEPROM error",
	0x0052: "external hardware not ready",
	0x0060: "slave restarted locally",
	0x0061: "device identification value updated",
	0x0070: "detected module ident list does not match",
	0x0080: "supply voltage too low",
	0x0081: "supply voltage too high",
	0x0082: "temperature too low",
	0x0083: "temperature too high",
	0x00F0: "application controller available",
}

// String returns the code and its standard meaning, e.g.
// "0x001b (sync manager watchdog)".
func (c ALStatusCode) String() string {
	if n, ok := alStatusCodeNames[c]; ok {
		return fmt.Sprintf("%#04x (%s)", uint16(c), n)
	}
	if c >= 0x8000 {
		return fmt.Sprintf("%#04x (vendor specific)", uint16(c))
	}
	return fmt.Sprintf("%#04x (reserved)", uint16(c))
}
