package sim

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/ecagent/ecagent/ethercat/esi"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/sim/esiimage"
)

// Devices from ESI files: a --devices entry FILE.xml[:DEVICE][@REVISION]
// names a device of its vendor's description, which the simulator serves
// without a model of its own: the SII image generated from the description
// (sim/esiimage), and for a device with CoE the object dictionary the
// description gives, with its defaults and access rights, over the one
// derived from the SII.

// ErrESIDevice is matched (errors.Is) by the errors of NewESIDevice for a
// file that does not describe the device asked for, or describes several
// when the entry does not say which.
var ErrESIDevice = errors.New("sim: no such device in the ESI file")

// IsESISpec reports whether a --devices entry names a device of an ESI
// file: a path ending in .xml (any case), optionally followed by
// :DEVICE and @REVISION (the revision spelt as for the built-in models,
// EL3004@0x00150000).
func IsESISpec(spec string) bool {
	i := strings.LastIndex(strings.ToLower(spec), ".xml")
	if i < 0 {
		return false
	}
	rest := spec[i+4:]
	return rest == "" || rest[0] == ':' || rest[0] == '@' // a malformed rest is NewESIDevice's error to tell
}

// splitESISpec splits FILE.xml[:DEVICE][@REVISION].
func splitESISpec(spec string) (path, device, revision string, ok bool) {
	lower := strings.ToLower(spec)
	i := strings.LastIndex(lower, ".xml")
	if i < 0 {
		return "", "", "", false
	}
	path, rest := spec[:i+4], spec[i+4:]
	rest, revision, hasRev := strings.Cut(rest, "@")
	switch {
	case hasRev && revision == "":
		return "", "", "", false
	case rest == "":
		return path, "", revision, true
	case rest[0] != ':' || strings.Contains(rest[1:], ":"):
		return "", "", "", false
	}
	return path, rest[1:], revision, true
}

// NewESIDevice returns a device described in an ESI file. spec is
// FILE.xml[:DEVICE][@REVISION]: DEVICE is the device's order code as the
// file's Type element writes it (EL3102, any case) or its product code
// (#x0C1E3052, 0x0C1E3052 or decimal); REVISION its revision number
// (same forms). Without DEVICE the file must describe one product; without
// REVISION the highest revision of it is taken. The file is streamed one
// device at a time, so a vendor's whole catalogue file is fine.
//
// What of the description the SII image cannot hold is listed by
// [Device.Notes].
func NewESIDevice(spec string) (*Device, error) {
	path, sel, rev, ok := splitESISpec(spec)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not FILE.xml[:DEVICE][@REVISION], e.g. acme.xml:AI2@#x00110000", ErrESIDevice, spec)
	}
	want, err := parseESISelector(sel, rev)
	if err != nil {
		return nil, fmt.Errorf("sim: device %q: %w", spec, err)
	}
	file, dev, err := findESIDevice(path, want)
	if err != nil {
		return nil, fmt.Errorf("sim: device %q: %w", spec, err)
	}
	return DeviceFromESI(file, dev)
}

// DeviceFromESI returns a device built from dev, a device description of
// file (whose vendor and groups it takes).
func DeviceFromESI(file *esi.File, dev *esi.Device) (*Device, error) {
	img, err := esiimage.Build(file, dev)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	spec := specForImage(img.Device)
	spec.name = dev.Type
	if spec.name == "" {
		spec.name = fmt.Sprintf("%#08x", dev.ProductCode)
	}
	spec.notes = img.Notes
	spec.notes = append(spec.notes, fileWarnings(file.Warnings)...)
	if dict := dev.Dictionary(); dict != nil {
		model := spec.objects
		from := esiDictionary{dict: dict}
		spec.objects = func(od *objectDictionary) {
			if model != nil {
				model(od)
			}
			from.apply(od)
		}
		spec.notes = append(spec.notes, from.check()...)
	}
	bytes := img.Bytes
	if p, note := lookupProfile(keyOf(img.Device)); note == "" && p.image != nil {
		// The real unit's layout where the ESI describes the same device
		// (see esi_layout.go).
		real := p.image()
		if same, why := describedAlike(img.Device, real); !same {
			spec.notes = append(spec.notes, "SII image generated from the ESI, not the real unit's layout of the profile table: "+why)
		} else if b, err := sii.Encode(real); err == nil {
			bytes = b
			spec.notes = append(spec.notes, esiLayoutNote)
		}
	}
	d, err := newDevice(bytes, spec)
	if err != nil {
		return nil, err
	}
	d.note = profileNoteFor(img.Device)
	return d, nil
}

// maxWarningNotes bounds the reader's warnings a device's notes repeat:
// a vendor's catalogue file may hold many kinds of content the reader
// does not take.
const maxWarningNotes = 10

// fileWarnings returns the reader's warnings about the file as notes.
func fileWarnings(ws []esi.Warning) []string {
	var out []string
	for i, w := range ws {
		if i == maxWarningNotes {
			out = append(out, fmt.Sprintf("and %d more things the ESI reader did not take", len(ws)-i))
			break
		}
		out = append(out, "ESI file: "+w.String())
	}
	return out
}

// Notes lists what the description a device was built from holds that
// the simulated device does not honour (see sim/esiimage), nil for a
// built-in model or an SII image.
func (d *Device) Notes() []string { return append([]string(nil), d.spec.notes...) }

// esiSelector is the device a spec asks for.
type esiSelector struct {
	order      string // order code, "" for any
	product    uint32
	hasProduct bool
	revision   uint32
	hasRev     bool
}

func (s esiSelector) String() string {
	var b strings.Builder
	switch {
	case s.order != "":
		b.WriteString(s.order)
	case s.hasProduct:
		fmt.Fprintf(&b, "product %#08x", s.product)
	default:
		b.WriteString("a device")
	}
	if s.hasRev {
		fmt.Fprintf(&b, " revision %#08x", s.revision)
	}
	return b.String()
}

// parseESISelector reads DEVICE and REVISION of a spec.
func parseESISelector(device, revision string) (esiSelector, error) {
	var s esiSelector
	if device != "" {
		if v, err := parseESINumber(device); err == nil {
			s.product, s.hasProduct = v, true
		} else {
			s.order = device
		}
	}
	if revision != "" {
		v, err := parseESINumber(revision)
		if err != nil {
			return s, fmt.Errorf("revision %q: write it as #x hex (#x00110000), 0x hex or decimal", revision)
		}
		s.revision, s.hasRev = v, true
	}
	return s, nil
}

// matches reports whether d is a device s asks for, revision aside.
func (s esiSelector) matches(d *esi.Device) bool {
	switch {
	case s.order != "":
		return strings.EqualFold(strings.TrimSpace(d.Type), s.order)
	case s.hasProduct:
		return d.ProductCode == s.product
	}
	return true
}

// findESIDevice streams the file and returns the device s asks for.
func findESIDevice(path string, s esiSelector) (*esi.File, *esi.Device, error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("ESI file: %w", err)
	}
	defer r.Close()
	var (
		best     *esi.Device
		products = map[uint32]string{} // the products that match, for the error
		seen     []string              // every device, for the error
	)
	head, err := esi.Scan(r, path, esi.Options{}, func(_ *esi.File, d *esi.Device) error {
		seen = append(seen, fmt.Sprintf("%s (product %#08x revision %#08x)", d.Type, d.ProductCode, d.RevisionNo))
		if !s.matches(d) {
			return nil
		}
		products[d.ProductCode] = d.Type
		switch {
		case s.hasRev && d.RevisionNo == s.revision:
			best = d
		case !s.hasRev && (best == nil || d.ProductCode == best.ProductCode && d.RevisionNo > best.RevisionNo):
			best = d
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(products) > 1 {
		var list []string
		for p, t := range products {
			list = append(list, fmt.Sprintf("%s (%#08x)", t, p))
		}
		sort.Strings(list)
		return nil, nil, fmt.Errorf("%w: %s describes %d products (%s): name one, FILE.xml:DEVICE[@REVISION]",
			ErrESIDevice, path, len(products), strings.Join(list, ", "))
	}
	if best == nil {
		return nil, nil, fmt.Errorf("%w: %s describes no %s; it describes %s", ErrESIDevice, path, s, listOrNone(seen))
	}
	return head, best, nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "no device"
	}
	if len(s) > 12 {
		return strings.Join(s[:12], ", ") + fmt.Sprintf(" and %d more", len(s)-12)
	}
	return strings.Join(s, ", ")
}

// parseESINumber reads a product code or revision as ESI files and tools
// write them: #x hex, 0x hex or decimal.
func parseESINumber(s string) (uint32, error) {
	switch {
	case strings.HasPrefix(s, "#x"), strings.HasPrefix(s, "#X"), strings.HasPrefix(s, "0x"), strings.HasPrefix(s, "0X"):
		v, err := strconv.ParseUint(s[2:], 16, 32)
		return uint32(v), err
	}
	v, err := strconv.ParseUint(s, 10, 32)
	return uint32(v), err
}

// ModelIdentity returns the identity (vendor, product, revision) of the
// profile a built-in model spec names ("EL3004", "EL3004@0x00110000"), so
// that its description can be looked up in an ESI catalogue; ok is false
// for a spec that names no built-in model (an SII image, an ESI file).
func ModelIdentity(spec string) (vendor, product, revision uint32, ok bool) {
	if IsESISpec(spec) {
		return 0, 0, 0, false
	}
	name, rev, hasRev := strings.Cut(strings.TrimSpace(spec), "@")
	p, found := profileByName(name)
	if !found {
		return 0, 0, 0, false
	}
	if hasRev {
		r, err := strconv.ParseUint(rev, 0, 32)
		if err != nil {
			return 0, 0, 0, false
		}
		p.key.revision = uint32(r)
	}
	return p.key.vendor, p.key.product, p.key.revision, true
}
