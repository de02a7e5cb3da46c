package contract

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
)

// BusInfo describes the bus a cycle process brought up. The cycle process
// writes it once, before cyclic operation, next to the shared-memory
// segment ([BusInfoPath], [WriteBusInfo]); an agent that attaches, also
// after a restart, reads it ([ReadBusInfo]) to name slaves and signals.
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

// WriteBusInfo stores bi at path atomically (a reader never sees half a
// file), in a new file of mode 0600 renamed over path. A path that is a
// symbolic link, not a regular file or another user's file is refused,
// not replaced: the name may have been planted beside the segment.
func WriteBusInfo(path string, bi *BusInfo) error {
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
