package sii

import (
	"encoding/binary"
	"fmt"
)

// defaultEEPROMSize is the EEPROMSize Encode starts from when the header leaves it 0:
// 16 KiBit, 2 KiB, the size of most terminals' EEPROMs.
const defaultEEPROMSize = 15

// interpretedTypes is the number of category types this package interprets.
const interpretedTypes = 7

// canonicalOrder returns the order in which Encode appends categories that
// Device.Categories does not place.
func canonicalOrder() [interpretedTypes]CategoryType {
	return [...]CategoryType{
		CategoryStrings, CategoryGeneral, CategoryFMMU, CategorySyncManager,
		CategoryTxPDO, CategoryRxPDO, CategoryDC,
	}
}

// Encode returns the SII image of d: the header with a freshly computed checksum, the
// categories in the order of d.Categories (see [Device]), the end marker, and 0xFF up to
// the EEPROM size of the header. When Header.EEPROMSize is 0 the image gets the smallest
// size from 2 KiB up, doubling, that holds it, and the header says so; a non-zero size
// too small for the categories is an error.
//
// For a Device from [Parse], Encode reproduces the parsed image byte for byte up to and
// including the end marker, except for a wrong checksum, which it corrects.
func Encode(d *Device) ([]byte, error) {
	body := make([]byte, HeaderSize, 2048)
	next := make(map[CategoryType]int) // elements of each list already written
	for _, c := range d.plan() {
		start := len(body)
		body = append(body, 0, 0, 0, 0) // type and size, filled in below
		var err error
		switch t := c.Type; {
		case c.Raw != nil || !t.interpreted():
			body = append(body, c.Raw...)
		case t == CategoryGeneral:
			body = appendGeneral(body, d.General, c.Count)
		default:
			from, to := next[t], next[t]+c.Count
			next[t] = to
			switch t {
			case CategoryStrings:
				body, err = appendStrings(body, d.Strings[from:to])
			case CategoryFMMU:
				body = appendFMMUs(body, d.FMMUs[from:to])
			case CategorySyncManager:
				body = appendSyncManagers(body, d.SyncManagers[from:to])
			case CategoryTxPDO:
				body, err = appendPDOs(body, d.TxPDOs[from:to])
			case CategoryRxPDO:
				body, err = appendPDOs(body, d.RxPDOs[from:to])
			case CategoryDC:
				body = appendDCSyncs(body, d.DC[from:to])
			}
		}
		if err != nil {
			return nil, fmt.Errorf("sii: encoding category %v: %w", c.Type, err)
		}
		body = append(body, c.Tail...)
		if (len(body)-start)%2 != 0 {
			body = append(body, 0xFF)
		}
		words := (len(body) - start - 4) / 2
		if words > 0xFFFF {
			return nil, fmt.Errorf("sii: category %v holds %d words, at most 65535 fit", c.Type, words)
		}
		binary.LittleEndian.PutUint16(body[start:], uint16(c.Type))
		binary.LittleEndian.PutUint16(body[start+2:], uint16(words))
	}
	body = append(body, 0xFF, 0xFF) // end marker

	h := d.Header
	if len(body) > maxImageBytes {
		return nil, fmt.Errorf("sii: image needs %d bytes, a word address reaches %d", len(body), maxImageBytes)
	}
	if h.EEPROMSize == 0 {
		h.EEPROMSize = defaultEEPROMSize
		for h.EEPROMBytes() < len(body) {
			h.EEPROMSize = h.EEPROMSize<<1 | 1
		}
	}
	size := h.EEPROMBytes()
	switch {
	case size < len(body):
		return nil, fmt.Errorf("sii: image needs %d bytes, header EEPROM size %d says %d", len(body), h.EEPROMSize, size)
	case size > maxImageBytes:
		return nil, fmt.Errorf("sii: header EEPROM size %d says %d bytes, a word address reaches %d", h.EEPROMSize, size, maxImageBytes)
	}
	img := make([]byte, size)
	n := copy(img, body)
	for i := n; i < len(img); i++ {
		img[i] = 0xFF
	}
	h.put(img)
	return img, nil
}

// listLen returns how many elements d holds for list category t.
func (d *Device) listLen(t CategoryType) int {
	switch t {
	case CategoryStrings:
		return len(d.Strings)
	case CategoryFMMU:
		return len(d.FMMUs)
	case CategorySyncManager:
		return len(d.SyncManagers)
	case CategoryTxPDO:
		return len(d.TxPDOs)
	case CategoryRxPDO:
		return len(d.RxPDOs)
	case CategoryDC:
		return len(d.DC)
	}
	return 0
}

// plan returns the categories to write: d.Categories with each interpreted category's
// Count fitted to what d holds (the last category of a type takes whatever is left; one
// whose elements are all gone is dropped), followed by new categories, in canonical
// order, for content that d.Categories does not place.
func (d *Device) plan() []Category {
	left := make(map[CategoryType]int) // elements of each list not yet placed
	for _, t := range canonicalOrder() {
		left[t] = d.listLen(t)
	}
	last := make(map[CategoryType]int)
	for i, c := range d.Categories {
		if c.Raw == nil && c.Type.interpreted() {
			last[c.Type] = i
		}
	}
	out := make([]Category, 0, len(d.Categories)+interpretedTypes)
	general := false // whether a General category has been placed
	for i, c := range d.Categories {
		switch {
		case c.Raw != nil || !c.Type.interpreted():
		case c.Type == CategoryGeneral:
			if d.General == nil || general {
				continue
			}
			general = true
			c.Count = max(0, min(c.Count, generalSize))
		default:
			n := max(0, min(c.Count, left[c.Type]))
			if i == last[c.Type] {
				n = left[c.Type]
			}
			if n == 0 && c.Count > 0 {
				continue
			}
			left[c.Type] -= n
			c.Count = n
		}
		out = append(out, c)
	}
	for _, t := range canonicalOrder() {
		switch {
		case t == CategoryGeneral:
			if d.General != nil && !general {
				out = append(out, Category{Type: t, Count: generalSize})
			}
		case left[t] > 0:
			out = append(out, Category{Type: t, Count: left[t]})
		}
	}
	return out
}
