package esi

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

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

// Catalog indexes the devices of ESI files by Key. Each file is read once,
// streamed device by device; for a file on disk (AddFile, LoadDir) the
// index keeps where each device starts, not the device, and Lookup reads
// the one asked for again from there (and keeps it), so that a vendor's
// whole catalogue costs a few hundred bytes per device. Devices of a file
// read from an io.Reader (Add) are kept whole.
//
// Files are added by one goroutine; Lookup may then be called from many.
type Catalog struct {
	opt       Options
	byProduct map[[2]uint32][]*catalogEntry // by (vendor, product), sorted by revision
	files     []string
	devices   int
	warn      etgxml.Warnings
	mu        sync.Mutex // guards catalogEntry.dev of the entries read again
}

// catalogEntry is one indexed device.
type catalogEntry struct {
	product uint32
	rev     uint32
	typ     string
	line    int
	file    *catalogFile
	loc     etgxml.Location
	dev     *Device // kept, or read again and kept; nil until then
}

// catalogFile is one file of the catalogue.
type catalogFile struct {
	header  *File // name, version, vendor, groups; no devices
	path    string
	size    int64 // size and time of the file indexed, to notice a change
	modTime time.Time
}

// NewCatalog returns an empty catalogue whose files are read with opt.
func NewCatalog(opt Options) *Catalog {
	return &Catalog{opt: opt, byProduct: map[[2]uint32][]*catalogEntry{}}
}

// AddFile indexes the ESI file at path. A file with an error adds nothing.
func (c *Catalog) AddFile(path string) error {
	f, err := etgxml.Open(path, c.opt.limits().MaxBytes)
	if err != nil {
		return fmt.Errorf("esi: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("esi: %w", err)
	}
	cf := &catalogFile{path: path, size: st.Size(), modTime: st.ModTime()}
	return c.add(f, path, cf, st.Mode().IsRegular())
}

// Add reads the ESI in r, named name, into the catalogue, its devices
// kept whole. A file with an error adds nothing. A device already
// indexed under the same Key keeps its first description; the second is
// a warning.
func (c *Catalog) Add(r io.Reader, name string) error {
	return c.add(r, name, &catalogFile{}, false)
}

// add scans one file; a device is kept whole unless the file can be read
// again at its location (seekable).
func (c *Catalog) add(r io.Reader, name string, cf *catalogFile, seekable bool) error {
	var entries []*catalogEntry
	f, err := scanAt(r, name, c.opt, func(_ *File, d *Device, loc etgxml.Location, ok bool) error {
		e := &catalogEntry{product: d.ProductCode, rev: d.RevisionNo, typ: d.Type, line: d.Line, loc: loc, dev: d}
		if seekable && ok {
			e.dev = nil // read again on demand
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return err
	}
	c.files = append(c.files, name)
	c.warn.Merge(f.Warnings)
	f.Warnings = nil
	cf.header = f
	for _, e := range entries {
		e.file = cf
		c.index(f.Vendor.ID, e)
	}
	return nil
}

// index adds one device.
func (c *Catalog) index(vendor uint32, e *catalogEntry) {
	pk := [2]uint32{vendor, e.product}
	list := c.byProduct[pk]
	i := sort.Search(len(list), func(i int) bool { return list[i].rev >= e.rev })
	if i < len(list) && list[i].rev == e.rev {
		first := list[i]
		c.warn.Add(e.file.header.Name, e.line, "EtherCATInfo/Descriptions/Devices/Device",
			fmt.Sprintf("ignored: a second description of %s (%s); the one in %s line %d is used",
				Key{vendor, e.product, e.rev}, e.typ, first.file.header.Name, first.line))
		return
	}
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = e
	c.byProduct[pk] = list
	c.devices++
}

// LoadDir indexes every ESI file (*.xml, any case) in dir and below into
// a new catalogue, in lexical order. A file that cannot be read or has an
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
			out = append(out, Key{pk[0], pk[1], e.rev})
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

// device returns e's device, reading it again from its file the first
// time.
func (c *Catalog) device(vendor uint32, e *catalogEntry) (*Device, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.dev != nil {
		return e.dev, nil
	}
	d, err := c.reread(vendor, e)
	if err != nil {
		return nil, fmt.Errorf("esi: %s line %d (%s): reading the device again: %w", e.file.path, e.line, e.typ, err)
	}
	e.dev = d
	return d, nil
}

// reread reads e's device from its file, which must be the file indexed.
func (c *Catalog) reread(vendor uint32, e *catalogEntry) (*Device, error) {
	f := e.file
	st, err := os.Stat(f.path)
	if err != nil {
		return nil, err
	}
	if st.Size() != f.size || !st.ModTime().Equal(f.modTime) {
		return nil, fmt.Errorf("the file changed since it was indexed (%d bytes of %v, now %d of %v): load the catalogue again",
			f.size, f.modTime, st.Size(), st.ModTime())
	}
	r, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, err := readDeviceAt(r, f.path, e.loc, c.opt)
	if err != nil {
		return nil, err
	}
	if d.ProductCode != e.product || d.RevisionNo != e.rev {
		return nil, fmt.Errorf("found %s, not %s: the file changed since it was indexed", Key{vendor, d.ProductCode, d.RevisionNo}, Key{vendor, e.product, e.rev})
	}
	return d, nil
}

// readDeviceAt reads the Device element at loc of the ESI in rs, named
// name, alone.
func readDeviceAt(rs io.ReadSeeker, name string, loc etgxml.Location, opt Options) (*Device, error) {
	r, err := etgxml.ReadAt(rs, loc)
	if err != nil {
		return nil, err
	}
	var w etgxml.Warnings // told when the file was read whole
	rd := etgxml.NewReader(r, name, opt.limits(), &w)
	rd.StartsAtLine(loc.Line)
	el, err := rd.Root("Device")
	if err == nil {
		err = rd.Fill(el)
	}
	if err != nil {
		return nil, err
	}
	x := etgxml.NewErrors(name)
	d := readDevice(x, el, &w, name)
	if err := x.Err(); err != nil {
		return nil, err
	}
	return &d, nil
}
