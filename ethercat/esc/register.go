package esc

import "fmt"

// Register is an address in the ESC's physical memory (registers below
// 0x1000, process data RAM above).
type Register uint16

// ESC registers used by the master and emulated by the simulator.
const (
	RegType              Register = 0x0000 // ESC type (1 byte)
	RegRevision          Register = 0x0001 // ESC revision (1 byte)
	RegBuild             Register = 0x0002 // ESC build (2 bytes)
	RegFMMUCount         Register = 0x0004 // FMMUs supported (1 byte)
	RegSyncManagerCount  Register = 0x0005 // SyncManagers supported (1 byte)
	RegRAMSize           Register = 0x0006 // process data RAM size in KiB (1 byte)
	RegPortDescriptor    Register = 0x0007 // port configuration (1 byte)
	RegFeatures          Register = 0x0008 // ESC features supported (2 bytes)
	RegStationAddress    Register = 0x0010 // configured station address (2 bytes)
	RegStationAlias      Register = 0x0012 // configured station alias (2 bytes)
	RegWriteEnable       Register = 0x0020 // register write enable
	RegWriteProtect      Register = 0x0021 // register write protection
	RegESCReset          Register = 0x0040 // ESC reset ECAT
	RegDLControl         Register = 0x0100 // DL control (4 bytes)
	RegDLStatus          Register = 0x0110 // DL status (2 bytes)
	RegALControl         Register = 0x0120 // AL control (2 bytes)
	RegALStatus          Register = 0x0130 // AL status (2 bytes)
	RegALStatusCode      Register = 0x0134 // AL status code (2 bytes)
	RegRunLEDOverride    Register = 0x0138 // RUN LED override
	RegErrLEDOverride    Register = 0x0139 // ERR LED override
	RegPDIControl        Register = 0x0140 // PDI control
	RegESCConfig         Register = 0x0141 // ESC configuration
	RegPDIConfig         Register = 0x0150 // PDI configuration
	RegECATEventMask     Register = 0x0200 // ECAT event mask (2 bytes)
	RegALEventMask       Register = 0x0204 // AL event mask (4 bytes)
	RegECATEventRequest  Register = 0x0210 // ECAT event request (2 bytes)
	RegALEventRequest    Register = 0x0220 // AL event request (4 bytes)
	RegRxErrorCounter    Register = 0x0300 // invalid frame and RX error counters, 2 bytes per port
	RegFwdRxErrorCounter Register = 0x0308 // forwarded RX error counters, 1 byte per port
	RegProcessingError   Register = 0x030C // ECAT processing unit error counter
	RegPDIError          Register = 0x030D // PDI error counter
	RegLostLinkCounter   Register = 0x0310 // lost link counters, 1 byte per port
	RegWatchdogDivider   Register = 0x0400 // watchdog divider (2 bytes)
	RegWatchdogPDI       Register = 0x0410 // watchdog time PDI (2 bytes)
	RegWatchdogPD        Register = 0x0420 // watchdog time process data (2 bytes)
	RegWatchdogStatusPD  Register = 0x0440 // watchdog status process data
	RegWatchdogCounterPD Register = 0x0442 // watchdog counter process data
	RegSIIConfig         Register = 0x0500 // SII EEPROM configuration (1 byte)
	RegSIIAccess         Register = 0x0501 // SII EEPROM PDI access state (1 byte)
	RegSIIControl        Register = 0x0502 // SII EEPROM control/status (2 bytes)
	RegSIIAddress        Register = 0x0504 // SII EEPROM word address (4 bytes)
	RegSIIData           Register = 0x0508 // SII EEPROM data (4 or 8 bytes)
	RegFMMU0             Register = 0x0600 // first FMMU; RegFMMU(i) for the others
	RegSyncManager0      Register = 0x0800 // first SyncManager; RegSyncManager(i) for the others
	RegDCRecvTimePort0   Register = 0x0900 // DC receive time port 0 (4 bytes); a write latches all ports
	RegDCRecvTimePort1   Register = 0x0904 // DC receive time port 1 (4 bytes)
	RegDCRecvTimePort2   Register = 0x0908 // DC receive time port 2 (4 bytes)
	RegDCRecvTimePort3   Register = 0x090C // DC receive time port 3 (4 bytes)
	RegDCSystemTime      Register = 0x0910 // DC system time (8 bytes)
	RegDCRecvTimeECAT    Register = 0x0918 // DC receive time of the processing unit (8 bytes)
	RegDCSystemOffset    Register = 0x0920 // DC system time offset (8 bytes)
	RegDCSystemDelay     Register = 0x0928 // DC system time delay (4 bytes)
	RegDCSystemDiff      Register = 0x092C // DC system time difference (4 bytes)
	RegDCSpeedStart      Register = 0x0930 // DC speed counter start (2 bytes)
	RegDCSpeedDiff       Register = 0x0932 // DC speed counter difference (2 bytes)
	RegDCFilterDepth     Register = 0x0934 // DC system time difference filter depth
	RegDCSpeedFilter     Register = 0x0935 // DC speed counter filter depth
	RegDCCyclicControl   Register = 0x0980 // DC cyclic unit control
	RegDCActivation      Register = 0x0981 // DC SYNC activation
	RegDCPulseLength     Register = 0x0982 // DC SYNC pulse length (2 bytes)
	RegDCActivationState Register = 0x0984 // DC activation status
	RegDCSync0Status     Register = 0x098E // DC SYNC0 status
	RegDCSync1Status     Register = 0x098F // DC SYNC1 status
	RegDCStartTime       Register = 0x0990 // DC start time of cyclic operation (8 bytes)
	RegDCNextSync1       Register = 0x0998 // DC next SYNC1 pulse (8 bytes)
	RegDCSync0Cycle      Register = 0x09A0 // DC SYNC0 cycle time (4 bytes)
	RegDCSync1Cycle      Register = 0x09A4 // DC SYNC1 cycle time (4 bytes)
	RegDigitalOutput     Register = 0x0F00 // digital I/O output data (4 bytes)
	RegProcessRAM        Register = 0x1000 // start of process data RAM
)

// RegFMMU returns the address of FMMU i's register block.
func RegFMMU(i int) Register { return RegFMMU0 + Register(i*FMMULen) }

// RegSyncManager returns the address of SyncManager i's register block.
func RegSyncManager(i int) Register { return RegSyncManager0 + Register(i*SyncManagerLen) }

var registerNames = map[Register]string{
	RegType: "Type", RegRevision: "Revision", RegBuild: "Build", RegFMMUCount: "FMMUCount",
	RegSyncManagerCount: "SyncManagerCount", RegRAMSize: "RAMSize", RegPortDescriptor: "PortDescriptor",
	RegFeatures: "Features", RegStationAddress: "StationAddress", RegStationAlias: "StationAlias",
	RegWriteEnable: "WriteEnable", RegWriteProtect: "WriteProtect", RegESCReset: "ESCReset",
	RegDLControl: "DLControl", RegDLStatus: "DLStatus", RegALControl: "ALControl", RegALStatus: "ALStatus",
	RegALStatusCode: "ALStatusCode", RegRunLEDOverride: "RunLEDOverride", RegErrLEDOverride: "ErrLEDOverride",
	RegPDIControl: "PDIControl", RegESCConfig: "ESCConfig", RegPDIConfig: "PDIConfig",
	RegECATEventMask: "ECATEventMask", RegALEventMask: "ALEventMask", RegECATEventRequest: "ECATEventRequest",
	RegALEventRequest: "ALEventRequest", RegRxErrorCounter: "RxErrorCounter", RegFwdRxErrorCounter: "FwdRxErrorCounter",
	RegProcessingError: "ProcessingError", RegPDIError: "PDIError", RegLostLinkCounter: "LostLinkCounter",
	RegWatchdogDivider: "WatchdogDivider", RegWatchdogPDI: "WatchdogPDI", RegWatchdogPD: "WatchdogPD",
	RegWatchdogStatusPD: "WatchdogStatusPD", RegWatchdogCounterPD: "WatchdogCounterPD",
	RegSIIConfig: "SIIConfig", RegSIIAccess: "SIIAccess", RegSIIControl: "SIIControl", RegSIIAddress: "SIIAddress",
	RegSIIData: "SIIData", RegDCRecvTimePort0: "DCRecvTimePort0", RegDCRecvTimePort1: "DCRecvTimePort1",
	RegDCRecvTimePort2: "DCRecvTimePort2", RegDCRecvTimePort3: "DCRecvTimePort3", RegDCSystemTime: "DCSystemTime",
	RegDCRecvTimeECAT: "DCRecvTimeECAT", RegDCSystemOffset: "DCSystemOffset", RegDCSystemDelay: "DCSystemDelay",
	RegDCSystemDiff: "DCSystemDiff", RegDCSpeedStart: "DCSpeedStart", RegDCSpeedDiff: "DCSpeedDiff",
	RegDCFilterDepth: "DCFilterDepth", RegDCSpeedFilter: "DCSpeedFilter", RegDCCyclicControl: "DCCyclicControl",
	RegDCActivation: "DCActivation", RegDCPulseLength: "DCPulseLength", RegDCActivationState: "DCActivationState",
	RegDCSync0Status: "DCSync0Status", RegDCSync1Status: "DCSync1Status", RegDCStartTime: "DCStartTime",
	RegDCNextSync1: "DCNextSync1", RegDCSync0Cycle: "DCSync0Cycle", RegDCSync1Cycle: "DCSync1Cycle",
	RegDigitalOutput: "DigitalOutput", RegProcessRAM: "ProcessRAM",
}

// String names the register, its block (FMMU2, SyncManager1) or its address.
func (r Register) String() string {
	if n, ok := registerNames[r]; ok {
		return n
	}
	switch {
	case r >= RegFMMU0 && r < RegFMMU0+16*FMMULen:
		i := int(r-RegFMMU0) / FMMULen
		if off := int(r-RegFMMU0) % FMMULen; off != 0 {
			return fmt.Sprintf("FMMU%d+%d", i, off)
		}
		return fmt.Sprintf("FMMU%d", i)
	case r >= RegSyncManager0 && r < RegSyncManager0+16*SyncManagerLen:
		i := int(r-RegSyncManager0) / SyncManagerLen
		if off := int(r-RegSyncManager0) % SyncManagerLen; off != 0 {
			return fmt.Sprintf("SyncManager%d+%d", i, off)
		}
		return fmt.Sprintf("SyncManager%d", i)
	}
	return fmt.Sprintf("Register(%#04x)", uint16(r))
}
