package esi

// Protocols is a set of mailbox protocols, with the bit values of the SII
// (ETG.1000.6 Table 18), so that a set converts to the SII word as is.
type Protocols uint16

// The mailbox protocols.
const (
	ProtocolAoE Protocols = 0x01
	ProtocolEoE Protocols = 0x02
	ProtocolCoE Protocols = 0x04
	ProtocolFoE Protocols = 0x08
	ProtocolSoE Protocols = 0x10
	ProtocolVoE Protocols = 0x20
)

// Mailbox is a device's Mailbox element.
type Mailbox struct {
	DataLinkLayer bool      // the device supports the mailbox data link layer (repeat, counter)
	RealTimeMode  bool      // @RealTimeMode
	Protocols     Protocols // the protocols the device names
	CoE           *CoE      // nil without CoE
	EoE           *EoE      // nil without EoE
	SoE           *SoE      // nil without SoE
}

// CoE is what the device says of its CANopen over EtherCAT.
type CoE struct {
	SdoInfo        bool // SDO information service
	PdoAssign      bool // the PDO assignment (0x1C1x) can be written
	PdoConfig      bool // the PDO mapping (0x16xx, 0x1Axx) can be written
	PdoUpload      bool // the master should read the PDO configuration from the device
	CompleteAccess bool // SDO complete access
	SegmentedSdo   bool // segmented SDO transfer
	DiagHistory    bool // the diagnosis history object 0x10F3
	// InitCmds are the SDO writes the device asks a master to make at the
	// transitions they name.
	InitCmds []CoEInitCmd
}

// CoEInitCmd is one SDO write a device description asks for.
type CoEInitCmd struct {
	Line           int
	Transitions    []string // IP, PS, SO, ...
	Index          uint16
	SubIndex       uint8
	Data           []byte
	Comment        string
	CompleteAccess bool
	Fixed          bool // a configuration tool must not change it
}

// EoE is what the device says of its Ethernet over EtherCAT.
type EoE struct {
	IP        bool // the device takes an IP address
	MAC       bool // the device takes a MAC address
	TimeStamp bool
}

// SoE is what the device says of its Servo profile over EtherCAT.
type SoE struct {
	ChannelCount uint8 // drives behind the device; 0 when the file does not say
}

// DC is a device's Dc element: the distributed-clock operation modes it
// offers, in file order (the first is usually the default).
type DC struct {
	OpModes []OpMode
}

// OpMode is one DC operation mode: how to set up the SYNC signals.
type OpMode struct {
	Name           string // e.g. DcSync, DcOff, SM2 synchron
	Desc           string
	AssignActivate uint16 // the value for register 0x0980 (0: DC not used)
	CycleTimeSync0 SyncTime
	ShiftTimeSync0 SyncTime
	CycleTimeSync1 SyncTime
	ShiftTimeSync1 SyncTime
	// SyncManagers are the PDO assignments the mode asks for (OpMode/Sm),
	// when it asks for any.
	SyncManagers []OpModeSM
}

// SyncTime is a SYNC cycle or shift time: a value in ns, and a factor of
// the master's cycle time the tool should use instead when it is set.
type SyncTime struct {
	Value     int64 // ns
	Factor    int32
	HasFactor bool
	Input     bool // ShiftTimeSync0@Input: the shift refers to the inputs' latch
}

// OpModeSM is the PDO assignment of one sync manager in an operation mode.
type OpModeSM struct {
	No   uint8 // the SM
	PDOs []uint16
}

// EEPROM is a device's Eeprom element: what a tool writes to the SII, as
// its first words (ConfigData, BootStrap) or as a whole image (Data).
type EEPROM struct {
	ByteSize    uint32 // the EEPROM's size in bytes
	ConfigData  []byte // SII words 0x00… (PDI control, configuration, …), as stored
	BootStrap   []byte // SII words 0x14–0x17: the bootstrap mailbox offsets and sizes
	Data        []byte // the whole image, when the file gives one instead
	AssignToPdi bool   // the PDI owns the EEPROM
	Categories  []Category
}

// Category is a vendor SII category the file gives (Eeprom/Category).
type Category struct {
	Type uint16
	Data []byte
}
