package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// ErrUnknownDevice is matched (errors.Is) by the error NewDevice returns for
// a spec that is neither a built-in model nor a readable SII image file.
var ErrUnknownDevice = errors.New("sim: unknown device")

// beckhoff is the EtherCAT vendor id of Beckhoff Automation.
const beckhoff = 0x00000002

// model is a built-in device model: how to build its SII image and what
// the simulator needs beyond the image.
type model struct {
	spec    deviceSpec
	product uint32
	image   func() *sii.Device
}

// builtinModels returns the built-in models, in the order Models lists them.
func builtinModels() []model {
	mcu := func(name string, c chip, objects func(*objectDictionary), analog analogRange) deviceSpec {
		return deviceSpec{name: name, chip: c, esmDelay: defaultESMDelay, mailboxDelay: defaultMailboxDelay,
			fw: fwBeckhoffTerminal, objects: objects, analog: analog}
	}
	ek1914Spec := mcu("EK1914", chipEK1914, ek1914Shipped, analogRange{})
	ek1914Spec.esmDelay, ek1914Spec.fw = 5, fwEK1914
	// The EL3004 clears 0x0502 bit 4 once in PREOP (issue 16, real EL3004s).
	el3004Spec := mcu("EL3004", chipET1200, el3004Objects, analogRange{-0x7FFF, 0x7FFF})
	el3004Spec.siiExtraUntil, el3004Spec.fw = esc.StatePreOp, fwEL3004
	return []model{
		{deviceSpec{name: "EK1100", chip: chipET1100}, 0x044C2C52, ek1100},
		{deviceSpec{name: "EK1110", chip: chipET1200, ports: 0x4E}, 0x04562C52, ek1110},
		{ek1914Spec, 0x077A2C52, ek1914},
		{deviceSpec{name: "EL1002", chip: chipET1200}, 0x03EA3052, func() *sii.Device { return digitalIn("EL1002", 2, 0x03EA3052, "3ms") }},
		{deviceSpec{name: "EL1004", chip: chipET1200}, 0x03EC3052, func() *sii.Device { return digitalIn("EL1004", 4, 0x03EC3052, "3ms") }},
		{deviceSpec{name: "EL1008", chip: chipET1200}, 0x03F03052, func() *sii.Device { return digitalIn("EL1008", 8, 0x03F03052, "3ms") }},
		{deviceSpec{name: "EL1014", chip: chipET1200}, 0x03F63052, func() *sii.Device { return digitalIn("EL1014", 4, 0x03F63052, "10\xb5s") }},
		// The EL2004 never sets 0x0502 bit 4 (issue 16, real EL2004s).
		{deviceSpec{name: "EL2004", chip: chipET1200, siiExtraUntil: esc.StateInit}, 0x07D43052,
			func() *sii.Device { return digitalOut("EL2004", 4, 0x07D43052) }},
		{deviceSpec{name: "EL2008", chip: chipET1200}, 0x07D83052, func() *sii.Device { return digitalOut("EL2008", 8, 0x07D83052) }},
		{el3004Spec, 0x0BBC3052, el3004},
		{mcu("EL3204", chipET1200, el3204Objects, analogRange{-500, 2500}), 0x0C843052, el3204},
		{mcu("EL4008", chipET1200, analogOutObjects(0x01411389), analogRange{}), 0x0FA83052,
			func() *sii.Device { return analogOut("EL4008", 8, 0x0FA83052) }},
		{mcu("EL4132", chipET1200, analogOutObjects(0x01411389), analogRange{}), 0x10243052,
			func() *sii.Device { return analogOut("EL4132", 2, 0x10243052) }},
		// A Kollmorgen AKD servo drive (CiA 402, see drive.go): its
		// vendor is not Beckhoff, specForImage knows it by identity.
		{akdSpec(), akdProduct, akd},
		// A Microchip LAN9252 evaluation board (see lan9252.go).
		{lan9252Spec(), lan9252Product, lan9252},
	}
}

// Models returns the names of the built-in device models.
func Models() []string {
	ms := builtinModels()
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.spec.name
	}
	return names
}

// NewDevice returns a new device for spec: a built-in model name (any
// case, e.g. "EK1100" or "el2004") or the path of an SII EEPROM image file
// (a 2 KiB dump such as ek1100.bin), from which identity, SyncManagers,
// process data sizes and mailbox are taken.
func NewDevice(spec string) (*Device, error) {
	for _, m := range builtinModels() {
		if strings.EqualFold(spec, m.spec.name) {
			img, err := sii.Encode(m.image())
			if err != nil {
				return nil, fmt.Errorf("sim: model %s: %w", m.spec.name, err)
			}
			return newDevice(img, m.spec)
		}
	}
	img, err := os.ReadFile(spec)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w %q: not a model (%s) nor an SII image file", ErrUnknownDevice, spec, strings.Join(Models(), ", "))
		}
		return nil, fmt.Errorf("sim: device %q: %w", spec, err)
	}
	return DeviceFromSII(img, filepath.Base(spec))
}

// DeviceFromSII returns a device whose EEPROM holds img. Its name is the
// SII order code, or fallback when the image has none. The controller is
// the one of the matching built-in model or known real device, else an
// ET1100-class controller for devices with a mailbox or more than 4 bytes
// of process data and an ET1200-class one for the others.
func DeviceFromSII(img []byte, fallback string) (*Device, error) {
	if len(img) < sii.HeaderSize+2 {
		return nil, fmt.Errorf("sim: SII image %q: %d bytes, too short", fallback, len(img))
	}
	desc, err := sii.Parse(img)
	var crc *sii.ChecksumError
	if err != nil && !errors.As(err, &crc) {
		return nil, fmt.Errorf("sim: SII image %q: %w", fallback, err)
	}
	spec := specForImage(desc)
	spec.name = desc.OrderCode()
	if spec.name == "" {
		spec.name = fallback
	}
	return newDevice(img, spec)
}

// specForImage picks the simulator's settings for a device known only by
// its SII.
func specForImage(desc *sii.Device) deviceSpec {
	id := desc.Header.Identity
	if id.VendorID == kollmorgen && id.ProductCode == akdProduct {
		return akdSpec() // any AKD image gets the drive behaviour
	}
	if id.VendorID == microchip && id.ProductCode == lan9252Product {
		return lan9252Spec()
	}
	for _, m := range builtinModels() {
		if id.VendorID == beckhoff && id.ProductCode == m.product {
			return m.spec
		}
	}
	if id.VendorID == beckhoff {
		switch id.ProductCode {
		case 0x0B0C3052: // EL2828
			return deviceSpec{chip: chipET1200}
		case 0x0B493052: // EL2889
			return deviceSpec{chip: chipEL2889}
		}
	}
	spec := deviceSpec{chip: chipET1200, esmDelay: defaultESMDelay, mailboxDelay: defaultMailboxDelay, fw: fwGeneric}
	if desc.Header.HasMailbox() || (desc.InputBits()+7)/8 > 4 || (desc.OutputBits()+7)/8 > 4 {
		spec.chip = chipET1100
	}
	return spec
}

// ParseDevices returns one new device per spec (see NewDevice).
func ParseDevices(specs []string) ([]*Device, error) {
	devs := make([]*Device, 0, len(specs))
	for i, s := range specs {
		d, err := NewDevice(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("device %d: %w", i+1, err)
		}
		devs = append(devs, d)
	}
	return devs, nil
}
