package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/ecagent/ecagent/agent/rt"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/sii"
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
			Signals: pdoSignals(s),
		})
	}
	return bi
}

// pdoSignals lists the PDO entries of s's process data in the order the
// master maps them: SyncManager by SyncManager, each one's PDOs (TxPDOs,
// then RxPDOs, as the SII assigns them) and their entries. Gaps (index 0)
// take their bits but are no signal. It returns nil when the SII does not
// account for every bit the slave maps.
func pdoSignals(s *master.Slave) []SignalInfo {
	if s.SII == nil {
		return nil
	}
	var out []SignalInfo
	var bits [2]int // inputs, outputs
	for _, sm := range s.SyncManagers {
		dir := 0
		if sm.Type == sii.SMProcessDataOut {
			dir = 1
		}
		for _, pdos := range [2][]sii.PDO{s.SII.TxPDOs, s.SII.RxPDOs} {
			for _, p := range pdos {
				if int(p.SyncManager) != sm.Index {
					continue
				}
				pdoName := siiString(s.SII, p.NameIndex)
				for _, e := range p.Entries {
					if e.Index != 0 {
						out = append(out, SignalInfo{Output: dir == 1, PDO: p.Index, PDOName: pdoName,
							Index: e.Index, SubIndex: e.SubIndex, Name: siiString(s.SII, e.NameIndex),
							DataType: e.DataType, Bits: int(e.BitLength), Offset: bits[dir]})
					}
					bits[dir] += int(e.BitLength)
				}
			}
		}
	}
	if bits[0] != s.InputBits || bits[1] != s.OutputBits {
		return nil
	}
	return out
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
