package maintenance

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// SIIResult is an EEPROM dump (OpSIIRead) or what a write did (OpSIIWrite).
type SIIResult struct {
	Slave int `json:"slave"`
	// Data is the whole EEPROM (read only).
	Data HexBytes `json:"data,omitempty"`
	// Words is how many words a write changed; the others already held
	// their value (a write only).
	Words int `json:"words,omitempty"`
}

// AliasResult is the station alias after OpAlias, as the ESC reloaded it
// into register 0x0012.
type AliasResult struct {
	Slave int    `json:"slave"`
	Alias uint16 `json:"alias"`
}

// configAreaBytes is the SII's ESC configuration area: words 0–7, whose
// checksum is the low byte of word 7.
const configAreaBytes = 16

// checksumAt is the byte offset of the configuration area's checksum.
const checksumAt = 0x0E

func (h *Handler) siiRead(ctx context.Context, req Request) (*SIIResult, error) {
	s, err := h.slave(req.Slave)
	if err != nil {
		return nil, err
	}
	img, err := h.m.ReadEEPROM(ctx, s)
	if err != nil {
		return nil, err
	}
	return &SIIResult{Slave: req.Slave, Data: img}, nil
}

// CheckImage verifies an SII image before it is written: a whole number of
// words, a header with a correct checksum (CRC-8 of words 0–6 in the low
// byte of word 7) and categories that parse.
func CheckImage(img []byte) (*sii.Device, error) {
	if len(img) < sii.HeaderSize || len(img)%2 != 0 {
		return nil, fmt.Errorf("SII image of %d bytes: want an even number, at least %d", len(img), sii.HeaderSize)
	}
	if got, want := img[checksumAt], sii.CRC8(img[:checksumAt]); got != want {
		return nil, fmt.Errorf("SII image: configuration area checksum %#02x, want %#02x", got, want)
	}
	dev, err := sii.Parse(img)
	if err != nil {
		return nil, fmt.Errorf("SII image: %w", err)
	}
	return dev, nil
}

func (h *Handler) siiWrite(ctx context.Context, req Request, uid int) (*SIIResult, error) {
	s, err := h.slave(req.Slave)
	if err != nil {
		return nil, err
	}
	dev, err := CheckImage(req.Data)
	if err != nil {
		return nil, err
	}
	id := dev.Header.Identity
	if !req.Force && (id.VendorID != s.Identity.VendorID || id.ProductCode != s.Identity.ProductCode) {
		return nil, fmt.Errorf("SII image is of vendor %#08x product %#08x, %v is vendor %#08x product %#08x: refused without --force",
			id.VendorID, id.ProductCode, s, s.Identity.VendorID, s.Identity.ProductCode)
	}
	before, err := h.m.ReadEEPROM(ctx, s)
	if err != nil {
		return nil, err
	}
	if len(req.Data) > len(before) {
		return nil, fmt.Errorf("SII image of %d bytes does not fit the %d-byte EEPROM of %v", len(req.Data), len(before), s)
	}
	words := 0
	for i := 0; i < len(req.Data); i += 2 {
		if req.Data[i] != before[i] || req.Data[i+1] != before[i+1] {
			words++
		}
	}
	h.report(req.Slave, uid, fmt.Sprintf("sii write %d words", words))
	for i := 0; i < len(req.Data); i += 2 {
		if req.Data[i] == before[i] && req.Data[i+1] == before[i+1] {
			continue // spare the EEPROM's write endurance
		}
		if err := h.m.WriteEEPROM(ctx, s, uint16(i/2), req.Data[i:i+2]); err != nil {
			return nil, err
		}
	}
	if err := h.m.ReloadEEPROM(ctx, s); err != nil {
		return nil, err
	}
	return &SIIResult{Slave: req.Slave, Words: words}, nil
}

func (h *Handler) alias(ctx context.Context, req Request, uid int) (*AliasResult, error) {
	s, err := h.slave(req.Slave)
	if err != nil {
		return nil, err
	}
	area := make([]byte, configAreaBytes)
	if err := h.m.ReadEEPROMAt(ctx, s, 0, area); err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint16(area[8:], req.Alias)
	area[checksumAt] = sii.CRC8(area[:checksumAt])
	h.report(req.Slave, uid, fmt.Sprintf("alias %d", req.Alias))
	// Word 4 (the alias) and word 7 (the checksum) change.
	if err := h.m.WriteEEPROM(ctx, s, 4, area[8:10]); err != nil {
		return nil, err
	}
	if err := h.m.WriteEEPROM(ctx, s, 7, area[14:16]); err != nil {
		return nil, err
	}
	if err := h.m.ReloadEEPROM(ctx, s); err != nil {
		return nil, err
	}
	var b [2]byte
	if err := h.m.Bus().FPRD(ctx, s.StationAddress, uint16(esc.RegStationAlias), b[:]); err != nil {
		return nil, fmt.Errorf("%v: read station alias: %w", s, err)
	}
	return &AliasResult{Slave: req.Slave, Alias: binary.LittleEndian.Uint16(b[:])}, nil
}
