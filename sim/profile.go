package sim

import (
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// beckhoff is the EtherCAT vendor id of Beckhoff Automation.
const beckhoff = 0x00000002

// profileKey identifies one revision of one device: the identity of its
// SII (words 0x0008–0x000D) and of its CoE object 0x1018.
type profileKey struct{ vendor, product, revision uint32 }

// withRevision returns k with revision r.
func (k profileKey) withRevision(r uint32) profileKey {
	k.revision = r
	return k
}

func (k profileKey) String() string {
	return fmt.Sprintf("vendor %#08x product %#08x revision %#08x", k.vendor, k.product, k.revision)
}

// profile is what the simulator knows of one revision of a device, so that
// it answers as the real device of that revision does:
//
//   - image builds its SII EEPROM image (identity, strings, the
//     SyncManagers, the PDOs with their mapping and the assignment each
//     PDO's SyncManager entry gives); nil for a device the simulator knows
//     only when it comes with its own image (a file such as el2828.bin);
//   - spec.objects adds to the object dictionary built from the SII what
//     the SII does not carry (objects, the assignment the device ships
//     with, mappings of PDOs the SII does not list);
//   - spec.chip is its ESC: information block, configuration registers,
//     EEPROM interface and its timing;
//   - spec.fw is its application controller's timing distributions and
//     SyncManager behaviour;
//   - spec.app its application (a drive), if any.
//
// A profile can come from an ESI file (which gives the image and the
// dictionary) plus the few facts ESI does not carry (chip, firmware).
type profile struct {
	key   profileKey
	image func() *sii.Device
	spec  deviceSpec
}

// newDevice builds a device from the profile's image; note says how the
// profile was chosen when not for the exact identity asked for.
func (p profile) newDevice(note string) (*Device, error) {
	img, err := sii.Encode(p.image())
	if err != nil {
		return nil, fmt.Errorf("sim: model %s: %w", p.spec.name, err)
	}
	d, err := newDevice(img, p.spec)
	if err != nil {
		return nil, err
	}
	d.note = note
	return d, nil
}

// builtinProfiles returns the simulator's profiles. Of the profiles with
// the same name the first is the one the bare name selects (the newest
// revision); Models lists the names in this order.
func builtinProfiles() []profile {
	mcu := func(name string, c chip, objects func(*objectDictionary), analog analogRange) deviceSpec {
		return deviceSpec{name: name, chip: c, esmDelay: defaultESMDelay, mailboxDelay: defaultMailboxDelay,
			fw: fwBeckhoffTerminal, objects: objects, analog: analog}
	}
	ek1914Spec := mcu("EK1914", chipEK1914, nil, analogRange{})
	ek1914Spec.esmDelay, ek1914Spec.fw = 5, fwEK1914
	// The EL3004 clears 0x0502 bit 4 once in PREOP (issue 16, real EL3004s).
	el3004Spec := mcu("EL3004", chipET1200, el3004Objects, analogRange{-0x7FFF, 0x7FFF})
	el3004Spec.siiExtraUntil, el3004Spec.fw = esc.StatePreOp, fwEL3004
	bk := func(product, revision uint32) profileKey { return profileKey{beckhoff, product, revision} }
	return []profile{
		{bk(0x044C2C52, 0x00120000), ek1100, deviceSpec{name: "EK1100", chip: chipET1100}},
		{bk(0x04562C52, 0x00110000), ek1110, deviceSpec{name: "EK1110", chip: chipET1200, ports: 0x4E}},
		{bk(0x077A2C52, 0x00120000), ek1914, ek1914Spec},
		{bk(0x03EA3052, 0x00130000), func() *sii.Device { return digitalIn("EL1002", 2, 0x03EA3052, "3ms") },
			deviceSpec{name: "EL1002", chip: chipET1200}},
		{bk(0x03EC3052, 0x00130000), func() *sii.Device { return digitalIn("EL1004", 4, 0x03EC3052, "3ms") },
			deviceSpec{name: "EL1004", chip: chipET1200}},
		{bk(0x03F03052, 0x00130000), func() *sii.Device { return digitalIn("EL1008", 8, 0x03F03052, "3ms") },
			deviceSpec{name: "EL1008", chip: chipET1200}},
		{bk(0x03F63052, 0x00130000), func() *sii.Device { return digitalIn("EL1014", 4, 0x03F63052, "10\xb5s") },
			deviceSpec{name: "EL1014", chip: chipET1200}},
		// The EL2004 never sets 0x0502 bit 4 (issue 16, real EL2004s).
		{bk(0x07D43052, 0x00100000), func() *sii.Device { return digitalOut("EL2004", 4, 0x07D43052) },
			deviceSpec{name: "EL2004", chip: chipET1200, siiExtraUntil: esc.StateInit}},
		{bk(0x07D83052, 0x00100000), func() *sii.Device { return digitalOut("EL2008", 8, 0x07D83052) },
			deviceSpec{name: "EL2008", chip: chipET1200}},
		{bk(0x0BBC3052, 0x00150000), func() *sii.Device { return el3004(0x00150000) }, el3004Spec},
		{bk(0x0BBC3052, 0x00110000), func() *sii.Device { return el3004(0x00110000) }, el3004Spec},
		{bk(0x0C843052, 0x00140000), el3204, mcu("EL3204", chipET1200, el3204Objects, analogRange{-500, 2500})},
		{bk(0x0FA83052, 0x00140000), func() *sii.Device { return analogOut("EL4008", 8, 0x0FA83052) },
			mcu("EL4008", chipET1200, analogOutObjects(0x01411389), analogRange{})},
		{bk(0x10243052, 0x00140000), func() *sii.Device { return analogOut("EL4132", 2, 0x10243052) },
			mcu("EL4132", chipET1200, analogOutObjects(0x01411389), analogRange{})},
		// A Kollmorgen AKD servo drive (CiA 402, see drive.go).
		{profileKey{kollmorgen, akdProduct, 2}, akd, akdSpec()},
		// A Microchip LAN9252 evaluation board (see lan9252.go).
		{profileKey{microchip, lan9252Product, 1}, lan9252, lan9252Spec()},
		// Devices known from their own SII image only (testdata/real-hw/sii).
		{bk(0x0B0C3052, 0x00110000), nil, deviceSpec{name: "EL2828", chip: chipET1200}},
		{bk(0x0B493052, 0x00110000), nil, deviceSpec{name: "EL2889", chip: chipEL2889}},
	}
}

// profileByName returns the first built-in profile with an image named
// name (any case).
func profileByName(name string) (profile, bool) {
	for _, p := range builtinProfiles() {
		if p.image != nil && strings.EqualFold(name, p.spec.name) {
			return p, true
		}
	}
	return profile{}, false
}

// lookupProfile returns the profile of k: the exact revision's, else the
// nearest known revision's of the same vendor and product with a note
// saying so; a zero profile when the simulator knows no revision of the
// device.
func lookupProfile(k profileKey) (profile, string) {
	var best profile
	var bestDist uint64
	found := false
	for _, p := range builtinProfiles() {
		if p.key.vendor != k.vendor || p.key.product != k.product {
			continue
		}
		if p.key.revision == k.revision {
			return p, ""
		}
		dist := uint64(max(p.key.revision, k.revision) - min(p.key.revision, k.revision))
		// Nearest first; of two as near, the newer.
		if !found || dist < bestDist || dist == bestDist && p.key.revision > best.key.revision {
			best, bestDist, found = p, dist, true
		}
	}
	if !found {
		return profile{}, ""
	}
	if best.image == nil {
		return best, fmt.Sprintf("%s revision %#08x: no profile, that of revision %#08x instead",
			best.spec.name, k.revision, best.key.revision)
	}
	// The built-in image carries the revision asked for; the rest is the
	// nearest revision's.
	img := best.image
	best.image = func() *sii.Device {
		d := img()
		d.Header.Identity.RevisionNumber = k.revision
		return d
	}
	return best, fmt.Sprintf("%s revision %#08x: no profile, that of revision %#08x instead",
		best.spec.name, k.revision, best.key.revision)
}

// ProfileNote says how the simulator chose the device's profile when it
// has none for the device's exact identity and revision (the nearest
// revision's, e.g. "EL3004 revision 0x00130000: no profile, that of
// revision 0x00150000 instead"), and is "" otherwise.
func (d *Device) ProfileNote() string { return d.note }
