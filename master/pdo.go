package master

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// Sources of a slave's PDO assignment (Slave.PDOSource).
const (
	// PDOSourceSII: the SII's default assignment (no CoE, or the slave
	// refused to tell its assignment).
	PDOSourceSII = "sii"
	// PDOSourceCoE: the assignment and mappings the slave reported over
	// CoE (0x1C10+n, 0x16xx, 0x1Axx) in PREOP.
	PDOSourceCoE = "coe"
	// PDOSourceConfig: the assignment Config.PDO wrote, as the slave
	// reported it back.
	PDOSourceConfig = "config"
)

// CoE objects of the PDO assignment and mapping (ETG.1000.6) and limits.
const (
	objSMAssign   = 0x1C10 // + SyncManager number: the PDOs assigned to it
	rxPDOFirst    = 0x1600 // RxPDO mapping objects (outputs)
	rxPDOLast     = 0x17FF
	txPDOFirst    = 0x1A00 // TxPDO mapping objects (inputs)
	txPDOLast     = 0x1BFF
	maxEntryBits  = 64  // longest entry a PDOEntryConfig may map
	maxSubIndexes = 254 // most PDOs an assignment, or entries a mapping, holds
)

// PDOEntry is one mapped object entry of a PDO.
type PDOEntry struct {
	Index    uint16 // object index, 0 for a gap (padding)
	SubIndex uint8
	Bits     int // bit length
	Offset   int // bit offset relative to the slave's Outputs (RxPDO) or Inputs (TxPDO) BitRange
}

// PDO is a PDO assigned to a SyncManager, in image order.
type PDO struct {
	Index   uint16 // 0x1600.. (RxPDO, outputs) or 0x1A00.. (TxPDO, inputs)
	SM      int    // SyncManager it is assigned to
	Entries []PDOEntry
}

// bits returns the PDO's length: the sum of its entries, gaps included.
func (p PDO) bits() int {
	n := 0
	for _, e := range p.Entries {
		n += e.Bits
	}
	return n
}

// OutputEntry returns the output (RxPDO) entry that maps object
// index:sub, so that ProcessImage.OutputValue(s, e.Offset, e.Bits) reads
// it; false when no assigned RxPDO maps it (index 0, a gap, never matches).
func (s *Slave) OutputEntry(index uint16, sub uint8) (PDOEntry, bool) {
	return findEntry(s.RxPDOs, index, sub)
}

// InputEntry returns the input (TxPDO) entry that maps object index:sub,
// so that ProcessImage.InputValue(s, e.Offset, e.Bits) reads it; false
// when no assigned TxPDO maps it.
func (s *Slave) InputEntry(index uint16, sub uint8) (PDOEntry, bool) {
	return findEntry(s.TxPDOs, index, sub)
}

func findEntry(pdos []PDO, index uint16, sub uint8) (PDOEntry, bool) {
	if index == 0 {
		return PDOEntry{}, false
	}
	for _, p := range pdos {
		for _, e := range p.Entries {
			if e.Index == index && e.SubIndex == sub {
				return e, true
			}
		}
	}
	return PDOEntry{}, false
}

// hasCoE reports whether the slave has a mailbox that speaks CoE.
func hasCoE(s *Slave) bool { return s.HasMailbox && s.Protocols&sii.ProtocolCoE != 0 }

// readPDOConfiguration settles every slave's PDO assignment in PREOP,
// before the image is mapped, and sizes its process-data SyncManagers
// from it:
//
//   - a slave Config.PDO names gets that assignment (and mappings) written
//     over CoE, then read back (PDOSourceConfig);
//   - any other slave with CoE is asked for its assignment (0x1C10+n) and
//     the mapping of each assigned PDO (PDOSourceCoE);
//   - a slave without CoE, or one that refuses (SDO abort, mailbox error),
//     keeps the SII's default assignment (PDOSourceSII).
//
// It logs one line per slave at debug level. Calling it again reads (and
// writes) everything again.
func (m *Master) readPDOConfiguration(ctx context.Context) error {
	if err := m.usable(); err != nil {
		return err
	}
	configs, err := pdoConfigs(m.cfg.PDO, m.slaves)
	if err != nil {
		return err
	}
	for _, s := range m.slaves {
		if c, ok := configs[s.Position]; ok {
			err = m.writePDOConfig(ctx, s, c)
		} else {
			err = m.readAssignment(ctx, s)
		}
		if err != nil {
			return err
		}
		m.log.Debug("PDO assignment", "slave", s.String(), "source", s.PDOSource,
			"rx_pdos", pdoList(s.RxPDOs), "tx_pdos", pdoList(s.TxPDOs),
			"output_bits", s.OutputBits, "input_bits", s.InputBits)
	}
	return nil
}

// pdoList renders PDO indexes for the log: "0x1a00 0x1a02".
func pdoList(pdos []PDO) string {
	var b strings.Builder
	for i, p := range pdos {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%#04x", p.Index)
	}
	return b.String()
}

// readAssignment reads the slave's assignment over CoE, or takes the
// SII's when it has no CoE or refuses.
func (m *Master) readAssignment(ctx context.Context, s *Slave) error {
	if hasCoE(s) {
		pdos, err := m.uploadAssignment(ctx, s)
		if err == nil {
			s.setPDOs(pdos, PDOSourceCoE)
			return nil
		}
		var abort *coe.AbortError
		var mbxErr *coe.MailboxError
		if !errors.As(err, &abort) && !errors.As(err, &mbxErr) {
			return fmt.Errorf("master: %v: read PDO assignment: %w", s, err)
		}
		m.log.Debug("PDO assignment not readable over CoE, using the SII's", "slave", s.String(), "err", err)
	}
	s.setPDOs(siiPDOs(s), PDOSourceSII)
	return nil
}

// uploadAssignment reads, for each process-data SyncManager, the PDOs
// assigned to it (0x1C10+n) and their mappings. A SyncManager the SII
// assigns no PDOs to may lack the assignment object: it has none; an
// assignment entry 0 assigns nothing.
func (m *Master) uploadAssignment(ctx context.Context, s *Slave) ([]PDO, error) {
	var pdos []PDO
	for _, sm := range s.SyncManagers {
		assign := objSMAssign + uint16(sm.Index)
		n, err := m.uploadUint(ctx, s, assign, 0, 1)
		var abort *coe.AbortError
		if errors.As(err, &abort) && s.SII != nil && s.SII.SyncManagerBits(sm.Index) == 0 {
			continue
		}
		if err != nil {
			return nil, err
		}
		for k := 1; k <= int(n); k++ {
			index, err := m.uploadUint(ctx, s, assign, uint8(k), 2)
			if err != nil {
				return nil, err
			}
			if index == 0 {
				continue // an empty entry assigns nothing
			}
			entries, err := m.uploadMapping(ctx, s, uint16(index))
			if err != nil {
				return nil, err
			}
			pdos = append(pdos, PDO{Index: uint16(index), SM: sm.Index, Entries: entries})
		}
	}
	return pdos, nil
}

// uploadMapping reads the entries of PDO mapping object index.
func (m *Master) uploadMapping(ctx context.Context, s *Slave, index uint16) ([]PDOEntry, error) {
	n, err := m.uploadUint(ctx, s, index, 0, 1)
	if err != nil {
		return nil, err
	}
	entries := make([]PDOEntry, 0, n)
	for j := 1; j <= int(n); j++ {
		v, err := m.uploadUint(ctx, s, index, uint8(j), 4)
		if err != nil {
			return nil, err
		}
		entries = append(entries, decodeMappingEntry(uint32(v)))
	}
	return entries, nil
}

// uploadUint reads index:sub as an unsigned little-endian number of size
// bytes (a slave may send more, e.g. sub-index 0 as 16 bits).
func (m *Master) uploadUint(ctx context.Context, s *Slave, index uint16, sub uint8, size int) (uint64, error) {
	b, err := m.SDOUpload(ctx, s, index, sub)
	if err != nil {
		return 0, err
	}
	if len(b) < size {
		return 0, fmt.Errorf("master: %v: SDO %#04x:%02x: %d bytes, want %d", s, index, sub, len(b), size)
	}
	var v uint64
	for i := size - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, nil
}

// decodeMappingEntry splits a PDO mapping entry: index<<16 | sub<<8 | bits.
func decodeMappingEntry(v uint32) PDOEntry {
	return PDOEntry{Index: uint16(v >> 16), SubIndex: uint8(v >> 8), Bits: int(uint8(v))}
}

// encodeMappingEntry is the inverse of decodeMappingEntry.
func encodeMappingEntry(e PDOEntry) uint32 {
	return uint32(e.Index)<<16 | uint32(e.SubIndex)<<8 | uint32(uint8(e.Bits))
}

// siiPDOs returns the SII's default assignment: for each process-data
// SyncManager, the SII PDOs that name it, in the SII's order.
func siiPDOs(s *Slave) []PDO {
	if s.SII == nil {
		return nil
	}
	var pdos []PDO
	for _, sm := range s.SyncManagers {
		for _, l := range [2][]sii.PDO{s.SII.RxPDOs, s.SII.TxPDOs} {
			for _, p := range l {
				if int(p.SyncManager) != sm.Index {
					continue
				}
				out := PDO{Index: p.Index, SM: sm.Index, Entries: make([]PDOEntry, 0, len(p.Entries))}
				for _, e := range p.Entries {
					out.Entries = append(out.Entries, PDOEntry{Index: e.Index, SubIndex: e.SubIndex, Bits: int(e.BitLength)})
				}
				pdos = append(pdos, out)
			}
		}
	}
	return pdos
}

// setPDOs makes pdos the slave's assignment: RxPDOs and TxPDOs in image
// order (SyncManager order, then assignment order) and the SyncManagers'
// bits and the totals sized from them. Entry offsets are set when the
// image is mapped.
func (s *Slave) setPDOs(pdos []PDO, source string) {
	s.InputBits, s.OutputBits = 0, 0
	s.assignPDOs(pdos)
	for i := range s.SyncManagers {
		sm := &s.SyncManagers[i]
		sm.Bits = 0
		for _, p := range pdos {
			if p.SM == sm.Index {
				sm.Bits += p.bits()
			}
		}
		if sm.Type == sii.SMProcessDataOut {
			s.OutputBits += sm.Bits
		} else {
			s.InputBits += sm.Bits
		}
	}
	s.PDOSource = source
}

// assignPDOs sorts pdos into RxPDOs and TxPDOs by the direction of their
// SyncManager, in SyncManager order; PDOs of no process-data SyncManager
// are left out.
func (s *Slave) assignPDOs(pdos []PDO) {
	s.RxPDOs, s.TxPDOs = nil, nil
	for _, sm := range s.SyncManagers {
		for _, p := range pdos {
			if p.SM != sm.Index {
				continue
			}
			p.Entries = append([]PDOEntry(nil), p.Entries...)
			if sm.Type == sii.SMProcessDataOut {
				s.RxPDOs = append(s.RxPDOs, p)
			} else {
				s.TxPDOs = append(s.TxPDOs, p)
			}
		}
	}
}

// setPDOOffsets sets the entry offsets of pdos (one direction of s, whose
// SyncManagers the runs rs hold) as mapProcessData places the runs: one
// after the other, each runBits long, the SyncManagers of a run
// contiguous.
func setPDOOffsets(s *Slave, rs []smRun, pdos []PDO) {
	base := 0
	for _, r := range rs {
		at := base
		for _, sm := range r.sms {
			for i := range pdos {
				if pdos[i].SM != sm.Index {
					continue
				}
				for j := range pdos[i].Entries {
					pdos[i].Entries[j].Offset = at
					at += pdos[i].Entries[j].Bits
				}
			}
		}
		base += runBits(s, r)
	}
}

// pdoAreaBytes returns the most bytes SyncManager sm's process data may
// take: the memory from its start to the next SyncManager the SII
// describes, or to the end of the ESC's process RAM, a third of that in
// 3-buffer mode (the ESC keeps three buffers of the SyncManager's length).
func pdoAreaBytes(s *Slave, sm ProcessDataSM) int {
	end := 0x10000
	if s.ESC.RAMSizeKiB > 0 {
		end = 0x1000 + 1024*int(s.ESC.RAMSizeKiB)
	}
	if s.SII != nil {
		for _, o := range s.SII.SyncManagers {
			if st := int(o.StartAddress); st > int(sm.Start) && st < end {
				end = st
			}
		}
	}
	n := max(end-int(sm.Start), 0)
	if sm.Control&esc.SMModeMask == esc.SMModeBuffered {
		n /= 3
	}
	return n
}

// pdoConfigAt is one entry of Config.PDO and its place in the list.
type pdoConfigAt struct {
	at  int // index into Config.PDO, for error messages
	cfg SlavePDOConfig
}

// pdoConfigs checks Config.PDO against the scanned slaves and returns it
// by ring position.
func pdoConfigs(cfgs []SlavePDOConfig, slaves []*Slave) (map[int]pdoConfigAt, error) {
	out := make(map[int]pdoConfigAt, len(cfgs))
	for i, c := range cfgs {
		if c.Position < 0 || c.Position >= len(slaves) {
			return nil, fmt.Errorf("master: config PDO[%d]: position %d: no slave there (the segment has %d, positions 0 to %d)",
				i, c.Position, len(slaves), len(slaves)-1)
		}
		if prev, dup := out[c.Position]; dup {
			return nil, fmt.Errorf("master: config PDO[%d]: position %d is configured already by PDO[%d]", i, c.Position, prev.at)
		}
		s := slaves[c.Position]
		if !hasCoE(s) {
			return nil, fmt.Errorf("master: config PDO[%d]: %v has no CoE mailbox: its PDO assignment cannot be changed", i, s)
		}
		for _, d := range []struct {
			name        string
			pdos        []PDOConfig
			first, last uint16
		}{{"RxPDO", c.RxPDOs, rxPDOFirst, rxPDOLast}, {"TxPDO", c.TxPDOs, txPDOFirst, txPDOLast}} {
			if len(d.pdos) > maxSubIndexes {
				return nil, fmt.Errorf("master: config PDO[%d]: %d %ss, want at most %d", i, len(d.pdos), d.name, maxSubIndexes)
			}
			for _, p := range d.pdos {
				if p.Index < d.first || p.Index > d.last {
					return nil, fmt.Errorf("master: config PDO[%d]: %s %#04x: index outside %#04x to %#04x", i, d.name, p.Index, d.first, d.last)
				}
				if len(p.Entries) > maxSubIndexes {
					return nil, fmt.Errorf("master: config PDO[%d]: %s %#04x: %d entries, want at most %d", i, d.name, p.Index, len(p.Entries), maxSubIndexes)
				}
				for k, e := range p.Entries {
					if e.Bits < 1 || e.Bits > maxEntryBits {
						return nil, fmt.Errorf("master: config PDO[%d]: %s %#04x entry %d (%#04x:%02x): %d bits, want 1 to %d",
							i, d.name, p.Index, k+1, e.Index, e.SubIndex, e.Bits, maxEntryBits)
					}
				}
			}
		}
		out[c.Position] = pdoConfigAt{at: i, cfg: c}
	}
	return out, nil
}

// writePDOConfig writes the assignment (and mappings) c sets for s in the
// order ETG.1000.6 asks for (assignment count 0; per remapped PDO its
// count 0, its entries, its count; the assigned PDOs; the assignment
// count), then reads the slave's assignment back.
func (m *Master) writePDOConfig(ctx context.Context, s *Slave, c pdoConfigAt) error {
	for _, d := range []struct {
		typ  sii.SyncManagerType
		name string
		pdos []PDOConfig
	}{{sii.SMProcessDataOut, "RxPDOs", c.cfg.RxPDOs}, {sii.SMProcessDataIn, "TxPDOs", c.cfg.TxPDOs}} {
		if d.pdos == nil {
			continue
		}
		sm, ok := firstSM(s, d.typ)
		if !ok {
			return fmt.Errorf("master: config PDO[%d]: %v has no %v SyncManager for its %s", c.at, s, d.typ, d.name)
		}
		total := 0
		for _, p := range d.pdos {
			if p.Entries == nil {
				entries, err := m.uploadMapping(ctx, s, p.Index)
				var abort *coe.AbortError
				switch {
				case errors.As(err, &abort):
					return fmt.Errorf("master: config PDO[%d]: %v refused to tell the mapping of PDO %#04x: %w", c.at, s, p.Index, abort)
				case err != nil:
					return fmt.Errorf("master: config PDO[%d]: read the mapping of PDO %#04x: %w", c.at, p.Index, err)
				}
				total += PDO{Entries: entries}.bits()
				continue
			}
			for _, e := range p.Entries {
				total += e.Bits
			}
		}
		if area := pdoAreaBytes(s, sm); total > 8*area {
			return fmt.Errorf("master: config PDO[%d]: %v: %s of %d bits exceed the %d bytes SyncManager %d may take",
				c.at, s, d.name, total, area, sm.Index)
		}
		if err := m.downloadAssignment(ctx, s, c.at, sm, d.pdos); err != nil {
			return err
		}
	}
	pdos, err := m.uploadAssignment(ctx, s)
	if err != nil {
		return fmt.Errorf("master: config PDO[%d]: read the assignment back: %w", c.at, err)
	}
	s.setPDOs(pdos, PDOSourceConfig)
	return nil
}

// downloadAssignment writes the mappings that pdos set and assigns pdos
// to SyncManager sm.
func (m *Master) downloadAssignment(ctx context.Context, s *Slave, at int, sm ProcessDataSM, pdos []PDOConfig) error {
	assign := objSMAssign + uint16(sm.Index)
	if err := m.downloadPDOObject(ctx, s, at, assign, 0, []byte{0}); err != nil {
		return err
	}
	for _, p := range pdos {
		if p.Entries == nil {
			continue
		}
		if err := m.downloadPDOObject(ctx, s, at, p.Index, 0, []byte{0}); err != nil {
			return err
		}
		for k, e := range p.Entries {
			v := encodeMappingEntry(PDOEntry{Index: e.Index, SubIndex: e.SubIndex, Bits: e.Bits})
			if err := m.downloadPDOObject(ctx, s, at, p.Index, uint8(k+1), binary.LittleEndian.AppendUint32(nil, v)); err != nil {
				return err
			}
		}
		if err := m.downloadPDOObject(ctx, s, at, p.Index, 0, []byte{uint8(len(p.Entries))}); err != nil {
			return err
		}
	}
	for k, p := range pdos {
		if err := m.downloadPDOObject(ctx, s, at, assign, uint8(k+1), binary.LittleEndian.AppendUint16(nil, p.Index)); err != nil {
			return err
		}
	}
	return m.downloadPDOObject(ctx, s, at, assign, 0, []byte{uint8(len(pdos))})
}

// downloadPDOObject writes one sub-index of a PDO assignment or mapping
// object; a refusal names the slave, the object, the value and the abort
// code's meaning.
func (m *Master) downloadPDOObject(ctx context.Context, s *Slave, at int, index uint16, sub uint8, data []byte) error {
	err := m.SDODownload(ctx, s, index, sub, data)
	if err == nil {
		return nil
	}
	var v uint64
	for i := len(data) - 1; i >= 0; i-- {
		v = v<<8 | uint64(data[i])
	}
	var abort *coe.AbortError
	if errors.As(err, &abort) {
		return fmt.Errorf("master: config PDO[%d]: %v refused %#04x:%02x = %#x: %w", at, s, index, sub, v, abort)
	}
	return fmt.Errorf("master: config PDO[%d]: write %#04x:%02x = %#x: %w", at, index, sub, v, err)
}

// firstSM returns the slave's first process-data SyncManager of type typ.
func firstSM(s *Slave, typ sii.SyncManagerType) (ProcessDataSM, bool) {
	for _, sm := range s.SyncManagers {
		if sm.Type == typ {
			return sm, true
		}
	}
	return ProcessDataSM{}, false
}
