package esi

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// Key identifies a device description: vendor id, product code and
// revision number, as a device's SII and an ENI give them.
type Key struct {
	Vendor   uint32
	Product  uint32
	Revision uint32
}

// String renders the key in hex, as tools show it.
func (k Key) String() string {
	return fmt.Sprintf("vendor %#08x product %#08x revision %#08x", k.Vendor, k.Product, k.Revision)
}

// Catalog indexes the devices of ESI files by Key: each file is read once,
// streamed device by device. Add files with AddFile, Add or LoadDir, then
// look devices up. A Catalog is not safe for concurrent use while files
// are added; lookups alone may run concurrently.
type Catalog struct {
	opt       Options
	byProduct map[[2]uint32][]catalogEntry // by (vendor, product), sorted by revision
	files     []string
	devices   int
	warn      etgxml.Warnings
}

// catalogEntry is one indexed device and the file it came from.
type catalogEntry struct {
	dev  *Device
	file *File // without Devices
}

// NewCatalog returns an empty catalogue whose files are read with opt.
func NewCatalog(opt Options) *Catalog {
	return &Catalog{opt: opt, byProduct: map[[2]uint32][]catalogEntry{}}
}

// AddFile reads the ESI file at path into the catalogue. A file with an
// error adds nothing.
func (c *Catalog) AddFile(path string) error {
	l, _ := c.opt.limits()
	f, err := etgxml.Open(path, l.MaxBytes)
	if err != nil {
		return fmt.Errorf("esi: %w", err)
	}
	defer f.Close()
	return c.Add(f, path)
}

// Add reads the ESI in r, named name, into the catalogue. A file with an
// error adds nothing. A device already indexed under the same Key keeps
// its first description; the second is a warning.
func (c *Catalog) Add(r io.Reader, name string) error {
	var devs []*Device
	f, err := Scan(r, name, c.opt, func(_ *File, d *Device) error {
		devs = append(devs, d)
		return nil
	})
	if err != nil {
		return err
	}
	c.files = append(c.files, name)
	c.warn.Merge(f.Warnings)
	f.Warnings = nil
	for _, d := range devs {
		c.index(f, d)
	}
	return nil
}

// index adds one device.
func (c *Catalog) index(f *File, d *Device) {
	pk := [2]uint32{f.Vendor.ID, d.ProductCode}
	list := c.byProduct[pk]
	i := sort.Search(len(list), func(i int) bool { return list[i].dev.RevisionNo >= d.RevisionNo })
	if i < len(list) && list[i].dev.RevisionNo == d.RevisionNo {
		first := list[i]
		c.warn.Add(f.Name, d.Line, "EtherCATInfo/Descriptions/Devices/Device",
			fmt.Sprintf("ignored: a second description of %s (%s); the one in %s line %d is used",
				Key{pk[0], pk[1], d.RevisionNo}, d.Type, first.file.Name, first.dev.Line))
		return
	}
	list = append(list, catalogEntry{})
	copy(list[i+1:], list[i:])
	list[i] = catalogEntry{dev: d, file: f}
	c.byProduct[pk] = list
	c.devices++
}

// LoadDir reads every ESI file (*.xml, any case) in dir and below into a
// new catalogue, in lexical order. A file that cannot be read or has an
// error is left out and its error returned with the others (the catalogue
// holds the rest); an XML file that is not an ESI (another root element)
// is left out with a warning.
func LoadDir(dir string, opt Options) (*Catalog, error) {
	c := NewCatalog(opt)
	var errs []error
	n := 0
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if de.IsDir() || !strings.EqualFold(filepath.Ext(path), ".xml") {
			return nil
		}
		n++
		if err := c.AddFile(path); err != nil {
			if errors.Is(err, ErrRoot) {
				c.warn.Add(path, 0, filepath.Base(path), "ignored: not an ESI file ("+err.Error()+")")
				return nil
			}
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("esi: %s: %w", dir, err)
	}
	if n == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("esi: %s: no ESI files (*.xml) found", dir))
	}
	return c, errors.Join(errs...)
}

// Len is the number of devices indexed.
func (c *Catalog) Len() int { return c.devices }

// Files returns the names of the files read, in the order read.
func (c *Catalog) Files() []string { return append([]string(nil), c.files...) }

// Warnings returns what the files hold that was not read, and the
// duplicate descriptions, once per path and reason across all files.
func (c *Catalog) Warnings() []Warning { return c.warn.List() }

// Keys returns the keys of every device indexed, sorted.
func (c *Catalog) Keys() []Key {
	var out []Key
	for pk, list := range c.byProduct {
		for _, e := range list {
			out = append(out, Key{pk[0], pk[1], e.dev.RevisionNo})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Vendor != b.Vendor {
			return a.Vendor < b.Vendor
		}
		if a.Product != b.Product {
			return a.Product < b.Product
		}
		return a.Revision < b.Revision
	})
	return out
}
