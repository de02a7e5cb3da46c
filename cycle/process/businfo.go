package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/master"
)

// BusInfo describes the bus a cycle process brought up. The cycle process
// writes it once, before cyclic operation, next to the shared-memory
// segment (BusInfoPath); an agent that attaches, also after a restart,
// reads it to name slaves and signals.
type BusInfo struct {
	CyclePID    int           `json:"cycle_pid"`
	Period      time.Duration `json:"period_ns"`
	ExpectedWKC uint16        `json:"expected_wkc"`
	Frames      int           `json:"frames"`
	OutputBytes int           `json:"output_bytes"`
	InputBytes  int           `json:"input_bytes"`
	Slaves      []SlaveInfo   `json:"slaves"`
	RT          []RTSetting   `json:"rt"`
	Started     time.Time     `json:"started"`
	// DC is the distributed-clock set-up, nil when DC is off.
	DC *DCInfo `json:"dc,omitempty"`
	// Maintenance is the maintenance endpoint (the control socket the
	// toolbox uses); empty from a cycle process of an earlier version.
	Maintenance MaintenanceInfo `json:"maintenance"`
}

// MaintenanceInfo says whether the cycle process serves its control
// socket, and why not.
type MaintenanceInfo struct {
	// Socket is the control socket's path.
	Socket string `json:"socket,omitempty"`
	// Error is why the cycle process does not serve it ("" when it does):
	// the cycle runs on without it, and the toolbox cannot reach the
	// cycle.
	Error string `json:"error,omitempty"`
}

// DCInfo is what the master set up for the distributed clocks.
type DCInfo struct {
	// ReferencePosition is the ring position of the reference clock.
	ReferencePosition int `json:"reference_position"`
	// Clocks lists the ring positions of the clocks with a system time.
	Clocks []int `json:"clocks"`
	// Sync0 is the SYNC0 cycle time, Sync0Shift its shift, Sync1 the
	// SYNC1 time after SYNC0 (0: off).
	Sync0      time.Duration `json:"sync0_ns"`
	Sync0Shift time.Duration `json:"sync0_shift_ns"`
	Sync1      time.Duration `json:"sync1_ns"`
}

// SlaveInfo is one slave of BusInfo.
type SlaveInfo struct {
	Position       int    `json:"position"`
	StationAddress uint16 `json:"station_address"`
	Name           string `json:"name"`
	OrderCode      string `json:"order_code"`
	VendorID       uint32 `json:"vendor_id"`
	ProductCode    uint32 `json:"product_code"`
	Revision       uint32 `json:"revision"`
	Serial         uint32 `json:"serial"`
	DC             bool   `json:"dc"`
	InputBits      int    `json:"input_bits"`
	OutputBits     int    `json:"output_bits"`
	InputOffset    int    `json:"input_offset"`  // bit offset in the input image
	OutputOffset   int    `json:"output_offset"` // bit offset in the output image
	// Signals are the PDO entries of the slave's process data, in image
	// order, as its SII assigns them to the process-data SyncManagers.
	Signals []SignalInfo `json:"signals,omitempty"`
}

// SignalInfo is one PDO entry of a slave's process data: what the SII
// calls it and where its bits are.
type SignalInfo struct {
	Output   bool   `json:"output"`   // an output (RxPDO entry), else an input
	PDO      uint16 `json:"pdo"`      // index of the PDO holding it, e.g. 0x1A00
	PDOName  string `json:"pdo_name"` // the PDO's name from the SII, e.g. "Channel 1"
	Index    uint16 `json:"index"`    // the object mapped, e.g. 0x6000
	SubIndex uint8  `json:"subindex"`
	Name     string `json:"name"`      // the entry's name from the SII, e.g. "Input"
	DataType uint8  `json:"data_type"` // ETG.1000.6 base data type, e.g. 1 BOOL, 3 INT16
	Bits     int    `json:"bits"`
	// Offset is the entry's first bit counted from the slave's first
	// input (or output) bit, as Command.BitOffset counts them.
	Offset int `json:"offset"`
	// Unit is the entry's unit from the device's ESI (e.g. mV): the agent
	// sets it (agent/esinames); the cycle process, which reads no ESI,
	// writes none.
	Unit string `json:"unit,omitempty"`
}

// RTSetting is the outcome of one real-time setting of the cycle thread.
type RTSetting struct {
	Setting   string `json:"setting"`
	Requested bool   `json:"requested"`
	Applied   bool   `json:"applied"`
	Error     string `json:"error,omitempty"`
}

// BusInfoPath returns where the bus description of the segment at shmPath lives.
func BusInfoPath(shmPath string) string { return shmPath + ".bus.json" }

// NewBusInfo describes the bus m brought up, cycling with period, as the
// cycle process writes it (the real-time settings follow once the cycle
// thread is set up).
func NewBusInfo(m *master.Master, period time.Duration) *BusInfo {
	img := m.Image()
	bi := &BusInfo{
		CyclePID:    os.Getpid(),
		Period:      period,
		ExpectedWKC: m.Cyclic().ExpectedWKC(),
		Frames:      m.Cyclic().Frames(),
		OutputBytes: len(img.Outputs()),
		InputBytes:  len(img.Inputs()),
		Started:     time.Now(),
	}
	for _, s := range m.Slaves() {
		bi.Slaves = append(bi.Slaves, SlaveInfo{
			Position: s.Position, StationAddress: s.StationAddress, Name: s.Name, OrderCode: s.OrderCode,
			VendorID: s.Identity.VendorID, ProductCode: s.Identity.ProductCode, Revision: s.Identity.Revision,
			Serial: s.Identity.SerialNumber, DC: s.DC, InputBits: s.InputBits, OutputBits: s.OutputBits,
			InputOffset: s.Inputs.Offset, OutputOffset: s.Outputs.Offset,
			Signals: pdoSignals(s),
		})
	}
	if setup, sync, ok := m.DC(); ok && setup.Reference != nil {
		bi.DC = &DCInfo{ReferencePosition: setup.Reference.Position, Sync0: sync.Sync0, Sync0Shift: sync.Sync0Shift,
			Sync1: sync.Sync1}
		for _, c := range setup.Clocks {
			bi.DC.Clocks = append(bi.DC.Clocks, c.Slave.Position)
		}
	}
	return bi
}

// pdoSignals lists the PDO entries of s's process data as the master
// mapped them (Slave.TxPDOs and RxPDOs: read over CoE, configured, or from
// the SII), naming each from the SII where the SII describes the entry.
// Gaps (index 0) take their bits but are no signal.
func pdoSignals(s *master.Slave) []SignalInfo {
	var out []SignalInfo
	for _, dir := range []struct {
		output bool
		pdos   []master.PDO
		sii    []sii.PDO
	}{{false, s.TxPDOs, siiPDOs(s, false)}, {true, s.RxPDOs, siiPDOs(s, true)}} {
		for _, p := range dir.pdos {
			known, pdoName := siiPDO(s, dir.sii, p.Index)
			for _, e := range p.Entries {
				if e.Index == 0 {
					continue
				}
				sig := SignalInfo{Output: dir.output, PDO: p.Index, PDOName: pdoName, Index: e.Index,
					SubIndex: e.SubIndex, Bits: e.Bits, Offset: e.Offset,
					Name: fmt.Sprintf("0x%04X:%02X", e.Index, e.SubIndex)}
				if se, ok := siiEntry(known, dir.sii, e); ok {
					sig.Name, sig.DataType = siiString(s.SII, se.NameIndex), se.DataType
				}
				out = append(out, sig)
			}
		}
	}
	return out
}

// siiPDOs returns the slave's SII PDOs of one direction, nil without SII.
func siiPDOs(s *master.Slave, output bool) []sii.PDO {
	switch {
	case s.SII == nil:
		return nil
	case output:
		return s.SII.RxPDOs
	}
	return s.SII.TxPDOs
}

// siiPDO finds the SII description of PDO index and its name.
func siiPDO(s *master.Slave, pdos []sii.PDO, index uint16) (*sii.PDO, string) {
	for i := range pdos {
		if pdos[i].Index == index {
			return &pdos[i], siiString(s.SII, pdos[i].NameIndex)
		}
	}
	return nil, ""
}

// siiEntry finds the SII description of a mapped entry: in its own PDO
// first, else in any PDO of the direction (a remapped object).
func siiEntry(own *sii.PDO, pdos []sii.PDO, e master.PDOEntry) (sii.PDOEntry, bool) {
	match := func(se sii.PDOEntry) bool {
		return se.Index == e.Index && se.SubIndex == e.SubIndex && int(se.BitLength) == e.Bits
	}
	if own != nil {
		for _, se := range own.Entries {
			if match(se) {
				return se, true
			}
		}
	}
	for _, p := range pdos {
		for _, se := range p.Entries {
			if match(se) {
				return se, true
			}
		}
	}
	return sii.PDOEntry{}, false
}

// siiString returns SII string i as valid UTF-8 (SII strings are often
// ISO 8859-1), "" when there is none.
func siiString(d *sii.Device, i uint8) string {
	raw, err := d.StringAt(i)
	if err != nil || utf8.ValidString(raw) {
		return raw
	}
	r := make([]rune, len(raw))
	for k := range len(raw) {
		r[k] = rune(raw[k])
	}
	return string(r)
}

func (bi *BusInfo) setRT(s *rt.Setup) {
	bi.RT = bi.RT[:0]
	for _, r := range s.Results {
		e := ""
		if r.Err != nil {
			e = r.Err.Error()
		}
		bi.RT = append(bi.RT, RTSetting{Setting: r.Setting, Requested: r.Requested, Applied: r.Applied(), Error: e})
	}
}

// write stores bi at path atomically (a reader never sees half a file),
// in a new file of mode 0600 renamed over path. A path that is a symbolic
// link, not a regular file or another user's file is refused, not
// replaced: the name may have been planted beside the segment.
func (bi *BusInfo) write(path string) error {
	if err := CheckOwnFile(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("bus info: %w (remove it or choose another cycle.shm)", err)
	}
	b, err := json.MarshalIndent(bi, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("bus info: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("bus info: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("bus info: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// maxBusInfoSize bounds the bus description read: a full segment of
// 65 535 slaves with their signals stays well below.
const maxBusInfoSize = 64 << 20

// ReadBusInfo reads the bus description written by the cycle process. It
// must be a regular file of this process's user, not reached through a
// symbolic link: one another user planted beside the segment is an error.
func ReadBusInfo(path string) (*BusInfo, error) {
	// O_NONBLOCK: a FIFO planted at path must not block the open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			err = fmt.Errorf("%s is a symbolic link: refusing to follow it", path)
		}
		return nil, fmt.Errorf("bus info: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("bus info: %w", err)
	}
	if err := CheckOwnFileInfo(path, fi); err != nil {
		return nil, fmt.Errorf("bus info: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxBusInfoSize+1))
	if err != nil {
		return nil, fmt.Errorf("bus info: %w", err)
	}
	if len(b) > maxBusInfoSize {
		return nil, fmt.Errorf("bus info %s: larger than %d bytes", path, maxBusInfoSize)
	}
	var bi BusInfo
	if err := json.Unmarshal(b, &bi); err != nil {
		return nil, fmt.Errorf("bus info %s: %w", path, err)
	}
	return &bi, nil
}

// CheckOwnFile returns nil if path is a regular file of this process's
// user, not followed if a symbolic link; else an error saying what it is,
// matching fs.ErrNotExist if there is none. The files beside a segment
// are checked with it: other users may create names in /dev/shm.
func CheckOwnFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return CheckOwnFileInfo(path, fi)
}

// CheckOwnFileInfo is [CheckOwnFile] for the file at path, already
// stat'ed (Lstat, or Stat of the open file) as fi.
func CheckOwnFileInfo(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return fmt.Errorf("%s is a symbolic link (to %s): refusing to follow it", path, target)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%v)", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to user %d, not to this process's user %d: refusing to use it", path, st.Uid, os.Geteuid())
	}
	return nil
}
