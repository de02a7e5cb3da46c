// Package pcapng reads link-layer frames from pcapng and classic pcap
// capture files, enough to replay and check the real-hardware captures in
// tests. It does not write captures.
package pcapng

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// Block types this reader understands (pcapng, IETF draft-tuexen-opsawg-pcapng).
const (
	blockSectionHeader  = 0x0A0D0D0A
	blockInterfaceDesc  = 0x00000001
	blockEnhancedPacket = 0x00000006
	blockSimplePacket   = 0x00000003
	byteOrderMagic      = 0x1A2B3C4D
)

// Packet is one captured frame.
type Packet struct {
	Interface int    // interface id (pcapng) or 0 (pcap)
	Timestamp uint64 // raw timestamp in the interface's resolution (µs by default)
	Data      []byte // captured bytes, starting with the Ethernet header
}

// ReadFile returns every packet in a pcapng or classic pcap file.
func ReadFile(path string) ([]Packet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pcapng: %w", err)
	}
	pkts, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("pcapng: %s: %w", path, err)
	}
	return pkts, nil
}

// Parse decodes a capture held in memory.
func Parse(b []byte) ([]Packet, error) {
	if len(b) >= 4 {
		switch binary.LittleEndian.Uint32(b) {
		case 0xA1B2C3D4, 0xA1B23C4D:
			return parsePcap(b, binary.LittleEndian)
		case 0xD4C3B2A1, 0x4D3CB2A1:
			return parsePcap(b, binary.BigEndian)
		}
	}
	return parsePcapng(b)
}

func parsePcap(b []byte, bo binary.ByteOrder) ([]Packet, error) {
	if len(b) < 24 {
		return nil, errors.New("truncated pcap header")
	}
	var out []Packet
	for off := 24; off < len(b); {
		if off+16 > len(b) {
			return out, fmt.Errorf("truncated record header at offset %d", off)
		}
		ts := uint64(bo.Uint32(b[off:]))<<32 | uint64(bo.Uint32(b[off+4:]))
		incl := int(bo.Uint32(b[off+8:]))
		if off+16+incl > len(b) {
			return out, fmt.Errorf("record at offset %d overruns the file", off)
		}
		out = append(out, Packet{Timestamp: ts, Data: b[off+16 : off+16+incl]})
		off += 16 + incl
	}
	return out, nil
}

func parsePcapng(b []byte) ([]Packet, error) {
	var out []Packet
	var bo binary.ByteOrder = binary.LittleEndian
	for off := 0; off < len(b); {
		if off+12 > len(b) {
			return out, fmt.Errorf("truncated block header at offset %d", off)
		}
		typ := binary.LittleEndian.Uint32(b[off:])
		if typ == blockSectionHeader {
			switch binary.LittleEndian.Uint32(b[off+8:]) {
			case byteOrderMagic:
				bo = binary.LittleEndian
			default:
				bo = binary.BigEndian
			}
		} else {
			typ = bo.Uint32(b[off:])
		}
		blen := int(bo.Uint32(b[off+4:]))
		if blen < 12 || blen%4 != 0 || off+blen > len(b) {
			return out, fmt.Errorf("bad block length %d at offset %d", blen, off)
		}
		body := b[off+8 : off+blen-4]
		switch typ {
		case blockEnhancedPacket:
			if len(body) < 20 {
				return out, fmt.Errorf("short enhanced packet block at offset %d", off)
			}
			caplen := int(bo.Uint32(body[12:]))
			if 20+caplen > len(body) {
				return out, fmt.Errorf("packet at offset %d overruns its block", off)
			}
			ts := uint64(bo.Uint32(body[4:]))<<32 | uint64(bo.Uint32(body[8:]))
			out = append(out, Packet{Interface: int(bo.Uint32(body)), Timestamp: ts, Data: body[20 : 20+caplen]})
		case blockSimplePacket:
			if len(body) < 4 {
				return out, fmt.Errorf("short simple packet block at offset %d", off)
			}
			n := min(int(bo.Uint32(body)), len(body)-4)
			out = append(out, Packet{Data: body[4 : 4+n]})
		}
		off += blen
	}
	return out, nil
}
