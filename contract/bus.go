package contract

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Bus configures the EtherCAT segment the master drives.
type Bus struct {
	// Interface is the network interface of the segment; "" selects the
	// built-in simulated segment made of Devices (the cycle process then
	// needs an inherited link: ecagent-cycle --link-fd).
	Interface string `json:"interface" koanf:"interface" help:"network interface of the EtherCAT segment, e.g. eth1; empty runs the built-in simulated segment (in a process of its own)"`
	// Devices lists the simulated segment's devices in bus order: model
	// names, paths of SII EEPROM images ending in .bin or devices of ESI
	// files, FILE.xml[:DEVICE][@REVISION]. Only the agent reads it (it
	// starts the simulator), and only when Interface is "".
	Devices []string `json:"-" koanf:"devices" help:"devices of the simulated segment in bus order: model names, paths of SII EEPROM images (*.bin) or devices of ESI files (FILE.xml[:DEVICE][@REVISION]); used only when bus.interface is empty"`
	// ESI lists directories (or files) of ESI device descriptions whose
	// PDO entry names, units and data types the agent gives the process
	// data of the devices found on the bus. Only the agent reads it: the
	// cycle process reads no ESI.
	ESI []string `json:"-" koanf:"esi" help:"directories or files of ESI device descriptions (ETG.2000 XML, e.g. TwinCAT's ESI folder): PDO entry names, units and data types for MQTT, metrics and the toolbox, for any device found whose identity they describe"`
	// ExpectedSlaves is the number of slaves the segment must have; 0
	// accepts whatever is found.
	ExpectedSlaves int `json:"expectedslaves" koanf:"expectedslaves" help:"number of slaves the segment must have; 0 accepts what is found"`
	// Timeout bounds the wait for a non-cyclic frame (scan, configuration,
	// mailbox). It is not tied to the cycle period: slow links and slaves
	// that answer late during bring-up need more than one period.
	Timeout Duration `json:"timeout" koanf:"timeout" help:"how long to wait for a non-cyclic frame (scan, configuration, mailbox) to come back"`
	// StateTimeout bounds one EtherCAT state transition (INIT, PREOP,
	// SAFEOP, OP).
	StateTimeout Duration `json:"statetimeout" koanf:"statetimeout" help:"how long one state transition (INIT, PREOP, SAFEOP, OP) may take"`
	// AlarmCycles raises the bus alarm after this many consecutive cycles
	// with a lost frame or a wrong working counter (and clears it after as
	// many clean ones); 0 disables the alarm.
	AlarmCycles int `json:"alarmcycles" koanf:"alarmcycles" help:"consecutive cycles with a lost frame or a wrong working counter that raise the bus alarm (event, metric, /readyz not ready); as many clean cycles clear it; 0 disables; 0..1000000"`
	// DC configures distributed clocks.
	DC DC `json:"dc" koanf:"dc" help:"distributed clocks: SYNC0/SYNC1 in every slave that supports them, locked to the cycle"`
	// PDO remaps and reassigns PDOs of chosen slaves before SAFEOP. A list
	// of mappings: only the agent's YAML file can set it.
	PDO []SlavePDOs `json:"pdo,omitempty" koanf:"pdo" help:"PDO assignment and mapping per slave, written in PREOP (YAML file only): slave, rxpdos, txpdos"`
}

// Simulated reports whether b is the built-in simulated segment
// (Interface is empty).
func (b Bus) Simulated() bool { return b.Interface == "" }

// DC configures distributed clocks (bus.dc). The master measures the
// propagation delays, picks the first DC-capable slave as the reference
// clock, and steers its own cycle so that its cyclic frame passes the
// reference clock at the start of each DC cycle (one cycle.period long).
// SYNC0 fires Sync0Shift after that instant in every DC slave, and SYNC1,
// if enabled, Sync1 after SYNC0.
type DC struct {
	// Enabled configures distributed clocks at bring-up.
	Enabled bool `json:"enabled" koanf:"enabled" help:"configure distributed clocks: measure propagation delays, pick the first DC slave as reference clock, start SYNC0 in every DC slave"`
	// Sync0Shift is the time from the start of a DC cycle (when the
	// master's frame passes the reference clock) to SYNC0; 0 fires SYNC0
	// as the frame passes.
	Sync0Shift Duration `json:"sync0shift" koanf:"sync0shift" help:"time from the start of each DC cycle (the master steers its cycle so that its frame passes the reference clock then) to SYNC0; at least 0 and less than cycle.period"`
	// Sync1 is the SYNC1 offset after SYNC0; 0 leaves SYNC1 off.
	Sync1 Duration `json:"sync1" koanf:"sync1" help:"SYNC1 fires this long after SYNC0; 0 leaves SYNC1 off; less than cycle.period"`
	// DriftFrames is how many static drift compensation frames (FRMW of
	// the reference clock's system time) are sent before SYNC0 starts; 0
	// sends none (the master's DCConfig.DriftFrames takes -1 for that).
	DriftFrames int `json:"driftframes" koanf:"driftframes" help:"frames that distribute the reference clock's time before SYNC0 starts, so the slaves' clocks converge (static drift compensation); 0 sends none; up to 1000000"`
	// StartDelay is how far in the future the first SYNC0 is placed.
	StartDelay Duration `json:"startdelay" koanf:"startdelay" help:"how far after the configuration the first SYNC0 fires, leaving time to write the start time to every slave; 1ms..2s"`
}

// SlavePDOs is the PDO configuration of one slave (an item of bus.pdo).
type SlavePDOs struct {
	// Slave is the ring position.
	Slave int `json:"slave" koanf:"slave" help:"ring position of the slave, 0 for the first"`
	// RxPDOs are the output PDOs (master to slave), assigned to SM2 in
	// this order; nil keeps the slave's assignment.
	RxPDOs []PDO `json:"rxpdos" koanf:"rxpdos" help:"RxPDOs (outputs) assigned to sync manager 2, in order"`
	// TxPDOs are the input PDOs (slave to master), assigned to SM3 in
	// this order; nil keeps the slave's assignment.
	TxPDOs []PDO `json:"txpdos" koanf:"txpdos" help:"TxPDOs (inputs) assigned to sync manager 3, in order"`
}

// PDO is one PDO: its mapping object and, optionally, its new mapping.
type PDO struct {
	// Index is the PDO's mapping object: 0x1600..0x17FF for an RxPDO,
	// 0x1A00..0x1BFF for a TxPDO.
	Index uint16 `json:"index" koanf:"index" help:"the PDO mapping object, 0x1600..0x17FF (RxPDO) or 0x1A00..0x1BFF (TxPDO)"`
	// Entries is the new mapping; empty assigns the PDO with the mapping
	// the slave has.
	Entries []PDOEntry `json:"entries,omitempty" koanf:"entries" help:"the mapped objects as \"INDEX:SUB/BITS\" in hex, e.g. \"0x6040:00/16\" (\"0x0000:00/8\" is a gap); empty keeps the slave's mapping and only assigns the PDO"`
}

// PDOEntry is one mapped object, written "0x6040:00/16" (in the agent's
// YAML file and in the cycle's JSON alike).
type PDOEntry struct {
	Index    uint16
	SubIndex uint8
	Bits     int
}

// String writes the entry as it is configured: 0x6040:00/16.
func (e PDOEntry) String() string {
	return fmt.Sprintf("0x%04X:%02X/%d", e.Index, e.SubIndex, e.Bits)
}

// MarshalText writes the entry as [PDOEntry.String] does.
func (e PDOEntry) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText parses "INDEX:SUB/BITS": a hex index and sub-index (the
// 0x prefix is optional) and 1 to 64 bits in decimal.
func (e *PDOEntry) UnmarshalText(text []byte) error {
	p, err := ParsePDOEntry(string(text))
	if err != nil {
		return err
	}
	*e = p
	return nil
}

// ParsePDOEntry parses "INDEX:SUB/BITS", e.g. "0x6040:00/16" or
// "60FF:0/32".
func ParsePDOEntry(s string) (PDOEntry, error) {
	const want = `must be INDEX:SUB/BITS with a hex index and sub-index and 1..64 bits, e.g. "0x6040:00/16"`
	obj, bitsText, ok := strings.Cut(strings.TrimSpace(s), "/")
	indexText, subText, ok2 := strings.Cut(obj, ":")
	if !ok || !ok2 {
		return PDOEntry{}, errors.New(want)
	}
	hex := func(t string, size int) (uint64, bool) {
		t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
		v, err := strconv.ParseUint(t, 16, size)
		return v, err == nil && t != ""
	}
	index, okIndex := hex(indexText, 16)
	sub, okSub := hex(subText, 8)
	bits, err := strconv.Atoi(bitsText)
	if !okIndex || !okSub || err != nil {
		return PDOEntry{}, errors.New(want)
	}
	if bits < 1 || bits > 64 {
		return PDOEntry{}, fmt.Errorf("%d bits: an entry has 1..64 bits", bits)
	}
	return PDOEntry{Index: uint16(index), SubIndex: uint8(sub), Bits: bits}, nil
}

// Bounds and defaults of the bus.* keys.
const (
	MinBusTimeout   = 50 * time.Microsecond  // shortest bus.timeout
	MaxBusTimeout   = 10 * time.Second       // longest bus.timeout
	MinStateTimeout = 100 * time.Millisecond // shortest bus.statetimeout
	MaxStateTimeout = 5 * time.Minute        // longest bus.statetimeout
	MaxSlaves       = 65535                  // largest bus.expectedslaves
	MaxRingPosition = MaxSlaves - 1          // largest slave of bus.pdo and drives
	// DefaultAlarmCycles is bus.alarmcycles when not set: 10 bad cycles in
	// a row are a persistent fault, a single lost frame is not.
	DefaultAlarmCycles   = 10
	MaxAlarmCycles       = 1_000_000
	DefaultDCDriftFrames = 15000
	DefaultDCStartDelay  = 100 * time.Millisecond
	MaxDCDriftFrames     = 1_000_000
	MinDCStartDelay      = time.Millisecond
	MaxDCStartDelay      = 2 * time.Second // the master's bound: ESCs with 32-bit system time see 2³¹ ns ahead
	MaxPDOEntries        = 254             // entries of one PDO mapping object (sub-index 0 is a UINT8 count)
)

// PDO mapping object ranges.
const (
	FirstRxPDO, LastRxPDO uint16 = 0x1600, 0x17FF
	FirstTxPDO, LastTxPDO uint16 = 0x1A00, 0x1BFF
)

// defaultBus is the bus.* keys' defaults.
func defaultBus() Bus {
	return Bus{
		// Bring-up frames cross slow links and wait on slaves that are
		// still booting: one cycle period would be far too short.
		Timeout:      Duration(10 * time.Millisecond),
		StateTimeout: Duration(5 * time.Second),
		AlarmCycles:  DefaultAlarmCycles,
		DC:           DC{DriftFrames: DefaultDCDriftFrames, StartDelay: Duration(DefaultDCStartDelay)},
	}
}

func (c Config) busProblems(p *problems) {
	b := c.Bus
	if b.Interface != "" && !ValidInterfaceName(b.Interface) {
		p.add("bus.interface", b.Interface, "must be empty (simulated segment) or a network interface name of at most 15 characters without '/', ':' or spaces")
	}
	if n := b.ExpectedSlaves; n < 0 || n > MaxSlaves {
		p.add("bus.expectedslaves", n, fmt.Sprintf("must be between 0 (accept what is found) and %d", MaxSlaves))
	}
	p.duration("bus.timeout", b.Timeout, MinBusTimeout, MaxBusTimeout)
	p.duration("bus.statetimeout", b.StateTimeout, MinStateTimeout, MaxStateTimeout)
	if n := b.AlarmCycles; n < 0 || n > MaxAlarmCycles {
		p.add("bus.alarmcycles", n, fmt.Sprintf("must be between 0 (no alarm) and %d", MaxAlarmCycles))
	}
	period := c.Cycle.Period
	if s := b.DC.Sync0Shift; s < 0 || s >= period {
		p.add("bus.dc.sync0shift", s, fmt.Sprintf("must be at least 0 and less than cycle.period (%s)", period))
	}
	if s := b.DC.Sync1; s < 0 || s >= period {
		p.add("bus.dc.sync1", s, fmt.Sprintf("must be 0 (SYNC1 off) or an offset after SYNC0 less than cycle.period (%s)", period))
	}
	if n := b.DC.DriftFrames; n < 0 || n > MaxDCDriftFrames {
		p.add("bus.dc.driftframes", n, fmt.Sprintf("must be between 0 and %d", MaxDCDriftFrames))
	}
	p.duration("bus.dc.startdelay", b.DC.StartDelay, MinDCStartDelay, MaxDCStartDelay)
	seen := map[int]int{}
	for i, s := range b.PDO {
		key := fmt.Sprintf("bus.pdo[%d]", i)
		c.slaveProblem(p, key+".slave", s.Slave, seen, i, "bus.pdo")
		p.pdos(key+".rxpdos", s.RxPDOs, FirstRxPDO, LastRxPDO, "an RxPDO")
		p.pdos(key+".txpdos", s.TxPDOs, FirstTxPDO, LastTxPDO, "a TxPDO")
	}
}

// slaveProblem checks a ring position: in range, within the simulated
// segment or bus.expectedslaves, and not configured twice in list.
func (c Config) slaveProblem(p *problems, key string, slave int, seen map[int]int, i int, list string) {
	devices := len(c.Bus.Devices)
	switch {
	case slave < 0 || slave > MaxRingPosition:
		p.add(key, slave, fmt.Sprintf("must be a ring position between 0 and %d", MaxRingPosition))
		return
	case c.Bus.Simulated() && devices > 0 && slave >= devices:
		p.add(key, slave, fmt.Sprintf("no such slave: the simulated segment (bus.devices) has %d devices, at ring positions 0..%d", devices, devices-1))
		return
	case c.Bus.ExpectedSlaves > 0 && slave >= c.Bus.ExpectedSlaves:
		p.add(key, slave, fmt.Sprintf("no such slave: bus.expectedslaves is %d, so ring positions are 0..%d", c.Bus.ExpectedSlaves, c.Bus.ExpectedSlaves-1))
		return
	}
	if j, dup := seen[slave]; dup {
		p.add(key, slave, fmt.Sprintf("slave %d is already configured by %s[%d]", slave, list, j))
		return
	}
	seen[slave] = i
}

// pdos checks the rxpdos or txpdos of one slave: what is "an RxPDO" or
// "a TxPDO".
func (p *problems) pdos(key string, pdos []PDO, first, last uint16, what string) {
	seen := map[uint16]int{}
	for j, o := range pdos {
		ikey := fmt.Sprintf("%s[%d].index", key, j)
		value := fmt.Sprintf("0x%04X", o.Index)
		if k, dup := seen[o.Index]; o.Index < first || o.Index > last {
			p.add(ikey, value, fmt.Sprintf("must be %s mapping object, 0x%04X..0x%04X", what, first, last))
		} else if dup {
			p.add(ikey, value, fmt.Sprintf("is already assigned by %s[%d]", key, k))
		} else {
			seen[o.Index] = j
		}
		if len(o.Entries) > MaxPDOEntries {
			p.add(fmt.Sprintf("%s[%d].entries", key, j), fmt.Sprintf("%d entries", len(o.Entries)),
				fmt.Sprintf("a PDO maps at most %d entries", MaxPDOEntries))
		}
		for k, e := range o.Entries {
			if e.Bits < 1 || e.Bits > 64 {
				p.add(fmt.Sprintf("%s[%d].entries[%d]", key, j, k), e.String(), "an entry has 1..64 bits")
			}
		}
	}
}

// ValidInterfaceName reports whether s is a name the kernel accepts for a
// network interface: at most IFNAMSIZ-1 (15) bytes, no '/' or ':', no
// white space or unprintable character, not "." or "..".
func ValidInterfaceName(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if r == '/' || r == ':' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
