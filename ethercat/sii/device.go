package sii

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Device is a parsed SII image: the header and the categories this package interprets,
// plus the layout and raw bytes needed to encode the image again.
//
// A Device built in Go (for a simulated device model) only needs Header, Strings,
// General and the SyncManager and PDO lists; leave Categories nil.
type Device struct {
	Header Header

	// Strings holds the Strings category. String index i refers to Strings[i-1]; index 0
	// means "no string". The strings are the raw bytes of the image: ETG.2010 fixes no
	// encoding and Beckhoff uses ISO 8859-1 ("µs" is 0xB5 's'). See [Device.StringAt].
	Strings []string

	General *General // nil when the image has no General category

	FMMUs        []FMMUUsage   // FMMU category: the use of each FMMU, in FMMU order
	SyncManagers []SyncManager // SyncManager category, in SyncManager order
	TxPDOs       []PDO         // TxPDO categories: inputs, device to master
	RxPDOs       []PDO         // RxPDO categories: outputs, master to device
	DC           []DCSync      // DC category: supported SYNC modes

	// Categories lists the image's categories in order. Parse fills it; Encode writes
	// the categories in this order, taking the interpreted ones from the fields above.
	// When it is nil Encode writes Strings, General, FMMU, SyncManager, TxPDO, RxPDO and
	// DC, each only if it has content. Elements added to a field after Parse go into the
	// last category of their type (or a new one at the end).
	Categories []Category
}

// Parse decodes an SII image: the header, then every category up to the end marker.
// Bytes after the end marker are ignored. The Device does not alias img.
//
// A header checksum mismatch is reported as a *[ChecksumError] together with the fully
// parsed Device, so that callers can warn and go on as real masters do; every other error
// ([ErrTruncated], [ErrMalformed], wrapped with the category's place) comes with a nil
// Device. Parse does not check string indexes or SyncManager references; see
// [Device.Validate].
func Parse(img []byte) (*Device, error) {
	if len(img) < HeaderSize+2 {
		return nil, fmt.Errorf("%w: %d bytes, the header and end marker need %d", ErrTruncated, len(img), HeaderSize+2)
	}
	d := &Device{Header: decodeHeader(img)}
	le := binary.LittleEndian
	off := HeaderSize
	for {
		if off+2 > len(img) {
			return nil, fmt.Errorf("%w: no end marker within %d bytes", ErrTruncated, len(img))
		}
		t := CategoryType(le.Uint16(img[off:]))
		if t == CategoryEnd {
			break
		}
		if off+4 > len(img) {
			return nil, fmt.Errorf("%w: category %v at word %#x has no size word", ErrTruncated, t, off/2)
		}
		end := off + 4 + 2*int(le.Uint16(img[off+2:]))
		if end > len(img) {
			return nil, fmt.Errorf("%w: category %v at word %#x (%d words) overruns the image of %d bytes",
				ErrTruncated, t, off/2, (end-off-4)/2, len(img))
		}
		if err := d.addCategory(t, img[off+4:end]); err != nil {
			return nil, fmt.Errorf("%w %v at word %#x: %w", ErrMalformed, t, off/2, err)
		}
		off = end
	}
	if want := CRC8(img[:checksumOffset]); want != d.Header.Checksum {
		return d, &ChecksumError{Want: want, Got: d.Header.Checksum}
	}
	return d, nil
}

// addCategory decodes one category's data into d and records it in d.Categories.
func (d *Device) addCategory(t CategoryType, data []byte) error {
	c := Category{Type: t}
	var n int
	switch {
	case t == CategoryStrings && len(data) > 0:
		ss, m, err := decodeStrings(data)
		if err != nil {
			return err
		}
		d.Strings = append(d.Strings, ss...)
		c.Count, n = len(ss), m
	case t == CategoryGeneral && d.General == nil:
		g, m := decodeGeneral(data)
		d.General = &g
		c.Count, n = m, m
	case t == CategoryFMMU:
		us, m := decodeFMMUs(data)
		d.FMMUs = append(d.FMMUs, us...)
		c.Count, n = len(us), m
	case t == CategorySyncManager:
		sms, m := decodeSyncManagers(data)
		d.SyncManagers = append(d.SyncManagers, sms...)
		c.Count, n = len(sms), m
	case t == CategoryTxPDO || t == CategoryRxPDO:
		pdos, m, err := decodePDOs(data)
		if err != nil {
			return err
		}
		if t == CategoryTxPDO {
			d.TxPDOs = append(d.TxPDOs, pdos...)
		} else {
			d.RxPDOs = append(d.RxPDOs, pdos...)
		}
		c.Count, n = len(pdos), m
	case t == CategoryDC:
		ds, m := decodeDCSyncs(data)
		d.DC = append(d.DC, ds...)
		c.Count, n = len(ds), m
	default:
		c.Raw = append(make([]byte, 0, len(data)), data...)
		d.Categories = append(d.Categories, c)
		return nil
	}
	if n < len(data) {
		c.Tail = append([]byte(nil), data[n:]...)
	}
	d.Categories = append(d.Categories, c)
	return nil
}

// StringAt returns the raw string with the 1-based index i, "" for index 0, or a
// *[StringIndexError] when i is past the last string.
func (d *Device) StringAt(i uint8) (string, error) {
	if i == 0 {
		return "", nil
	}
	if int(i) > len(d.Strings) {
		return "", &StringIndexError{Index: i, Count: len(d.Strings)}
	}
	return d.Strings[i-1], nil
}

// Name returns the device name of the General category, such as
// "EL2004 4K. Dig. Ausgang 24V, 0.5A", as valid UTF-8 (see [Device.Strings]), or ""
// when the image has none.
func (d *Device) Name() string {
	if d.General == nil {
		return ""
	}
	return d.displayString(d.General.NameIndex)
}

// OrderCode returns the order code of the General category, such as "EL2004", as valid
// UTF-8, or "" when the image has none.
func (d *Device) OrderCode() string {
	if d.General == nil {
		return ""
	}
	return d.displayString(d.General.OrderIndex)
}

// displayString returns string i as UTF-8, reading it as ISO 8859-1 when it is not
// valid UTF-8 already, or "" when i is out of range.
func (d *Device) displayString(i uint8) string {
	s, err := d.StringAt(i)
	if err != nil || utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, c := range []byte(s) {
		b.WriteRune(rune(c))
	}
	return b.String()
}

// InputBits returns the size in bits of the default inputs: the TxPDOs assigned to a
// process data SyncManager.
func (d *Device) InputBits() int { return d.processDataBits(d.TxPDOs) }

// OutputBits returns the size in bits of the default outputs: the RxPDOs assigned to a
// process data SyncManager.
func (d *Device) OutputBits() int { return d.processDataBits(d.RxPDOs) }

func (d *Device) processDataBits(pdos []PDO) int {
	n := 0
	for i := range pdos {
		sm := int(pdos[i].SyncManager)
		if sm < len(d.SyncManagers) && d.SyncManagers[sm].Type.IsProcessData() {
			n += pdos[i].BitLength()
		}
	}
	return n
}

// SyncManagerBits returns the size in bits of the PDOs (Tx and Rx) assigned to
// SyncManager sm by default. A master sizes the SyncManager to the bytes that hold them
// and maps them with bit-level FMMUs: an EL2004 has 4 bits on SyncManager 0.
func (d *Device) SyncManagerBits(sm int) int {
	n := 0
	for _, pdos := range [2][]PDO{d.TxPDOs, d.RxPDOs} {
		for i := range pdos {
			if int(pdos[i].SyncManager) == sm {
				n += pdos[i].BitLength()
			}
		}
	}
	return n
}

// Validate checks the references inside d: that every string index (General, PDOs, PDO
// entries, DC syncs) names an existing string and that every PDO's SyncManager exists or
// is NoSyncManager. It returns all problems found, joined.
func (d *Device) Validate() error {
	var errs []error
	str := func(what string, i uint8) {
		if _, err := d.StringAt(i); err != nil {
			errs = append(errs, fmt.Errorf("sii: %s: %w", what, err))
		}
	}
	if g := d.General; g != nil {
		str("General group", g.GroupIndex)
		str("General image", g.ImageIndex)
		str("General order code", g.OrderIndex)
		str("General name", g.NameIndex)
	}
	for _, l := range []struct {
		kind string
		pdos []PDO
	}{{"TxPDO", d.TxPDOs}, {"RxPDO", d.RxPDOs}} {
		for _, p := range l.pdos {
			what := fmt.Sprintf("%s %#04x", l.kind, p.Index)
			str(what+" name", p.NameIndex)
			if p.SyncManager != NoSyncManager && int(p.SyncManager) >= len(d.SyncManagers) {
				errs = append(errs, fmt.Errorf("sii: %s: SyncManager %d does not exist (%d SyncManagers)",
					what, p.SyncManager, len(d.SyncManagers)))
			}
			for _, e := range p.Entries {
				str(fmt.Sprintf("%s entry %#04x:%d name", what, e.Index, e.SubIndex), e.NameIndex)
			}
		}
	}
	for i, s := range d.DC {
		str(fmt.Sprintf("DC sync %d name", i), s.NameIndex)
		str(fmt.Sprintf("DC sync %d description", i), s.DescIndex)
	}
	return errors.Join(errs...)
}
