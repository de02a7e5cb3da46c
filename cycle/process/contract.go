package process

import (
	"io"
	"io/fs"

	"github.com/ecagent/ecagent/contract"
)

// Transitional names for what moved to package contract, the seam
// between the two processes (issue 31): they keep the files other work is
// changing untouched until it is merged, and go once every user names
// the contract.
type (
	Config          = contract.Config
	Bus             = contract.Bus
	DC              = contract.DC
	SlavePDOs       = contract.SlavePDOs
	PDO             = contract.PDO
	PDOEntry        = contract.PDOEntry
	Cycle           = contract.Cycle
	Log             = contract.Log
	Drive           = contract.Drive
	Target          = contract.Target
	Duration        = contract.Duration
	FieldError      = contract.FieldError
	BusInfo         = contract.BusInfo
	MaintenanceInfo = contract.MaintenanceInfo
	DCInfo          = contract.DCInfo
	SlaveInfo       = contract.SlaveInfo
	SignalInfo      = contract.SignalInfo
	RTSetting       = contract.RTSetting
	BringUpFailure  = contract.BringUpFailure
)

// Transitional constants; see the types above.
const (
	ExchangePipelined     = contract.ExchangePipelined
	ExchangeWait          = contract.ExchangeWait
	DefaultSHM            = contract.DefaultSHM
	MaxConfigSize         = contract.MaxConfigSize
	ExitBusMismatch       = contract.ExitBusMismatch
	ReasonLink            = contract.ReasonLink
	ReasonNoAnswer        = contract.ReasonNoAnswer
	ReasonNotAsConfigured = contract.ReasonNotAsConfigured
	ReasonFailed          = contract.ReasonFailed
	MinPeriod             = contract.MinPeriod
	MaxPeriod             = contract.MaxPeriod
	MaxPriority           = contract.MaxPriority
	MinBusTimeout         = contract.MinBusTimeout
	MaxBusTimeout         = contract.MaxBusTimeout
	MinStateTimeout       = contract.MinStateTimeout
	MaxStateTimeout       = contract.MaxStateTimeout
	MaxSlaves             = contract.MaxSlaves
	DefaultAlarmCycles    = contract.DefaultAlarmCycles
	MaxAlarmCycles        = contract.MaxAlarmCycles
	DefaultDCDriftFrames  = contract.DefaultDCDriftFrames
	DefaultDCStartDelay   = contract.DefaultDCStartDelay
	MaxDCDriftFrames      = contract.MaxDCDriftFrames
	MinDCStartDelay       = contract.MinDCStartDelay
	MaxDCStartDelay       = contract.MaxDCStartDelay
	MaxSettleCycles       = contract.MaxSettleCycles
	MaxRingPosition       = contract.MaxRingPosition
	MaxPDOEntries         = contract.MaxPDOEntries
	FirstRxPDO            = contract.FirstRxPDO
	LastRxPDO             = contract.LastRxPDO
	FirstTxPDO            = contract.FirstTxPDO
	LastTxPDO             = contract.LastTxPDO
)

// Default is contract.Default (transitional).
func Default() Config { return contract.Default() }

// Load is contract.Load (transitional).
func Load(path string) (Config, error) { return contract.Load(path) }

// Read is contract.Read (transitional).
func Read(r io.Reader, name string) (Config, error) { return contract.Read(r, name) }

// Parse is contract.Parse (transitional).
func Parse(b []byte) (Config, error) { return contract.Parse(b) }

// BusInfoPath is contract.BusInfoPath (transitional).
func BusInfoPath(shmPath string) string { return contract.BusInfoPath(shmPath) }

// ReadBusInfo is contract.ReadBusInfo (transitional).
func ReadBusInfo(path string) (*BusInfo, error) { return contract.ReadBusInfo(path) }

// CheckOwnFile is contract.CheckOwnFile (transitional).
func CheckOwnFile(path string) error { return contract.CheckOwnFile(path) }

// CheckOwnFileInfo is contract.CheckOwnFileInfo (transitional).
func CheckOwnFileInfo(path string, fi fs.FileInfo) error { return contract.CheckOwnFileInfo(path, fi) }
