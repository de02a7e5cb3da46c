package eni

import (
	"errors"
	"fmt"
	"io"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// The default limits of Options.
const (
	DefaultMaxFileBytes    = 64 << 20 // an ENI of hundreds of slaves is a few MB
	DefaultMaxDepth        = 64       // ENI files nest about 10 deep
	DefaultMaxElements     = 4 << 20  // per file
	DefaultMaxPartElements = 1 << 20  // in one Slave, Master, Cyclic or ProcessImage element
	maxDatagram            = 1486     // the data of one datagram in one frame
)

// Options bound what a reader accepts; a zero field takes its default.
type Options struct {
	MaxFileBytes    int64 // a file's size in bytes
	MaxDepth        int   // the nesting depth of elements
	MaxElements     int   // the elements of one file
	MaxPartElements int   // the elements of one Slave, Master, Cyclic or ProcessImage, each read whole
}

// limits returns the etgxml limits of o, each zero field at its default;
// a part is the subtree the reader fills.
func (o Options) limits() etgxml.Limits {
	return etgxml.Limits{MaxBytes: o.MaxFileBytes, MaxDepth: o.MaxDepth, MaxElements: o.MaxElements, MaxSubtree: o.MaxPartElements}.
		Or(etgxml.Limits{MaxBytes: DefaultMaxFileBytes, MaxDepth: DefaultMaxDepth, MaxElements: DefaultMaxElements, MaxSubtree: DefaultMaxPartElements})
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

// ReadFile reads the ENI file at path; a file past opt's size limit is
// refused before it is read.
func ReadFile(path string, opt Options) (*Config, error) {
	f, err := etgxml.Open(path, opt.limits().MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("eni: %w", err)
	}
	defer f.Close()
	return Read(f, path, opt)
}

// Read reads the ENI in r, named name in errors and warnings. On error
// the Config is nil; the error lists up to 20 problems, each with its
// place.
func Read(r io.Reader, name string, opt Options) (*Config, error) {
	rd := &reader{x: etgxml.NewErrors(name), cfg: &Config{Name: name}, once: map[string]bool{}}
	rd.rd = etgxml.NewReader(r, name, opt.limits(), &rd.warn)
	if err := rd.run(); err != nil && !errors.Is(err, errStop) {
		rd.x.Add(err)
	}
	if rd.x.Len() == 0 {
		checkSlaves(rd.x, rd.cfg, rd.places)
	}
	if err := rd.x.Err(); err != nil {
		return nil, err
	}
	rd.cfg.Warnings = rd.warn.List()
	return rd.cfg, nil
}

// errStop ends a read once a file's errors are many enough to report.
var errStop = errors.New("eni: stop")

// reader is the state of one Read.
type reader struct {
	rd     *etgxml.Reader
	x      *etgxml.Errors
	warn   etgxml.Warnings
	cfg    *Config
	places []place         // where each slave is, for the checks made once all are read
	once   map[string]bool // the parts a configuration has one of, once read
}

// run reads the root's children.
func (r *reader) run() error {
	e, err := r.rd.Root("EtherCATConfig")
	if err != nil {
		return err
	}
	r.cfg.Version, _ = e.Attr("Version")
	r.warn.UnusedAttrs(r.cfg.Name, e, why)
	seen := false
	for {
		k, err := r.rd.Next()
		if err != nil {
			return err
		}
		if k == nil {
			break
		}
		if k.Name != "Config" {
			if err := r.rd.Ignore(k, why); err != nil {
				return err
			}
			continue
		}
		seen = true
		if err := r.config(k); err != nil {
			return err
		}
	}
	if !seen {
		r.x.At(e, "", "", ErrMissing, "required <Config> missing")
	}
	return r.rd.End()
}

// config streams the Config element, one part at a time.
func (r *reader) config(e *etgxml.Element) error {
	r.warn.UnusedAttrs(r.cfg.Name, e, why)
	for {
		k, err := r.rd.Next()
		if err != nil || k == nil {
			if err == nil && !r.once["Master"] {
				r.x.At(e, "", "", ErrMissing, "required <Master> missing")
			}
			return err
		}
		if err := r.part(k); err != nil {
			return err
		}
		if r.x.Full() {
			return errStop
		}
	}
}

// part reads one child of Config whole.
func (r *reader) part(e *etgxml.Element) error {
	switch e.Name {
	case "Master", "Slave", "Cyclic", "ProcessImage":
	default:
		return r.rd.Ignore(e, why)
	}
	if err := r.rd.Fill(e); err != nil {
		return err
	}
	if (e.Name == "Master" || e.Name == "ProcessImage") && r.once[e.Name] {
		r.x.At(e, "", "", ErrValue, "a second <%s>: a configuration has one", e.Name)
		return nil
	}
	r.once[e.Name] = true
	switch e.Name {
	case "Master":
		r.cfg.Master = readMaster(r.x, e)
	case "Slave":
		r.cfg.Slaves = append(r.cfg.Slaves, readSlave(r.x, e))
		r.places = append(r.places, placeOf(e))
	case "Cyclic":
		r.cfg.Cyclic = append(r.cfg.Cyclic, readCyclic(r.x, e))
	case "ProcessImage":
		r.cfg.ProcessImage = readProcessImage(r.x, e)
	}
	r.warn.Unused(r.cfg.Name, e, why)
	return nil
}
