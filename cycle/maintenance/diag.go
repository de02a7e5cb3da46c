package maintenance

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
)

// OpDiag reads one slave's diagnosis registers (DiagResult): AL status
// and code, DL status, error and lost-link counters, watchdogs, and the
// SyncManagers' and FMMUs' state. It only reads.
const OpDiag Op = "diag"

// DiagResult is one slave's diagnosis, as its registers say now.
type DiagResult struct {
	Slave int    `json:"slave"`
	Label string `json:"label"`
	SlaveStatus
	// Ports are the DL status (0x0110) and the error counters of ports
	// 0 to 3 (0x0300–0x0313).
	Ports []DiagPort `json:"ports"`
	// Processing and PDI are the processing unit and PDI error counters
	// (0x030C, 0x030D).
	Processing uint8 `json:"processing_errors"`
	PDI        uint8 `json:"pdi_errors"`
	// Watchdog is the watchdogs' setting and state (0x0400–0x0443).
	Watchdog DiagWatchdog `json:"watchdog"`
	// SyncManagers and FMMUs are the ESC's blocks that are configured.
	SyncManagers []DiagSM   `json:"sync_managers"`
	FMMUs        []DiagFMMU `json:"fmmus"`
	// Unreadable names the register blocks that could not be read.
	Unreadable []string `json:"unreadable,omitempty"`
}

// DiagPort is one port of a slave.
type DiagPort struct {
	Port         int    `json:"port"`
	Kind         string `json:"kind"`
	Link         bool   `json:"link"`
	Loop         bool   `json:"loop"`
	Comm         bool   `json:"comm"`
	InvalidFrame uint8  `json:"invalid_frame"`
	RXError      uint8  `json:"rx_error"`
	ForwardedRX  uint8  `json:"forwarded_rx"`
	LostLink     uint8  `json:"lost_link"`
}

// DiagWatchdog is the watchdogs of a slave.
type DiagWatchdog struct {
	// Divider is 0x0400 (25 MHz clock cycles per watchdog tick, minus 2).
	Divider uint16 `json:"divider"`
	// PDIMillis and ProcessDataMillis are the PDI and process data
	// watchdog times in ms (0: off).
	PDIMillis         float64 `json:"pdi_ms"`
	ProcessDataMillis float64 `json:"process_data_ms"`
	// ProcessDataOK is 0x0440 bit 0: the process data watchdog has not
	// expired.
	ProcessDataOK bool `json:"process_data_ok"`
	// ProcessDataExpired and PDIExpired count expirations (0x0442,
	// 0x0443).
	ProcessDataExpired uint8 `json:"process_data_expired"`
	PDIExpired         uint8 `json:"pdi_expired"`
}

// DiagSM is one SyncManager.
type DiagSM struct {
	Index    int    `json:"index"`
	Start    uint16 `json:"start"`
	Length   uint16 `json:"length"`
	Control  uint8  `json:"control"`
	Status   uint8  `json:"status"`
	Enabled  bool   `json:"enabled"`
	Mode     string `json:"mode"`
	Dir      string `json:"direction"`
	Watchdog bool   `json:"watchdog"`
}

// DiagFMMU is one FMMU.
type DiagFMMU struct {
	Index        int    `json:"index"`
	LogicalStart uint32 `json:"logical_start"`
	Length       uint16 `json:"length"`
	Physical     uint16 `json:"physical_start"`
	Type         string `json:"type"`
	Active       bool   `json:"active"`
}

func (h *Handler) diag(ctx context.Context, req Request) (*DiagResult, error) {
	s, err := h.slave(req.Slave)
	if err != nil {
		return nil, err
	}
	st, err := h.status(ctx, s)
	if err != nil {
		return nil, err
	}
	res := &DiagResult{Slave: req.Slave, Label: s.String(), SlaveStatus: st, Ports: []DiagPort{},
		SyncManagers: []DiagSM{}, FMMUs: []DiagFMMU{}}
	bus := h.m.Bus()
	read := func(what string, reg uint16, b []byte) bool {
		if err := bus.FPRD(ctx, s.StationAddress, reg, b); err != nil {
			if ctx.Err() == nil {
				res.Unreadable = append(res.Unreadable, fmt.Sprintf("%s (%#04x): %v", what, reg, err))
			}
			return false
		}
		return true
	}
	diagPorts(res, s, read)
	diagWatchdog(res, read)
	var info [2]byte // 0x0004 FMMUs, 0x0005 SyncManagers
	if !read("ESC information", uint16(esc.RegFMMUCount), info[:]) {
		return res, nil
	}
	diagSyncManagers(res, int(min(info[1], 16)), read)
	diagFMMUs(res, int(min(info[0], 16)), read)
	return res, nil
}

// diagRead reads a register of the slave diagnosed into b, noting in the
// result what it could not read.
type diagRead func(what string, reg uint16, b []byte) bool

// diagPorts fills in the ports' link states and error counters, and the
// processing and PDI error counters.
func diagPorts(res *DiagResult, s *master.Slave, read diagRead) {
	var dl [2]byte
	var counters [0x14]byte
	haveDL := read("DL status", uint16(esc.RegDLStatus), dl[:])
	haveCounters := read("error counters", uint16(esc.RegRxErrorCounter), counters[:])
	d := esc.DecodeDLStatus(dl[:])
	for p := range esc.PortCount {
		kind := portKind(s.ESC.Port(p))
		if kind == "-" {
			continue
		}
		port := DiagPort{Port: p, Kind: kind}
		if haveDL {
			port.Link, port.Loop, port.Comm = d.Ports[p].Link, d.Ports[p].Loop, d.Ports[p].Communication
		}
		if haveCounters {
			port.InvalidFrame, port.RXError = counters[2*p], counters[2*p+1]
			port.ForwardedRX, port.LostLink = counters[0x08+p], counters[0x10+p]
		}
		res.Ports = append(res.Ports, port)
	}
	res.Processing, res.PDI = counters[0x0C], counters[0x0D]
}

// diagWatchdog fills in the watchdogs' times, status and counters.
func diagWatchdog(res *DiagResult, read diagRead) {
	var div, wdPDI, wdPD [2]byte
	var wdState [4]byte
	if read("watchdog divider", uint16(esc.RegWatchdogDivider), div[:]) {
		res.Watchdog.Divider = binary.LittleEndian.Uint16(div[:])
	}
	tick := (float64(res.Watchdog.Divider) + 2) / 25e3 // ms per watchdog tick
	if read("PDI watchdog", uint16(esc.RegWatchdogPDI), wdPDI[:]) {
		res.Watchdog.PDIMillis = float64(binary.LittleEndian.Uint16(wdPDI[:])) * tick
	}
	if read("process data watchdog", uint16(esc.RegWatchdogPD), wdPD[:]) {
		res.Watchdog.ProcessDataMillis = float64(binary.LittleEndian.Uint16(wdPD[:])) * tick
	}
	if read("watchdog status and counters", uint16(esc.RegWatchdogStatusPD), wdState[:]) {
		res.Watchdog.ProcessDataOK = wdState[0]&1 != 0
		res.Watchdog.ProcessDataExpired, res.Watchdog.PDIExpired = wdState[2], wdState[3]
	}
}

// diagSyncManagers adds the first n SyncManagers that are configured.
func diagSyncManagers(res *DiagResult, n int, read diagRead) {
	for i := range n {
		var b [esc.SyncManagerLen]byte
		if !read(fmt.Sprintf("SyncManager %d", i), uint16(esc.RegSyncManager(i)), b[:]) {
			continue
		}
		sm := esc.DecodeSyncManager(b[:])
		if sm.Length == 0 && sm.Activate&1 == 0 {
			continue // not configured
		}
		mode := "buffered"
		if sm.Control&0x03 == 0x02 {
			mode = "mailbox"
		}
		dir := "read by the master"
		if sm.Control&0x0C == 0x04 {
			dir = "written by the master"
		}
		res.SyncManagers = append(res.SyncManagers, DiagSM{Index: i, Start: sm.PhysicalStart, Length: sm.Length,
			Control: sm.Control, Status: sm.Status, Enabled: sm.Activate&1 != 0, Mode: mode, Dir: dir,
			Watchdog: sm.Control&0x40 != 0})
	}
}

// diagFMMUs adds the first n FMMUs that are configured.
func diagFMMUs(res *DiagResult, n int, read diagRead) {
	for i := range n {
		var b [esc.FMMULen]byte
		if !read(fmt.Sprintf("FMMU %d", i), uint16(esc.RegFMMU(i)), b[:]) {
			continue
		}
		f := esc.DecodeFMMU(b[:])
		if f.Length == 0 && !f.Active {
			continue
		}
		typ := map[uint8]string{1: "read", 2: "write", 3: "read/write"}[f.Type]
		if typ == "" {
			typ = "none"
		}
		res.FMMUs = append(res.FMMUs, DiagFMMU{Index: i, LogicalStart: f.LogicalStart, Length: f.Length,
			Physical: f.PhysicalStart, Type: typ, Active: f.Active})
	}
}
