package esi

import (
	"errors"
	"fmt"
	"io"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// The default limits of Options.
const (
	DefaultMaxFileBytes      = 256 << 20 // a vendor's catalogue is tens of MB
	DefaultMaxDepth          = 64        // ESI files nest about 12 deep
	DefaultMaxElements       = 16 << 20  // per file
	DefaultMaxDeviceElements = 1 << 20   // in one Device, which is read whole
)

// Options bound what a reader accepts; a zero field takes its default.
type Options struct {
	MaxFileBytes      int64 // a file's size in bytes
	MaxDepth          int   // the nesting depth of elements
	MaxElements       int   // the elements of one file
	MaxDeviceElements int   // the elements of one Device, which bounds the memory reading it takes
}

// limits returns the etgxml limits of o, each zero field at its default;
// a Device is the subtree the reader fills.
func (o Options) limits() etgxml.Limits {
	return etgxml.Limits{MaxBytes: o.MaxFileBytes, MaxDepth: o.MaxDepth, MaxElements: o.MaxElements, MaxSubtree: o.MaxDeviceElements}.
		Or(etgxml.Limits{MaxBytes: DefaultMaxFileBytes, MaxDepth: DefaultMaxDepth, MaxElements: DefaultMaxElements, MaxSubtree: DefaultMaxDeviceElements})
}

// The kinds of error, matched with errors.Is (see etgxml for each).
var (
	ErrTooLarge        = etgxml.ErrTooLarge
	ErrTooDeep         = etgxml.ErrTooDeep
	ErrTooManyElements = etgxml.ErrTooManyElements
	ErrDoctype         = etgxml.ErrDoctype
	ErrSyntax          = etgxml.ErrSyntax
	ErrEncoding        = etgxml.ErrEncoding
	ErrRoot            = etgxml.ErrRoot
	ErrMissing         = etgxml.ErrMissing
	ErrValue           = etgxml.ErrValue
)

// root is the root element of an ESI file.
const root = "EtherCATInfo"

// ReadFile reads the ESI file at path; a file past opt's size limit is
// refused before it is read.
func ReadFile(path string, opt Options) (*File, error) {
	f, err := etgxml.Open(path, opt.limits().MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("esi: %w", err)
	}
	defer f.Close()
	return Read(f, path, opt)
}

// Read reads the ESI in r, named name in errors and warnings. On error
// the File is nil.
func Read(r io.Reader, name string, opt Options) (*File, error) {
	var devs []Device
	f, err := Scan(r, name, opt, func(_ *File, d *Device) error {
		devs = append(devs, *d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	f.Devices = devs
	return f, nil
}

// errStop ends a scan from inside the reader, once a file's errors are
// many enough to report.
var errStop = errors.New("esi: stop")

// Scan reads the ESI in r and calls each with every device as soon as it
// is read, in file order, the device each's to keep; the File it is given
// holds the vendor and the groups, and is the one Scan returns, without
// devices. Memory stays that of the largest device. A device with an
// error is not passed on, and Scan then returns nil and the errors (up to
// 20, read on to the end of the file or the 20th); an error each returns
// ends the scan and is returned as is.
func Scan(r io.Reader, name string, opt Options, each func(*File, *Device) error) (*File, error) {
	return scanAt(r, name, opt, func(f *File, d *Device, _ etgxml.Location, _ bool) error { return each(f, d) })
}

// scanAt is Scan telling each also where the device starts in the file
// and whether that could be told.
func scanAt(r io.Reader, name string, opt Options, each func(*File, *Device, etgxml.Location, bool) error) (*File, error) {
	s := &scan{x: etgxml.NewErrors(name), file: &File{Name: name}, each: each}
	s.rd = etgxml.NewReader(r, name, opt.limits(), &s.warn)
	err := s.run()
	switch {
	case s.eachErr != nil:
		return nil, s.eachErr
	case err != nil && !errors.Is(err, errStop):
		s.x.Add(err)
	}
	if err := s.x.Err(); err != nil {
		return nil, err
	}
	s.file.Warnings = s.warn.List()
	return s.file, nil
}

// scan is the state of one Scan.
type scan struct {
	rd         *etgxml.Reader
	x          *etgxml.Errors
	warn       etgxml.Warnings
	file       *File
	each       func(*File, *Device, etgxml.Location, bool) error
	eachErr    error
	vendorSeen bool
}

// run reads the root's children.
func (s *scan) run() error {
	e, err := s.rd.Root(root)
	if err != nil {
		return err
	}
	s.file.Version, _ = e.Attr("Version")
	s.warn.UnusedAttrs(s.file.Name, e, why)
	for {
		k, err := s.rd.Next()
		if err != nil || k == nil {
			if err != nil {
				return err
			}
			return s.rd.End()
		}
		switch k.Name {
		case "Vendor":
			err = s.vendor(k)
		case "Descriptions":
			err = s.descriptions(k)
		default:
			err = s.rd.Ignore(k, why)
		}
		if err != nil {
			return err
		}
	}
}

// vendor reads the Vendor element.
func (s *scan) vendor(e *etgxml.Element) error {
	if err := s.rd.Fill(e); err != nil {
		return err
	}
	if s.vendorSeen {
		s.x.At(e, "", "", ErrValue, "a second <Vendor>: an ESI file has one")
		return nil
	}
	s.file.Vendor = readVendor(s.x, e)
	s.vendorSeen = true
	s.warn.Unused(s.file.Name, e, why)
	return nil
}

// descriptions streams the Descriptions element.
func (s *scan) descriptions(e *etgxml.Element) error {
	if !s.vendorSeen {
		s.x.At(e, "", "", ErrMissing, "<Vendor> must come before <Descriptions>, as ETG.2000 orders them")
		return errStop
	}
	s.warn.UnusedAttrs(s.file.Name, e, why)
	for {
		k, err := s.rd.Next()
		if err != nil || k == nil {
			return err
		}
		switch k.Name {
		case "Groups":
			err = s.groups(k)
		case "Devices":
			err = s.devices(k)
		default:
			err = s.rd.Ignore(k, why)
		}
		if err != nil {
			return err
		}
	}
}

// groups reads the Groups element.
func (s *scan) groups(e *etgxml.Element) error {
	if err := s.rd.Fill(e); err != nil {
		return err
	}
	for _, g := range e.Children("Group") {
		s.file.Groups = append(s.file.Groups, readGroup(s.x, g))
	}
	s.warn.Unused(s.file.Name, e, why)
	return nil
}

// devices streams the Devices element, one Device at a time.
func (s *scan) devices(e *etgxml.Element) error {
	s.warn.UnusedAttrs(s.file.Name, e, why)
	for {
		k, err := s.rd.Next()
		if err != nil || k == nil {
			return err
		}
		if k.Name != "Device" {
			if err := s.rd.Ignore(k, why); err != nil {
				return err
			}
			continue
		}
		if err := s.device(k); err != nil {
			return err
		}
	}
}

// device reads one Device and hands it on.
func (s *scan) device(e *etgxml.Element) error {
	if err := s.rd.Fill(e); err != nil {
		return err
	}
	d := readDevice(s.x, e, &s.warn, s.file.Name)
	s.warn.Unused(s.file.Name, e, why)
	switch {
	case s.x.Full():
		return errStop
	case s.x.Len() > 0:
		return nil // the file has errors: nothing is passed on any more
	}
	loc, ok := s.rd.Location(e)
	if err := s.each(s.file, &d, loc, ok); err != nil {
		s.eachErr = err
		return errStop
	}
	return nil
}
