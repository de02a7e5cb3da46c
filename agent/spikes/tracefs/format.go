package tracefs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrFormat is wrapped by every error about a format file the package
// cannot read.
var ErrFormat = errors.New("tracefs: unreadable format")

// Field is one field of an event's record, as its format file describes
// it.
type Field struct {
	// Name is the field's name ("prev_pid").
	Name string
	// Offset and Size locate it in the record, in bytes.
	Offset, Size int
	// Signed is set for a signed integer.
	Signed bool
	// DataLoc is set for a __data_loc field: a 32-bit word at Offset
	// whose low 16 bits are the data's offset in the record and high 16
	// bits its length.
	DataLoc bool
}

// Format is an event's record layout (events/SYSTEM/NAME/format).
type Format struct {
	// System and Name name the event ("sched", "sched_switch").
	System, Name string
	// ID is the record's common_type.
	ID uint16
	// Fields are the record's fields, the common ones first.
	Fields []Field
}

// Field returns the field called name, and false when the record has
// none.
func (f *Format) Field(name string) (Field, bool) {
	for _, fl := range f.Fields {
		if fl.Name == name {
			return fl, true
		}
	}
	return Field{}, false
}

// ParseFormat reads the text of an event's format file.
func ParseFormat(system, name, text string) (Format, error) {
	f := Format{System: system, Name: name}
	haveID := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "ID:"):
			id, err := strconv.ParseUint(strings.TrimSpace(line[3:]), 10, 16)
			if err != nil {
				return Format{}, fmt.Errorf("%w: %s/%s: ID %q", ErrFormat, system, name, line)
			}
			f.ID, haveID = uint16(id), true
		case strings.HasPrefix(line, "field:"):
			fl, err := parseField(line)
			if err != nil {
				return Format{}, fmt.Errorf("%w: %s/%s: %v", ErrFormat, system, name, err)
			}
			f.Fields = append(f.Fields, fl)
		}
	}
	if !haveID {
		return Format{}, fmt.Errorf("%w: %s/%s: no ID line", ErrFormat, system, name)
	}
	return f, nil
}

// parseField reads "field:TYPE NAME;	offset:N;	size:N;	signed:N;".
func parseField(line string) (Field, error) {
	var fl Field
	parts := strings.Split(line, ";")
	if len(parts) < 3 {
		return fl, fmt.Errorf("field line %q", line)
	}
	decl := strings.TrimSpace(strings.TrimPrefix(parts[0], "field:"))
	fl.DataLoc = strings.HasPrefix(decl, "__data_loc")
	for { // "char comm[16]", "__data_loc char[] name": drop the brackets
		i := strings.IndexByte(decl, '[')
		j := strings.IndexByte(decl, ']')
		if i < 0 || j < i {
			break
		}
		decl = decl[:i] + " " + decl[j+1:]
	}
	words := strings.Fields(decl)
	if len(words) == 0 {
		return fl, fmt.Errorf("field line %q: no name", line)
	}
	fl.Name = words[len(words)-1]
	seen := 0
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fl, fmt.Errorf("field %s: %s %q", fl.Name, k, v)
		}
		switch k {
		case "offset":
			fl.Offset, seen = n, seen|1
		case "size":
			fl.Size, seen = n, seen|2
		case "signed":
			fl.Signed = n != 0
		}
	}
	if seen != 3 {
		return fl, fmt.Errorf("field %s: no offset or size", fl.Name)
	}
	return fl, nil
}
