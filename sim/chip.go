package sim

import "github.com/ecagent/ecagent/ethercat/esc"

// chip describes an EtherCAT slave controller as a master sees it through the
// information block at 0x0000 and a few behaviours that differ between
// controller families. The values come from the real captures in
// testdata/real-hw/captures (see chips below).
type chip struct {
	info esc.Info
	// siiControl is the idle value of the EEPROM control/status register
	// 0x0502 (bit 6: 8-byte reads).
	siiControl uint16
	// siiBelowSafeOp is ORed into 0x0502 while the device is in INIT, PREOP
	// or BOOT: the real ET1200-class terminals answer 0x0050 there and 0x0040
	// once in SAFEOP (EL1004 in the SOEM capture); ET1100-class ones always
	// 0x0040. A device spec may narrow it (deviceSpec.siiExtraUntil).
	siiBelowSafeOp uint16
	// dlControl is the power-up value of DL control 0x0100–0x0103, what a
	// master reads before writing it (0x0102 bits 0–2: RX FIFO size 7,
	// ET1100 datasheet section II; the EK1100 answers 0xC7 there).
	dlControl [4]byte
	// sii is how long the EEPROM interface takes for its commands.
	sii siiTiming
	// ownConfig says the controller takes PDI control 0x0140 and ESC
	// configuration 0x0141 from config, its own configuration, rather
	// than from SII word 0 (an FPGA IP core or a controller configured
	// by its host, as the AKD's).
	ownConfig bool
	config    [2]byte
	// dcAlways says the system time unit (0x0910–0x09FF) exists whatever the
	// ESC configuration; otherwise it exists only when the SII's ESC
	// configuration byte enables the SYNC or LATCH unit (bits 2 and 3).
	dcAlways bool
}

// The controller families of the modelled devices. Features 0x00FC and
// 0x01FC, the SII control values, the FMMU and SyncManager counts (from the
// masters' broadcast clears of 0x0600–0x06FF and 0x0800–0x087F, whose
// working counters count the devices that have each block) and the ESC type
// bits (a broadcast read of 0x0000 ORs to 0x13, revision 0x01) are what the
// real devices answered.
var (
	// chipET1100 is the EK1100's controller: 8 FMMUs, 8 SyncManagers, 8 KiB.
	chipET1100 = chip{
		info: esc.Info{Type: 0x11, Revision: 0x00, Build: 0x0003, FMMUs: 8, SyncManagers: 8,
			RAMSizeKiB: 8, PortDescriptor: 0x3B, Features: 0x00FC},
		siiControl: 0x0040,
		sii:        siiI2C,
		dlControl:  [4]byte{2: 0xC7},
		dcAlways:   true,
	}
	// chipET1200 is the controller of the small terminals (EL1004, EL2828,
	// EL3004): 3 FMMUs, 4 SyncManagers, 1 KiB, DC only when configured.
	chipET1200 = chip{
		info: esc.Info{Type: 0x12, Revision: 0x01, Build: 0x0001, FMMUs: 3, SyncManagers: 4,
			RAMSizeKiB: 1, PortDescriptor: 0x4A, Features: 0x01FC},
		siiControl:     0x0040,
		siiBelowSafeOp: 0x0010,
		sii:            siiI2C,
		// DL control powers up as the ET1100's (the real EL1004: 0xC7).
		dlControl: [4]byte{2: 0xC7},
	}
	// chipEL2889 is the EL2889's controller: ET1100 features and DC, but
	// only 3 FMMUs and 4 SyncManagers.
	chipEL2889 = chip{
		info: esc.Info{Type: 0x11, Revision: 0x00, Build: 0x0003, FMMUs: 3, SyncManagers: 4,
			RAMSizeKiB: 8, PortDescriptor: 0x4A, Features: 0x00FC},
		siiControl: 0x0040,
		sii:        siiI2C,
		dcAlways:   true,
	}
	// chipEK1914 is the EK1914's controller: ET1100 class with an
	// application controller, and no DC system time in the capture.
	chipEK1914 = chip{
		info: esc.Info{Type: 0x11, Revision: 0x00, Build: 0x0003, FMMUs: 8, SyncManagers: 8,
			RAMSizeKiB: 8, PortDescriptor: 0x3B, Features: 0x00FC},
		siiControl: 0x0040,
		sii:        siiI2C,
	}
)

// ramBytes returns the size of the process RAM that follows 0x1000.
func (c chip) ramBytes() int { return int(c.info.RAMSizeKiB) * 1024 }

// Access flags of one register byte, as seen from EtherCAT.
const (
	accRead  uint8 = 1 << iota // the byte exists and can be read
	accWrite                   // an EtherCAT write changes it (or triggers an action)
)

// registerSpan is a range of registers with the same EtherCAT access.
type registerSpan struct {
	lo, hi uint16 // first and last byte
	acc    uint8
}

// baseRegisters are the registers every modelled controller has. Ranges not
// listed are reserved: reads and writes leave the datagram alone and do not
// count in the working counter.
var baseRegisters = []registerSpan{
	{0x0000, 0x0009, accRead},            // information block
	{0x0010, 0x0011, accRead | accWrite}, // configured station address
	{0x0012, 0x0013, accRead},            // station alias (from the SII, PDI writable only)
	{0x0020, 0x0021, accRead | accWrite}, // register write enable/protection
	{0x0030, 0x0031, accRead | accWrite}, // ESC write enable/protection
	{0x0040, 0x0040, accRead | accWrite}, // ESC reset ECAT
	{0x0041, 0x0041, accRead},            // ESC reset PDI
	{0x0100, 0x0103, accRead | accWrite}, // DL control
	{0x0108, 0x0109, accRead | accWrite}, // physical read/write offset
	{0x0110, 0x0111, accRead},            // DL status
	{0x0120, 0x0121, accRead | accWrite}, // AL control
	{0x0130, 0x0131, accRead},            // AL status
	{0x0134, 0x0135, accRead},            // AL status code
	{0x0138, 0x0139, accRead | accWrite}, // LED override
	{0x0140, 0x0141, accRead},            // PDI control, ESC configuration
	{0x014E, 0x014F, accRead},            // PDI information
	{0x0150, 0x0153, accRead},            // PDI configuration
	{0x0200, 0x0201, accRead | accWrite}, // ECAT event mask
	{0x0204, 0x0207, accRead},            // AL event mask (PDI writable)
	{0x0210, 0x0211, accRead},            // ECAT event request
	{0x0220, 0x0223, accRead},            // AL event request
	{0x0300, 0x030D, accRead | accWrite}, // error counters: a write clears them
	{0x030E, 0x030F, accRead},            // PDI error code
	{0x0310, 0x0313, accRead | accWrite}, // lost link counters
	{0x0400, 0x0401, accRead | accWrite}, // watchdog divider
	{0x0410, 0x0411, accRead | accWrite}, // watchdog time PDI
	{0x0420, 0x0421, accRead | accWrite}, // watchdog time process data
	{0x0440, 0x0441, accRead},            // watchdog status process data
	{0x0442, 0x0443, accRead | accWrite}, // watchdog counters
	{0x0500, 0x0500, accRead | accWrite}, // SII configuration
	{0x0501, 0x0501, accRead},            // SII PDI access state
	{0x0502, 0x050F, accRead | accWrite}, // SII control, address, data
	{0x0900, 0x0900, accRead | accWrite}, // receive time port 0; a write latches all ports
	{0x0901, 0x090F, accRead},            // receive times ports 0–3
	{0x0F00, 0x0F03, accRead | accWrite}, // digital output data
	{0x0F10, 0x0F17, accRead | accWrite}, // general purpose outputs
	{0x0F18, 0x0F1F, accRead},            // general purpose inputs
	{0x0F80, 0x0FFF, accRead | accWrite}, // user RAM
}

// dcRegisters are the registers of the system time, SYNC and LATCH units.
var dcRegisters = []registerSpan{
	{0x0910, 0x0917, accRead | accWrite}, // system time (a write feeds the difference)
	{0x0918, 0x091F, accRead},            // receive time of the processing unit
	{0x0920, 0x092B, accRead | accWrite}, // system time offset, delay
	{0x092C, 0x092F, accRead},            // system time difference
	{0x0930, 0x0931, accRead | accWrite}, // speed counter start
	{0x0932, 0x0933, accRead},            // speed counter difference
	{0x0934, 0x0935, accRead | accWrite}, // filter depths
	{0x0980, 0x0981, accRead | accWrite}, // cyclic unit control, activation
	{0x0982, 0x098F, accRead},            // pulse length, activation and SYNC status
	{0x0990, 0x0997, accRead | accWrite}, // start time of cyclic operation
	{0x0998, 0x099F, accRead},            // next SYNC1 pulse
	{0x09A0, 0x09A9, accRead | accWrite}, // SYNC0/1 cycle times, latch control
	{0x09AE, 0x09AF, accRead},            // latch status
	{0x09B0, 0x09CF, accRead},            // latch times
	{0x09F0, 0x09FF, accRead},            // buffer change event times
}

// accessMap tells for each register byte 0x0000–0x0FFF how EtherCAT may
// access it.
type accessMap [0x1000]uint8

// newAccessMap builds the map of a controller with fmmus FMMUs, sms
// SyncManagers and, when dc is set, the DC units.
func newAccessMap(fmmus, sms int, dc bool) *accessMap {
	m := new(accessMap)
	set := func(spans []registerSpan) {
		for _, s := range spans {
			for a := int(s.lo); a <= int(s.hi); a++ {
				m[a] = s.acc
			}
		}
	}
	set(baseRegisters)
	if dc {
		set(dcRegisters)
	}
	for i := range fmmus {
		base := int(esc.RegFMMU(i))
		for a := base; a < base+13; a++ {
			m[a] = accRead | accWrite
		}
		for a := base + 13; a < base+esc.FMMULen; a++ {
			m[a] = accRead
		}
	}
	for i := range sms {
		base := int(esc.RegSyncManager(i))
		for a := base; a < base+esc.SyncManagerLen; a++ {
			m[a] = accRead | accWrite
		}
		m[base+5] = accRead // status
		m[base+7] = accRead // PDI control
	}
	return m
}
