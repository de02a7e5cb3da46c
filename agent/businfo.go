package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ecagent/ecagent/agent/rt"
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

func newBusInfo(m *master.Master, period time.Duration) *BusInfo {
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
		})
	}
	return bi
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

// write stores bi at path atomically (a reader never sees half a file).
func (bi *BusInfo) write(path string) error {
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

// ReadBusInfo reads the bus description written by the cycle process.
func ReadBusInfo(path string) (*BusInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bus info: %w", err)
	}
	var bi BusInfo
	if err := json.Unmarshal(b, &bi); err != nil {
		return nil, fmt.Errorf("bus info %s: %w", path, err)
	}
	return &bi, nil
}
