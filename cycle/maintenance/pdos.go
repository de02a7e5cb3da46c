package maintenance

import (
	"errors"

	"github.com/ecagent/ecagent/master"
)

// OpPDOs reports the PDO assignment and mapping of every slave and where
// each entry lies in the process image (PDOsResult). The image must be
// mapped: the cycle process's is, and the ecagent command brings a
// segment it opens itself up before asking.
const OpPDOs Op = "pdos"

// PDOsResult is the process image's layout: outputs first, then inputs.
type PDOsResult struct {
	OutputBytes int         `json:"output_bytes"`
	InputBytes  int         `json:"input_bytes"`
	Slaves      []SlavePDOs `json:"slaves"`
}

// SlavePDOs is one slave's process data.
type SlavePDOs struct {
	Position int    `json:"position"`
	Name     string `json:"name"`
	// Source is where the assignment came from: sii, coe or config.
	Source       string   `json:"source"`
	SyncManagers []SMInfo `json:"sync_managers"`
	// Outputs and Inputs are the slave's bits in the image, as bit
	// offsets from the image's start (inputs follow the outputs).
	Outputs BitRange  `json:"outputs"`
	Inputs  BitRange  `json:"inputs"`
	RxPDOs  []PDOInfo `json:"rx_pdos"`
	TxPDOs  []PDOInfo `json:"tx_pdos"`
}

// BitRange is a run of bits of the process image.
type BitRange struct {
	Offset int `json:"offset"`
	Len    int `json:"len"`
}

// SMInfo is a process-data SyncManager.
type SMInfo struct {
	Index   int    `json:"index"`
	Type    string `json:"type"`
	Start   uint16 `json:"start"`
	Bytes   int    `json:"bytes"`
	Control uint8  `json:"control"`
}

// PDOInfo is one assigned PDO.
type PDOInfo struct {
	Index   uint16      `json:"index"`
	SM      int         `json:"sm"`
	Entries []EntryInfo `json:"entries"`
}

// EntryInfo is one mapped entry; Offset is its bit offset from the
// image's start. Index 0 is a gap.
type EntryInfo struct {
	Index    uint16 `json:"index"`
	SubIndex uint8  `json:"sub_index"`
	Bits     int    `json:"bits"`
	Offset   int    `json:"offset"`
}

func (h *Handler) pdos() (*PDOsResult, error) {
	img := h.m.Image()
	if img == nil {
		return nil, errors.New("the process image is not mapped")
	}
	out := len(img.Outputs())
	res := &PDOsResult{OutputBytes: out, InputBytes: len(img.Inputs()), Slaves: []SlavePDOs{}}
	for _, s := range h.m.Slaves() {
		sp := SlavePDOs{Position: s.Position, Name: s.OrderCode, Source: s.PDOSource,
			Outputs: BitRange{Offset: s.Outputs.Offset, Len: s.Outputs.Len},
			Inputs:  BitRange{Offset: 8*out + s.Inputs.Offset, Len: s.Inputs.Len},
			RxPDOs:  pdoInfos(s.RxPDOs, s.Outputs.Offset), TxPDOs: pdoInfos(s.TxPDOs, 8*out+s.Inputs.Offset),
			SyncManagers: []SMInfo{}}
		for _, sm := range s.SyncManagers {
			sp.SyncManagers = append(sp.SyncManagers, SMInfo{Index: sm.Index, Type: sm.Type.String(), Start: sm.Start,
				Bytes: sm.Bytes(), Control: sm.Control})
		}
		res.Slaves = append(res.Slaves, sp)
	}
	return res, nil
}

// pdoInfos copies pdos with entry offsets made absolute by adding base.
func pdoInfos(pdos []master.PDO, base int) []PDOInfo {
	out := []PDOInfo{}
	for _, p := range pdos {
		pi := PDOInfo{Index: p.Index, SM: p.SM, Entries: []EntryInfo{}}
		for _, e := range p.Entries {
			pi.Entries = append(pi.Entries, EntryInfo{Index: e.Index, SubIndex: e.SubIndex, Bits: e.Bits, Offset: base + e.Offset})
		}
		out = append(out, pi)
	}
	return out
}
