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
	// Time is the capture time in nanoseconds since the Unix epoch, from
	// Timestamp and the interface's if_tsresol and if_tsoffset options
	// (pcapng) or the file's magic (pcap: µs or ns). It is 0 for a
	// simple packet block, which carries no time.
	Time int64
	Data []byte // captured bytes, starting with the Ethernet header
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
	// The magic tells the resolution of the fraction: 0xA1B2C3D4 µs,
	// 0xA1B23C4D ns (the nanosecond pcap variant).
	fracNS := int64(1000)
	if bo.Uint32(b) == 0xA1B23C4D {
		fracNS = 1
	}
	var out []Packet
	for off := 24; off < len(b); {
		if off+16 > len(b) {
			return out, fmt.Errorf("truncated record header at offset %d", off)
		}
		sec, frac := bo.Uint32(b[off:]), bo.Uint32(b[off+4:])
		ts := uint64(sec)<<32 | uint64(frac)
		incl := int(bo.Uint32(b[off+8:]))
		if off+16+incl > len(b) {
			return out, fmt.Errorf("record at offset %d overruns the file", off)
		}
		t := int64(sec)*1e9 + int64(frac)*fracNS
		out = append(out, Packet{Timestamp: ts, Time: t, Data: b[off+16 : off+16+incl]})
		off += 16 + incl
	}
	return out, nil
}

func parsePcapng(b []byte) ([]Packet, error) {
	var out []Packet
	var bo binary.ByteOrder = binary.LittleEndian
	var ifaces []tsUnit // per interface of the current section
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
			ifaces = ifaces[:0] // interface ids restart in each section
		} else {
			typ = bo.Uint32(b[off:])
		}
		blen := int(bo.Uint32(b[off+4:]))
		if blen < 12 || blen%4 != 0 || off+blen > len(b) {
			return out, fmt.Errorf("bad block length %d at offset %d", blen, off)
		}
		body := b[off+8 : off+blen-4]
		switch typ {
		case blockInterfaceDesc:
			ifaces = append(ifaces, interfaceUnit(body, bo))
		case blockEnhancedPacket:
			if len(body) < 20 {
				return out, fmt.Errorf("short enhanced packet block at offset %d", off)
			}
			caplen := int(bo.Uint32(body[12:]))
			if 20+caplen > len(body) {
				return out, fmt.Errorf("packet at offset %d overruns its block", off)
			}
			ts := uint64(bo.Uint32(body[4:]))<<32 | uint64(bo.Uint32(body[8:]))
			id := int(bo.Uint32(body))
			u := tsUnit{div: 1_000_000}
			if id < len(ifaces) {
				u = ifaces[id]
			}
			out = append(out, Packet{Interface: id, Timestamp: ts, Time: u.nanos(ts), Data: body[20 : 20+caplen]})
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

// tsUnit converts an interface's raw timestamps to nanoseconds: a
// timestamp counts units of 1/div seconds (if_tsresol), from offset
// seconds after the epoch (if_tsoffset).
type tsUnit struct {
	div    uint64 // units per second
	offset int64  // seconds
}

// nanos returns the time of raw timestamp ts in ns since the epoch.
func (u tsUnit) nanos(ts uint64) int64 {
	sec, frac := ts/u.div, ts%u.div
	return (u.offset+int64(sec))*1e9 + int64(frac*1e9/u.div)
}

// Interface description block options (pcapng draft, section 4.2).
const (
	optEndOfOpt = 0
	optTSResol  = 9
	optTSOffset = 14
)

// interfaceUnit reads the timestamp unit from an interface description
// block's body (link type, reserved, snap length, then options). Without
// if_tsresol a timestamp counts microseconds; a resolution finer than
// what fits in 64 bits is taken as nanoseconds.
func interfaceUnit(body []byte, bo binary.ByteOrder) tsUnit {
	u := tsUnit{div: 1_000_000}
	for off := 8; off+4 <= len(body); {
		code, n := bo.Uint16(body[off:]), int(bo.Uint16(body[off+2:]))
		if code == optEndOfOpt || off+4+n > len(body) {
			break
		}
		v := body[off+4 : off+4+n]
		switch {
		case code == optTSResol && n >= 1:
			u.div = resolution(v[0])
		case code == optTSOffset && n >= 8:
			u.offset = int64(bo.Uint64(v))
		}
		off += 4 + (n+3)&^3
	}
	return u
}

// resolution decodes if_tsresol: bit 7 clear, 10^-v seconds; set,
// 2^-(v&0x7F) seconds.
func resolution(v byte) uint64 {
	if v&0x80 != 0 {
		return 1 << min(v&0x7F, 30)
	}
	d := uint64(1)
	for range min(v, 9) {
		d *= 10
	}
	return d
}
