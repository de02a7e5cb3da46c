package master

import (
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// statusDatagramLen is the size on the wire of the AL status read (BRD
// 0x0130, 2 bytes) that rides in the first cyclic frame.
const statusDatagramLen = wire.DatagramOverhead + esc.ALStatusLen

// maxLRWData is the most data one LRW datagram carries in a frame that also
// holds the AL status read.
const maxLRWData = wire.MaxDataLen - statusDatagramLen

// logicalBase is the logical address of the first byte of the process
// image (the first output byte).
const logicalBase = 0

// fmmuSetting is one FMMU register block to write before SAFEOP.
type fmmuSetting struct {
	index int
	fmmu  esc.FMMU
}

// smRun is a run of process-data SyncManagers of one direction that one
// FMMU can map: physically adjacent, every one but the last a whole number
// of bytes, so their bits follow each other in logical and physical space.
type smRun struct {
	start uint16          // physical start of the first SyncManager
	bits  int             // bits of its SyncManagers together
	sms   []ProcessDataSM // its SyncManagers, in physical order
}

// runs groups a slave's process-data SyncManagers of type typ into FMMU runs.
func runs(sms []ProcessDataSM, typ sii.SyncManagerType) []smRun {
	var out []smRun
	var end uint16 // physical end of the last SyncManager added to the last run
	for _, sm := range sms {
		if sm.Type != typ || sm.Bits == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].bits%8 == 0 && sm.Start == end {
			out[n-1].bits += sm.Bits
			out[n-1].sms = append(out[n-1].sms, sm)
		} else {
			out = append(out, smRun{start: sm.Start, bits: sm.Bits, sms: []ProcessDataSM{sm}})
		}
		end = sm.Start + uint16(sm.Bytes())
	}
	return out
}

// layout is the result of mapping: the sizes of the two areas of the
// process image and, per datagram, what it covers.
type layout struct {
	outBytes int
	inBytes  int
	chunks   []chunk
}

// chunk is the part of the image one cyclic LRW datagram carries.
type chunk struct {
	from, to int    // image bytes [from, to)
	wantWKC  uint16 // +2 per slave with outputs in it, +1 per slave with inputs
}

// mapProcessData lays out the process image and sets each slave's Inputs,
// Outputs and FMMU settings, and the offsets of its PDO entries (a slave
// whose PDO assignment was not read gets the SII's).
//
// The image is one run of logical addresses from logicalBase: first the
// outputs of all slaves in ring order, then, starting on a fresh byte, their
// inputs. Within an area, a slave whose bit count is a multiple of 8 (or
// whose ESC cannot map single bits) starts on a byte boundary; any other
// slave starts at the next free bit, so that two EL2004 share one output
// byte (bits 0–3 and 4–7). Each run of adjacent process-data SyncManagers
// gets one FMMU, taken from those the SII assigns to that direction, then
// from any unused one.
//
// The datagrams are cut at most maxData bytes long and only between bytes
// that no slave's area spans, so that every slave's inputs and outputs sit
// wholly in one datagram each.
func mapProcessData(slaves []*Slave, maxData int) (layout, error) {
	var l layout
	for _, s := range slaves {
		s.fmmus = s.fmmus[:0]
		s.Inputs, s.Outputs = BitRange{}, BitRange{}
		if s.PDOSource == "" {
			s.assignPDOs(siiPDOs(s))
			s.PDOSource = PDOSourceSII
		}
	}
	used := make([]map[int]bool, len(slaves))
	for i := range used {
		used[i] = map[int]bool{}
	}
	// place puts a slave's runs at the next free bit, or byte (see above).
	place := func(next *int, s *Slave, rs []smRun) BitRange {
		bits := 0
		for _, r := range rs {
			bits += runBits(s, r)
		}
		if bits%8 == 0 || !bitwise(s) {
			*next = (*next + 7) &^ 7
		}
		r := BitRange{Offset: *next, Len: bits}
		*next += bits
		return r
	}
	// Outputs, then inputs from a fresh byte.
	next := 0
	for i, s := range slaves {
		rs := runs(s.SyncManagers, sii.SMProcessDataOut)
		if len(rs) == 0 {
			continue
		}
		s.Outputs = place(&next, s, rs)
		setPDOOffsets(s, rs, s.RxPDOs)
		if err := s.addFMMUs(rs, s.Outputs.Offset+8*logicalBase, esc.FMMUWrite, sii.FMMUOutputs, used[i]); err != nil {
			return layout{}, err
		}
	}
	l.outBytes = (next + 7) / 8
	next = 0
	for i, s := range slaves {
		rs := runs(s.SyncManagers, sii.SMProcessDataIn)
		if len(rs) == 0 {
			continue
		}
		s.Inputs = place(&next, s, rs)
		setPDOOffsets(s, rs, s.TxPDOs)
		if err := s.addFMMUs(rs, 8*(logicalBase+l.outBytes)+s.Inputs.Offset, esc.FMMURead, sii.FMMUInputs, used[i]); err != nil {
			return layout{}, err
		}
	}
	l.inBytes = (next + 7) / 8
	chunks, err := cut(slaves, l.outBytes, l.outBytes+l.inBytes, maxData)
	if err != nil {
		return layout{}, err
	}
	l.chunks = chunks
	return l, nil
}

// bitwise reports whether the slave's FMMUs can map single bits.
func bitwise(s *Slave) bool { return s.ESC.Features&esc.FeatureFMMUBitOperation == 0 }

// runBits is the number of logical bits a run takes: its bits, rounded up
// to bytes for an ESC that maps whole bytes only.
func runBits(s *Slave, r smRun) int {
	if bitwise(s) {
		return r.bits
	}
	return (r.bits + 7) &^ 7
}

// addFMMUs maps the runs one after the other from logical bit logBit.
func (s *Slave) addFMMUs(rs []smRun, logBit int, typ uint8, usage sii.FMMUUsage, used map[int]bool) error {
	for _, r := range rs {
		idx, err := s.freeFMMU(usage, used)
		if err != nil {
			return err
		}
		used[idx] = true
		bits := runBits(s, r)
		s.fmmus = append(s.fmmus, fmmuSetting{index: idx, fmmu: esc.ForBits(uint64(logBit), bits, r.start, 0, typ)})
		logBit += bits
	}
	return nil
}

// freeFMMU picks an FMMU for usage: the first one the SII reserves for it,
// else the first one the SII leaves unused or does not describe, within
// the ESC's FMMU count.
func (s *Slave) freeFMMU(usage sii.FMMUUsage, used map[int]bool) (int, error) {
	count := int(s.ESC.FMMUs)
	if count == 0 {
		count = 8 // an ESC that does not say: assume the usual eight
	}
	var usages []sii.FMMUUsage
	if s.SII != nil {
		usages = s.SII.FMMUs
	}
	for i := 0; i < count && i < len(usages); i++ {
		if usages[i] == usage && !used[i] {
			return i, nil
		}
	}
	for i := range count {
		if used[i] {
			continue
		}
		if i >= len(usages) || usages[i] == sii.FMMUUnused || usages[i] == 0xFF {
			return i, nil
		}
	}
	return 0, fmt.Errorf("master: %v: no free FMMU for its %v (%d FMMUs, SII usages %v)", s, usage, count, usages)
}

// cut splits image bytes [0, total) into datagrams of at most maxData
// bytes, cutting only where no slave's area spans the cut, and computes
// each datagram's expected working counter.
func cut(slaves []*Slave, outBytes, total, maxData int) ([]chunk, error) {
	type span struct {
		first, last int // image bytes, inclusive
		wkc         uint16
		slave       *Slave
	}
	var spans []span
	for _, s := range slaves {
		if s.Outputs.Len > 0 {
			spans = append(spans, span{s.Outputs.Offset / 8, (s.Outputs.Offset + s.Outputs.Len - 1) / 8, 2, s})
		}
		if s.Inputs.Len > 0 {
			spans = append(spans, span{outBytes + s.Inputs.Offset/8, outBytes + (s.Inputs.Offset+s.Inputs.Len-1)/8, 1, s})
		}
	}
	cuttable := func(b int) bool { // may a datagram end before byte b?
		for _, sp := range spans {
			if sp.first < b && b <= sp.last {
				return false
			}
		}
		return true
	}
	var out []chunk
	for from := 0; from < total; {
		to := min(from+maxData, total)
		for to > from && !cuttable(to) {
			to--
		}
		if to == from {
			blocker := "a slave"
			for _, sp := range spans {
				if sp.first < from+maxData && from+maxData <= sp.last {
					blocker = sp.slave.String()
				}
			}
			return nil, fmt.Errorf("master: process data of %v from image byte %d on cannot be cut into datagrams of at most %d bytes "+
				"(a slave's inputs or outputs, or bytes slaves share, would straddle two datagrams)", blocker, from, maxData)
		}
		c := chunk{from: from, to: to}
		for _, sp := range spans { // one span per slave and direction
			if sp.first < to && sp.last >= from {
				c.wantWKC += sp.wkc
			}
		}
		out = append(out, c)
		from = to
	}
	return out, nil
}
