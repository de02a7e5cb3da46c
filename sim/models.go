package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ecagent/ecagent/ethercat/sii"
)

// ErrUnknownDevice is matched (errors.Is) by the error NewDevice returns for
// a spec that is neither a built-in model nor a readable SII image file.
var ErrUnknownDevice = errors.New("sim: unknown device")

// Models returns the names of the built-in device models.
func Models() []string {
	var names []string
	for _, p := range builtinProfiles() {
		if p.image != nil && !slices.Contains(names, p.spec.name) {
			names = append(names, p.spec.name)
		}
	}
	return names
}

// NewDevice returns a new device for spec: a built-in model name (any
// case, e.g. "EK1100" or "el2004"), optionally with the revision after an
// @ ("EL3004@0x00110000"; without one the newest profile of the model),
// or the path of an SII EEPROM image file (a 2 KiB dump such as
// ek1100.bin), from which identity, SyncManagers, process data sizes and
// mailbox are taken, or a device of an ESI file,
// FILE.xml[:DEVICE][@REVISION] (see NewESIDevice). A revision the
// simulator has no profile of gets the nearest known one's, and the device
// says so (Device.ProfileNote).
func NewDevice(spec string) (*Device, error) {
	if IsESISpec(spec) { // FILE.xml[:DEVICE][@REVISION], see esi.go
		return NewESIDevice(spec)
	}
	name, rev, hasRev := strings.Cut(spec, "@")
	if p, ok := profileByName(name); ok {
		note := ""
		if hasRev {
			r, err := strconv.ParseUint(rev, 0, 32)
			if err != nil {
				return nil, fmt.Errorf("%w %q: revision %q: want a number such as 0x00150000", ErrUnknownDevice, spec, rev)
			}
			p, note = lookupProfile(p.key.withRevision(uint32(r)))
		}
		return p.newDevice(note)
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
	d, err := newDevice(img, spec)
	if err != nil {
		return nil, err
	}
	d.note = profileNoteFor(desc)
	return d, nil
}

// specForImage picks the simulator's settings for a device known only by
// its SII: the profile of its identity (the nearest known revision's; see
// profileNoteFor), else a generic controller.
func specForImage(desc *sii.Device) deviceSpec {
	if p, _ := lookupProfile(keyOf(desc)); p.spec.name != "" {
		return p.spec
	}
	spec := deviceSpec{chip: chipET1200, esmDelay: defaultESMDelay, mailboxDelay: defaultMailboxDelay, fw: fwGeneric}
	if desc.Header.HasMailbox() || (desc.InputBits()+7)/8 > 4 || (desc.OutputBits()+7)/8 > 4 {
		spec.chip = chipET1100
	}
	return spec
}

// keyOf returns the profile key of a device's SII identity.
func keyOf(desc *sii.Device) profileKey {
	id := desc.Header.Identity
	return profileKey{id.VendorID, id.ProductCode, id.RevisionNumber}
}

// profileNoteFor says which profile specForImage gave desc when it is not
// the one of its exact revision, else "".
func profileNoteFor(desc *sii.Device) string {
	_, note := lookupProfile(keyOf(desc))
	return note
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
