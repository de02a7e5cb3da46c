package sii

import (
	"encoding/binary"
	"fmt"
)

// NoSyncManager in [PDO.SyncManager] means the PDO is not assigned to a SyncManager by
// default (it is optional and the master may assign it over CoE).
const NoSyncManager = 0xFF

const (
	pdoHeaderSize = 8
	pdoEntrySize  = 8
)

// PDO is one process data object of a TxPDO (device to master, inputs) or RxPDO (master
// to device, outputs) category (ETG.2010 Table 14).
type PDO struct {
	Index       uint16 // object index, conventionally 0x16xx–0x17xx for RxPDOs, 0x1Axx–0x1Bxx for TxPDOs
	SyncManager uint8  // SyncManager it is assigned to, or NoSyncManager
	DCSync      uint8  // the PDO's synchronization byte
	NameIndex   uint8  // string index of its name
	Flags       PDOFlags
	Entries     []PDOEntry
}

// PDOFlags are the flags of a PDO (ETG.2010 Table 14).
type PDOFlags uint16

// PDO flag bits.
const (
	PDOMandatory      PDOFlags = 0x0001
	PDODefault        PDOFlags = 0x0002
	PDOFixedContent   PDOFlags = 0x0010
	PDOVirtualContent PDOFlags = 0x0020
)

// PDOEntry maps one object into a PDO. An entry with Index 0 is a gap of BitLength bits.
type PDOEntry struct {
	Index     uint16
	SubIndex  uint8
	NameIndex uint8 // string index of its name
	DataType  uint8 // ETG.1000.6 base data type, e.g. 1 BOOL, 6 UINT16
	BitLength uint8
	Flags     uint16
}

// BitLength returns the size of p in bits: the sum over its entries, gaps included.
func (p *PDO) BitLength() int {
	n := 0
	for _, e := range p.Entries {
		n += int(e.BitLength)
	}
	return n
}

// decodePDOs decodes consecutive PDOs until fewer bytes than a PDO header remain. It
// returns the PDOs and the bytes they took.
func decodePDOs(b []byte) ([]PDO, int, error) {
	le := binary.LittleEndian
	var pdos []PDO
	p := 0
	for len(b)-p >= pdoHeaderSize {
		h := b[p:]
		n := int(h[2])
		end := p + pdoHeaderSize + n*pdoEntrySize
		if end > len(b) {
			return nil, 0, fmt.Errorf("PDO %#04x has %d entries, the category ends after %d",
				le.Uint16(h), n, (len(b)-p-pdoHeaderSize)/pdoEntrySize)
		}
		pdo := PDO{
			Index:       le.Uint16(h[0:]),
			SyncManager: h[3],
			DCSync:      h[4],
			NameIndex:   h[5],
			Flags:       PDOFlags(le.Uint16(h[6:])),
			Entries:     make([]PDOEntry, n),
		}
		for i := range pdo.Entries {
			e := b[p+pdoHeaderSize+i*pdoEntrySize:]
			pdo.Entries[i] = PDOEntry{
				Index:     le.Uint16(e[0:]),
				SubIndex:  e[2],
				NameIndex: e[3],
				DataType:  e[4],
				BitLength: e[5],
				Flags:     le.Uint16(e[6:]),
			}
		}
		pdos = append(pdos, pdo)
		p = end
	}
	return pdos, p, nil
}

func appendPDOs(b []byte, pdos []PDO) ([]byte, error) {
	le := binary.LittleEndian
	for _, pdo := range pdos {
		if len(pdo.Entries) > 0xFF {
			return nil, fmt.Errorf("PDO %#04x has %d entries, at most 255 fit", pdo.Index, len(pdo.Entries))
		}
		b = le.AppendUint16(b, pdo.Index)
		b = append(b, uint8(len(pdo.Entries)), pdo.SyncManager, pdo.DCSync, pdo.NameIndex)
		b = le.AppendUint16(b, uint16(pdo.Flags))
		for _, e := range pdo.Entries {
			b = le.AppendUint16(b, e.Index)
			b = append(b, e.SubIndex, e.NameIndex, e.DataType, e.BitLength)
			b = le.AppendUint16(b, e.Flags)
		}
	}
	return b, nil
}
