package process

import (
	"fmt"
	"os"
	"time"
	"unicode/utf8"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/master"
)

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

// setRT records in bi the outcome of the cycle thread's real-time
// settings.
func setRT(bi *BusInfo, s *rt.Setup) {
	bi.RT = bi.RT[:0]
	for _, r := range s.Results {
		e := ""
		if r.Err != nil {
			e = r.Err.Error()
		}
		bi.RT = append(bi.RT, RTSetting{Setting: r.Setting, Requested: r.Requested, Applied: r.Applied(), Error: e})
	}
}
