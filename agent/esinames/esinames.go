// Package esinames names the process data of the devices found on the bus
// from their vendors' ESI files (bus.esi, --esi): the agent reads the
// files once at start, indexes their devices by identity, and gives each
// PDO entry of the bus description the cycle process wrote
// (contract.BusInfo) the name, data type and unit the ESI gives it
// where the device's own SII gives none, and each slave its order code
// and name where the SII has none. MQTT, Sparkplug, the metrics' slave
// labels and the toolbox then show them. The cycle process never reads an
// ESI: XML stays out of the real-time process.
package esinames

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esi"
)

// Catalog is the ESI device descriptions of bus.esi, indexed by identity.
type Catalog struct {
	cat   *esi.Catalog
	files int
}

// Load indexes every ESI file (*.xml, any case) of paths: directories,
// searched below, and files. A file that cannot be read or is not a valid
// ESI is left out; its error is returned with the others, joined, together
// with the catalogue of the rest, so that one broken vendor file does not
// take the names of the others away. Files that are XML but not ESI are
// skipped silently, as TwinCAT's ESI folder holds some.
func Load(paths []string) (*Catalog, error) {
	c := &Catalog{cat: esi.NewCatalog(esi.Options{})}
	var errs []error
	add := func(path string) {
		c.files++
		if err := c.cat.AddFile(path); err != nil && !errors.Is(err, esi.ErrRoot) {
			errs = append(errs, err)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("esi: %w", err))
			continue
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, de fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, fmt.Errorf("esi: %w", err))
				return nil
			}
			if !de.IsDir() && strings.EqualFold(filepath.Ext(path), ".xml") {
				add(path)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("esi: %s: %w", p, err))
		}
	}
	return c, errors.Join(errs...)
}

// Devices is the number of device descriptions indexed, Files the number
// of files read.
func (c *Catalog) Devices() int { return c.cat.Len() }

// Files is the number of ESI files read (those with errors included).
func (c *Catalog) Files() int { return c.files }

// Warnings lists what the files hold that the reader does not take.
func (c *Catalog) Warnings() []esi.Warning { return c.cat.Warnings() }

// Annotate names the slaves and signals of info from their ESI
// descriptions, in place, and returns one note per slave saying what it
// took from where (or that no ESI describes it, or that another revision's
// description was used).
func (c *Catalog) Annotate(info *contract.BusInfo) []string {
	if c == nil || info == nil {
		return nil
	}
	var notes []string
	for i := range info.Slaves {
		s := &info.Slaves[i]
		m, err := c.cat.Lookup(s.VendorID, s.ProductCode, s.Revision)
		if err != nil {
			if !errors.Is(err, esi.ErrNotFound) {
				notes = append(notes, fmt.Sprintf("slave %d: %v", s.Position, err))
			}
			continue
		}
		n := annotateSlave(s, m.Device)
		note := fmt.Sprintf("slave %d (%s): %d of %d signals named, typed or given a unit from %s", s.Position, m.Device.Type, n, len(s.Signals), m.File.Name)
		if m.Note != "" {
			note += "; " + m.Note
		}
		notes = append(notes, note)
	}
	return notes
}

// annotateSlave fills what the SII left empty; it returns how many signals
// it changed.
func annotateSlave(s *contract.SlaveInfo, dev *esi.Device) int {
	if s.OrderCode == "" {
		s.OrderCode = dev.Type
	}
	if s.Name == "" {
		s.Name = dev.Name.String()
	}
	changed := 0
	for k := range s.Signals {
		sig := &s.Signals[k]
		pdo, entry := findEntry(dev, sig)
		before := *sig
		if pdo != nil && sig.PDOName == "" {
			sig.PDOName = pdo.Name.String()
		}
		if entry != nil {
			if unnamed(sig) && entry.Name.String() != "" {
				sig.Name = entry.Name.String()
			}
			if sig.DataType == 0 {
				if t, ok := coe.TypeByName(entry.DataType); ok && t <= 0xFF {
					sig.DataType = uint8(t)
				}
			}
		}
		if o := dev.Dictionary().Object(sig.Index); o != nil {
			if e := o.Entry(sig.SubIndex); e != nil {
				if unnamed(sig) && e.Name != "" {
					sig.Name = e.Name
				}
				if sig.DataType == 0 {
					if t, ok := coe.TypeByName(e.BaseType); ok && t <= 0xFF {
						sig.DataType = uint8(t)
					}
				}
				if sig.Unit == "" {
					sig.Unit = UnitText(unitOf(o, e))
				}
			}
		}
		if *sig != before {
			changed++
		}
	}
	return changed
}

// unnamed reports whether the SII gave sig no name: the cycle process
// then names it by index, 0x6000:11.
func unnamed(sig *contract.SignalInfo) bool {
	return sig.Name == "" || sig.Name == fmt.Sprintf("0x%04X:%02X", sig.Index, sig.SubIndex)
}

// findEntry finds the ESI's description of a mapped entry: in the PDO of
// its index and direction first, else in any PDO of the direction (a
// remapped object).
func findEntry(dev *esi.Device, sig *contract.SignalInfo) (*esi.PDO, *esi.PDOEntry) {
	pdos := dev.TxPDOs
	if sig.Output {
		pdos = dev.RxPDOs
	}
	var own *esi.PDO
	for i := range pdos {
		if pdos[i].Index == sig.PDO {
			own = &pdos[i]
		}
	}
	match := func(p *esi.PDO) *esi.PDOEntry {
		for k := range p.Entries {
			if e := &p.Entries[k]; e.Index == sig.Index && e.SubIndex == sig.SubIndex {
				return e
			}
		}
		return nil
	}
	if own != nil {
		if e := match(own); e != nil {
			return own, e
		}
	}
	for i := range pdos {
		if e := match(&pdos[i]); e != nil {
			return own, e
		}
	}
	return own, nil
}

// unitOf returns the ETG.1004 unit code of entry e of object o: its own
// (the Info SubItem of its name), else the object's.
func unitOf(o *esi.Object, e *esi.Entry) uint32 {
	for _, si := range o.Info.SubItems {
		if si.Name == e.Name && si.Info.Unit != 0 {
			return si.Info.Unit
		}
	}
	return o.Info.Unit
}

// Entry is what an ESI says of one mapped PDO entry.
type Entry struct {
	PDOName  string // the PDO's name, "" when the ESI does not describe the PDO
	Name     string // the entry's name
	DataType string // as the ESI writes it: INT, BOOL, BIT2 …
	Unit     string // see UnitText; "" for none
}

// Entry describes entry index:sub of PDO pdo (an RxPDO when output) of a
// device, from the ESI of its identity (the nearest revision when the
// exact one is not described); false when no ESI describes the device or
// the entry.
func (c *Catalog) Entry(vendor, product, revision uint32, output bool, pdo, index uint16, sub uint8) (Entry, bool) {
	if c == nil {
		return Entry{}, false
	}
	m, err := c.cat.Lookup(vendor, product, revision)
	if err != nil {
		return Entry{}, false
	}
	sig := contract.SignalInfo{Output: output, PDO: pdo, Index: index, SubIndex: sub}
	p, e := findEntry(m.Device, &sig)
	var out Entry
	if p != nil {
		out.PDOName = p.Name.String()
	}
	if e != nil {
		out.Name, out.DataType = e.Name.String(), e.DataType
	}
	if o := m.Device.Dictionary().Object(index); o != nil {
		if de := o.Entry(sub); de != nil {
			if out.Name == "" {
				out.Name = de.Name
			}
			if out.DataType == "" {
				out.DataType = de.DataType
			}
			out.Unit = UnitText(unitOf(o, de))
		}
	}
	return out, out != Entry{}
}
