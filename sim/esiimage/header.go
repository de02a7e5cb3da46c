package esiimage

import (
	"encoding/binary"

	"github.com/ecagent/ecagent/ethercat/esi"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// ESC configuration bits of SII word 0 (the high byte, ESC register
// 0x0141) that the header sets when the ESI gives no ConfigData.
const (
	escDeviceEmulation = 0x01 // the ESC mirrors AL control: no application controller
	escSyncOutputs     = 0x0C // SYNC0 and SYNC1 driven out: the device has DC
)

// PDI control values (SII word 0, low byte) used without ConfigData.
const (
	pdiDigitalIO = 0x05 // a simple device: the ESC drives its I/O
	pdiSPI       = 0x08 // a device with a microcontroller behind the ESC
)

// header builds the SII header: words 0x00–0x07 from Eeprom/ConfigData
// (the checksum in word 7 computed by sii.Encode)
// (else a PDI and ESC configuration that fits the description), the
// identity, the bootstrap mailbox from Eeprom/BootStrap, the standard
// mailbox from the mailbox sync managers, the protocols and the EEPROM
// size from Eeprom/ByteSize.
func (b *builder) header(vendor uint32) sii.Header {
	dev := b.dev
	var raw [sii.HeaderSize]byte
	ee := dev.EEPROM
	if ee != nil && len(ee.ConfigData) > 0 {
		// Words 0-7; the low byte of word 7 is the checksum, computed.
		if n := copy(raw[:0x10], ee.ConfigData); len(ee.ConfigData) > n {
			b.note("Eeprom/ConfigData: %d bytes, the header's configuration area is words 0-7 (16 bytes): the rest is not written", len(ee.ConfigData))
		}
	} else {
		b.note("no Eeprom/ConfigData: PDI and ESC configuration chosen from the description")
		le := binary.LittleEndian
		ctl := uint16(pdiDigitalIO) | escDeviceEmulation<<8
		if dev.Mailbox != nil {
			ctl = pdiSPI
		}
		if hasDC(dev) {
			ctl |= escSyncOutputs << 8
		}
		le.PutUint16(raw[0:], ctl)
	}
	le := binary.LittleEndian
	h := sii.Header{
		PDIControl:        le.Uint16(raw[0x00:]),
		PDIConfig:         le.Uint16(raw[0x02:]),
		SyncImpulseLength: le.Uint16(raw[0x04:]),
		PDIConfig2:        le.Uint16(raw[0x06:]),
		StationAlias:      le.Uint16(raw[0x08:]),
		Identity:          sii.Identity{VendorID: vendor, ProductCode: dev.ProductCode, RevisionNumber: dev.RevisionNo},
		Version:           1,
	}
	copy(h.Reserved05[:], raw[0x0A:0x0E])
	h.Reserved07 = raw[0x0F]
	if ee != nil && len(ee.BootStrap) >= 8 {
		h.BootstrapMailbox = sii.Mailbox{
			ReceiveOffset: le.Uint16(ee.BootStrap[0:]), ReceiveSize: le.Uint16(ee.BootStrap[2:]),
			SendOffset: le.Uint16(ee.BootStrap[4:]), SendSize: le.Uint16(ee.BootStrap[6:]),
		}
	} else if ee != nil && len(ee.BootStrap) > 0 {
		b.note("Eeprom/BootStrap: %d bytes, the bootstrap mailbox needs 8: not written", len(ee.BootStrap))
	}
	if dev.Mailbox != nil {
		for _, s := range dev.SyncManagers {
			size := s.DefaultSize
			if size == 0 {
				size = max(s.MinSize, s.MaxSize)
			}
			switch s.Type {
			case esi.SMMailboxOut:
				h.StandardMailbox.ReceiveOffset, h.StandardMailbox.ReceiveSize = s.StartAddress, size
			case esi.SMMailboxIn:
				h.StandardMailbox.SendOffset, h.StandardMailbox.SendSize = s.StartAddress, size
			}
		}
		h.MailboxProtocols = sii.MailboxProtocols(dev.Mailbox.Protocols)
		if dev.Mailbox.CoE != nil {
			h.MailboxProtocols |= sii.ProtocolCoE
		}
	}
	if ee != nil && ee.ByteSize >= 128 {
		h.EEPROMSize = uint16(ee.ByteSize*8/1024 - 1)
	}
	return h
}

// hasDC reports whether the device offers a DC mode that activates SYNC
// signals.
func hasDC(dev *esi.Device) bool {
	if dev.DC == nil {
		return false
	}
	for _, m := range dev.DC.OpModes {
		if m.AssignActivate != 0 {
			return true
		}
	}
	return false
}
