package esi

import (
	"errors"
	"fmt"
)

// ErrNotFound is matched (errors.Is) by Lookup's error for a product the
// catalogue has no description of.
var ErrNotFound = errors.New("no ESI describes the device")

// Match is the answer of Catalog.Lookup: the description found and how
// well it matches.
type Match struct {
	// Device is the description, shared by every Match of the same device:
	// read it, do not change it.
	Device *Device
	File   *File // the file it came from: name, vendor and groups (no Devices)
	Asked  Key
	Found  Key
	Exact  bool
	// Note says, when the match is not exact, which revision is used
	// instead of the one asked for and why; "" for an exact match.
	Note string
}

// Group returns the device's group from its file, nil when the file has
// none of its GroupType.
func (m Match) Group() *Group {
	if m.File == nil || m.Device == nil {
		return nil
	}
	for i := range m.File.Groups {
		if m.File.Groups[i].Type == m.Device.GroupType {
			return &m.File.Groups[i]
		}
	}
	return nil
}

// beckhoff is the vendor id of Beckhoff Automation, whose revision
// numbers carry the device variant (the order code's -00xx) in the low
// word and the revision in the high word.
const beckhoff = 0x00000002

// Lookup finds the description of a device by vendor id, product code and
// revision. Without one of that revision it takes the nearest revision of
// the same product: the highest older one, else the lowest newer one; for
// Beckhoff devices, among those of the same variant (low word) first. The
// Match says which it took. The error is ErrNotFound when the catalogue
// describes no such product, or says why the device could not be read
// again from its file.
func (c *Catalog) Lookup(vendor, product, revision uint32) (Match, error) {
	asked := Key{vendor, product, revision}
	list := c.byProduct[[2]uint32{vendor, product}]
	if len(list) == 0 {
		return Match{Asked: asked}, fmt.Errorf("esi: %w: %s, in %d devices of %d files", ErrNotFound, asked, c.devices, len(c.files))
	}
	cands := list
	if vendor == beckhoff {
		var same []*catalogEntry
		for _, e := range list {
			if e.rev&0xFFFF == revision&0xFFFF {
				same = append(same, e)
			}
		}
		if len(same) > 0 {
			cands = same
		}
	}
	best, older := nearest(cands, revision)
	d, err := c.device(vendor, best)
	if err != nil {
		return Match{Asked: asked}, err
	}
	m := Match{Device: d, File: best.file.header, Asked: asked, Found: Key{vendor, product, best.rev}, Exact: best.rev == revision}
	if !m.Exact {
		which := "the nearest newer one: no older one is described"
		if older {
			which = "the nearest older one"
		}
		m.Note = fmt.Sprintf("no description of %s revision %#08x; using revision %#08x from %s line %d, %s",
			best.typ, revision, best.rev, best.file.header.Name, best.line, which)
	}
	return m, nil
}

// nearest returns the entry of revision rev, else the highest below it
// (older true), else the lowest above it; list is sorted by revision.
func nearest(list []*catalogEntry, rev uint32) (*catalogEntry, bool) {
	best := -1
	for i, e := range list {
		if e.rev <= rev {
			best = i
		}
	}
	if best >= 0 {
		return list[best], list[best].rev != rev
	}
	return list[0], false
}
