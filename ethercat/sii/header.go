package sii

import (
	"encoding/binary"
	"fmt"
	"strings"
)

const (
	// HeaderSize is the size in bytes of the fixed header, words 0x00–0x3F.
	HeaderSize = 128

	// FirstCategoryWord is the word address of the first category header.
	FirstCategoryWord = HeaderSize / 2

	// checksumOffset is the byte offset of the header CRC (low byte of word 0x07); the
	// CRC covers the bytes before it.
	checksumOffset = 0x0E

	// maxImageBytes is the most a 16-bit word address can reach.
	maxImageBytes = 2 << 16
)

// Identity is the device identity of header words 0x08–0x0F (the same values as CoE
// object 0x1018).
type Identity struct {
	VendorID       uint32 // word 0x08
	ProductCode    uint32 // word 0x0A
	RevisionNumber uint32 // word 0x0C
	SerialNumber   uint32 // word 0x0E
}

// Mailbox describes one mailbox configuration of the header: the receive mailbox
// carries master-to-device messages, the send mailbox device-to-master ones. Offsets are
// ESC physical addresses, sizes are in bytes.
type Mailbox struct {
	ReceiveOffset uint16
	ReceiveSize   uint16
	SendOffset    uint16
	SendSize      uint16
}

// MailboxProtocols is the bitmask of header word 0x1C (ETG.1000.6 Table 18).
type MailboxProtocols uint16

// Mailbox protocol bits.
const (
	ProtocolAoE MailboxProtocols = 1 << iota // ADS over EtherCAT
	ProtocolEoE                              // Ethernet over EtherCAT
	ProtocolCoE                              // CANopen over EtherCAT
	ProtocolFoE                              // File access over EtherCAT
	ProtocolSoE                              // Servo drive profile over EtherCAT
	ProtocolVoE                              // Vendor specific protocol over EtherCAT
)

// Has reports whether all protocols in q are set in p.
func (p MailboxProtocols) Has(q MailboxProtocols) bool { return p&q == q }

// String lists the set protocols, e.g. "EoE|CoE|FoE", or "none".
func (p MailboxProtocols) String() string {
	names := [...]string{"AoE", "EoE", "CoE", "FoE", "SoE", "VoE"}
	var set []string
	for i, n := range names {
		if p&(1<<i) != 0 {
			set = append(set, n)
		}
	}
	if rest := p &^ (1<<len(names) - 1); rest != 0 {
		set = append(set, fmt.Sprintf("%#04x", uint16(rest)))
	}
	if len(set) == 0 {
		return "none"
	}
	return strings.Join(set, "|")
}

// Header is the fixed part of an SII image, words 0x00–0x3F (ETG.1000.6 §5.4,
// ETG.2010). The reserved fields keep bytes that the specifications leave
// reserved so that an image survives [Parse] and [Encode] unchanged; vendors store
// private data there (Beckhoff terminals do from word 0x20 on).
type Header struct {
	PDIControl        uint16 // word 0x00, initial value of ESC register 0x0140
	PDIConfig         uint16 // word 0x01, initial value of ESC register 0x0150
	SyncImpulseLength uint16 // word 0x02, in units of 10 ns (ESC register 0x0982)
	PDIConfig2        uint16 // word 0x03, initial value of ESC register 0x0152
	StationAlias      uint16 // word 0x04, configured station alias (ESC register 0x0012)
	Reserved05        [4]byte

	// Checksum is the CRC-8 stored in the low byte of word 0x07 as read by Parse.
	// Encode ignores it and stores the CRC it computes.
	Checksum   uint8
	Reserved07 uint8 // high byte of word 0x07

	Identity Identity // words 0x08–0x0F

	Reserved10 [8]byte // words 0x10–0x13

	BootstrapMailbox Mailbox          // words 0x14–0x17
	StandardMailbox  Mailbox          // words 0x18–0x1B
	MailboxProtocols MailboxProtocols // word 0x1C

	Reserved1D [66]byte // words 0x1D–0x3D

	// EEPROMSize is word 0x3E: the EEPROM size in KiBit minus one, so 15 means a
	// 16 KiBit (2 KiB) EEPROM. Encode picks a size that fits when it is 0.
	EEPROMSize uint16
	Version    uint16 // word 0x3F
}

// EEPROMBytes returns the EEPROM size in bytes that EEPROMSize describes.
func (h *Header) EEPROMBytes() int { return (int(h.EEPROMSize) + 1) * 1024 / 8 }

// HasMailbox reports whether the standard mailbox has both a receive and a send area.
func (h *Header) HasMailbox() bool {
	return h.StandardMailbox.ReceiveSize != 0 && h.StandardMailbox.SendSize != 0
}

// decodeHeader decodes b[:HeaderSize]; the caller checks the length.
func decodeHeader(b []byte) Header {
	le := binary.LittleEndian
	h := Header{
		PDIControl:        le.Uint16(b[0x00:]),
		PDIConfig:         le.Uint16(b[0x02:]),
		SyncImpulseLength: le.Uint16(b[0x04:]),
		PDIConfig2:        le.Uint16(b[0x06:]),
		StationAlias:      le.Uint16(b[0x08:]),
		Checksum:          b[checksumOffset],
		Reserved07:        b[checksumOffset+1],
		Identity: Identity{
			VendorID:       le.Uint32(b[0x10:]),
			ProductCode:    le.Uint32(b[0x14:]),
			RevisionNumber: le.Uint32(b[0x18:]),
			SerialNumber:   le.Uint32(b[0x1C:]),
		},
		BootstrapMailbox: decodeMailbox(b[0x28:]),
		StandardMailbox:  decodeMailbox(b[0x30:]),
		MailboxProtocols: MailboxProtocols(le.Uint16(b[0x38:])),
		EEPROMSize:       le.Uint16(b[0x7C:]),
		Version:          le.Uint16(b[0x7E:]),
	}
	copy(h.Reserved05[:], b[0x0A:])
	copy(h.Reserved10[:], b[0x20:])
	copy(h.Reserved1D[:], b[0x3A:])
	return h
}

// put encodes h into b[:HeaderSize] with a freshly computed checksum.
func (h *Header) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint16(b[0x00:], h.PDIControl)
	le.PutUint16(b[0x02:], h.PDIConfig)
	le.PutUint16(b[0x04:], h.SyncImpulseLength)
	le.PutUint16(b[0x06:], h.PDIConfig2)
	le.PutUint16(b[0x08:], h.StationAlias)
	copy(b[0x0A:0x0E], h.Reserved05[:])
	b[checksumOffset] = CRC8(b[:checksumOffset])
	b[checksumOffset+1] = h.Reserved07
	le.PutUint32(b[0x10:], h.Identity.VendorID)
	le.PutUint32(b[0x14:], h.Identity.ProductCode)
	le.PutUint32(b[0x18:], h.Identity.RevisionNumber)
	le.PutUint32(b[0x1C:], h.Identity.SerialNumber)
	copy(b[0x20:0x28], h.Reserved10[:])
	h.BootstrapMailbox.put(b[0x28:])
	h.StandardMailbox.put(b[0x30:])
	le.PutUint16(b[0x38:], uint16(h.MailboxProtocols))
	copy(b[0x3A:0x7C], h.Reserved1D[:])
	le.PutUint16(b[0x7C:], h.EEPROMSize)
	le.PutUint16(b[0x7E:], h.Version)
}

func decodeMailbox(b []byte) Mailbox {
	le := binary.LittleEndian
	return Mailbox{
		ReceiveOffset: le.Uint16(b[0:]),
		ReceiveSize:   le.Uint16(b[2:]),
		SendOffset:    le.Uint16(b[4:]),
		SendSize:      le.Uint16(b[6:]),
	}
}

func (m Mailbox) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint16(b[0:], m.ReceiveOffset)
	le.PutUint16(b[2:], m.ReceiveSize)
	le.PutUint16(b[4:], m.SendOffset)
	le.PutUint16(b[6:], m.SendSize)
}
