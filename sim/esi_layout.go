package sim

import (
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/ethercat/sii"
)

// What an ESI file cannot carry of a real device's EEPROM: the layout of
// the image the vendor programmed at the factory. An ESI describes the
// device (identity, configuration words, mailbox, sync managers, FMMUs,
// PDOs, DC modes, names); the tools generate an image from it in their
// own order, while a real unit's EEPROM has the vendor's own: Beckhoff's
// private header words (the EK1100's 0x20–0x22), the General category's
// reserved byte 4, strings padded to a fixed category size and repeated
// (the EK1914's image name), a SyncUnit category between the sync managers
// and the PDOs. A master that reads the EEPROM reads that layout, so the
// profile table keeps the real unit's image, and a device from an ESI
// takes it when the ESI describes the same device as the profile: then
// the ESI and the table agree on everything ESI carries, and the bytes are
// the real unit's. An ESI that describes the device otherwise (another
// PDO, another name) keeps the image generated from it.

// esiLayoutNote is the Device.Notes line of an ESI device whose EEPROM
// bytes are the profile's.
const esiLayoutNote = "SII image: the real unit's layout from the profile table (private header words, string padding, SyncUnit category: what ESI does not carry); the ESI describes the same device"

// describedAlike reports whether two SII images describe the same device
// in everything an ESI file carries, and if not, the first difference.
func describedAlike(fromESI, real *sii.Device) (bool, string) {
	a, b := esiCarried(fromESI), esiCarried(real)
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return false, fmt.Sprintf("the ESI gives %s, the profile %s", a[i], b[i])
		}
	}
	if len(a) != len(b) {
		return false, fmt.Sprintf("the ESI describes %d items, the profile %d", len(a), len(b))
	}
	return true, ""
}

// esiCarried lists what of an SII image an ESI file carries, one item a
// line, strings by their text (without the padding of a fixed-size
// Strings category).
func esiCarried(d *sii.Device) []string {
	s := func(i uint8) string {
		v, _ := d.StringAt(i)
		return strings.TrimRight(v, " ")
	}
	h := d.Header
	out := []string{
		fmt.Sprintf("configuration words %#04x %#04x %#04x %#04x %#04x", h.PDIControl, h.PDIConfig, h.SyncImpulseLength, h.PDIConfig2, h.StationAlias),
		fmt.Sprintf("identity %+v", h.Identity),
		fmt.Sprintf("mailboxes %+v %+v protocols %#x", h.BootstrapMailbox, h.StandardMailbox, h.MailboxProtocols),
		fmt.Sprintf("EEPROM size %d", h.EEPROMSize),
	}
	if g := d.General; g != nil {
		out = append(out, fmt.Sprintf("order code %q group %q name %q", s(g.OrderIndex), s(g.GroupIndex), s(g.NameIndex)),
			fmt.Sprintf("CoE %#x FoE %#x EoE %#x SoE %d DS402 %d flags %#x E-bus %d mA ports %#04x",
				g.CoEDetails, g.FoEDetails, g.EoEDetails, g.SoEChannels, g.DS402Channels, g.Flags, g.EBusCurrent, g.PhysicalPorts))
	}
	out = append(out, fmt.Sprintf("FMMUs %v", d.FMMUs), fmt.Sprintf("sync managers %+v", d.SyncManagers))
	for _, set := range [][]sii.PDO{d.TxPDOs, d.RxPDOs} {
		for _, p := range set {
			out = append(out, fmt.Sprintf("PDO %#04x SM %d flags %#x %q", p.Index, p.SyncManager, p.Flags, s(p.NameIndex)))
			for _, e := range p.Entries {
				out = append(out, fmt.Sprintf("PDO %#04x entry %#04x:%02x %d bits type %#x %q", p.Index, e.Index, e.SubIndex, e.BitLength, e.DataType, s(e.NameIndex)))
			}
		}
	}
	return append(out, fmt.Sprintf("DC %+v", d.DC))
}
