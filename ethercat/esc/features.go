package esc

import "encoding/binary"

// Feature bits of register 0x0008 (ESC features supported).
const (
	FeatureFMMUBitOperation  = 0x0001 // 0 means bit-wise mapping is supported
	FeatureDC                = 0x0004 // distributed clocks available
	FeatureDC64              = 0x0008 // 64-bit system time
	FeatureLowJitterEBUS     = 0x0010
	FeatureEnhancedLink      = 0x0020 // enhanced link detection EBUS
	FeatureEnhancedLinkMII   = 0x0040
	FeatureFCSSeparate       = 0x0080
	FeatureEnhancedDCSync    = 0x0100
	FeatureLRWNotSupported   = 0x0200
	FeatureRWNotSupported    = 0x0400 // BRW, APRW, FPRW not supported
	FeatureFixedFMMUSMConfig = 0x0800
)

// InfoLen is the size of the ESC information block 0x0000–0x0009.
const InfoLen = 10

// Info is the ESC information block at 0x0000: controller type and what it
// supports.
type Info struct {
	Type           uint8
	Revision       uint8
	Build          uint16
	FMMUs          uint8
	SyncManagers   uint8
	RAMSizeKiB     uint8
	PortDescriptor uint8 // 2 bits per port: 0 not implemented, 1 not configured, 2 EBUS, 3 MII
	Features       uint16
}

// DecodeInfo reads the information block from b (at least InfoLen bytes).
func DecodeInfo(b []byte) Info {
	return Info{
		Type: b[0], Revision: b[1], Build: binary.LittleEndian.Uint16(b[2:]),
		FMMUs: b[4], SyncManagers: b[5], RAMSizeKiB: b[6], PortDescriptor: b[7],
		Features: binary.LittleEndian.Uint16(b[8:]),
	}
}

// Encode writes i into b (at least InfoLen bytes).
func (i Info) Encode(b []byte) {
	b[0], b[1] = i.Type, i.Revision
	binary.LittleEndian.PutUint16(b[2:], i.Build)
	b[4], b[5], b[6], b[7] = i.FMMUs, i.SyncManagers, i.RAMSizeKiB, i.PortDescriptor
	binary.LittleEndian.PutUint16(b[8:], i.Features)
}

// HasDC reports whether the ESC has distributed clocks.
func (i Info) HasDC() bool { return i.Features&FeatureDC != 0 }

// Port returns port p's physical type from the port descriptor (0 not
// implemented, 1 not configured, 2 EBUS, 3 MII/RMII/RGMII).
func (i Info) Port(p int) uint8 { return i.PortDescriptor >> (2 * p) & 3 }
