package etgxml

import (
	"strconv"
	"strings"
)

// Element is one XML element: its local name, attributes, text and, once
// filled (Reader.Fill), its children. Reading a child or an attribute
// through Child, Children or Attr marks it consumed; Warnings.Unused lists
// what was not.
type Element struct {
	Name  string
	Attrs []Attr
	Kids  []*Element
	Line  int // line of the end of the start tag
	Col   int // column of the end of the start tag
	// Label, when set by the caller (a device's order code, a slave's
	// name), is shown after the element in paths, for the reader's sake.
	Label string

	text      string
	parent    *Element
	index     int   // ordinal among same-named siblings, 1-based; 0: count in parent.Kids
	offset    int64 // of the start tag in the decoded input, for a streamed element
	startLine int   // of the start tag's '<', for a streamed element
	used      bool
}

// Attr is one attribute, by local name.
type Attr struct {
	Name  string
	Value string
	// Foreign marks a namespace declaration or an attribute in a namespace
	// (xsi:schemaLocation…): never reported as unused.
	Foreign bool
	used    bool
}

// Text returns the element's text with surrounding white space removed
// and marks the element consumed. A nil element has no text.
func (e *Element) Text() string {
	if e == nil {
		return ""
	}
	e.used = true
	return strings.TrimSpace(e.text)
}

// RawText returns the element's text as written and marks it consumed.
func (e *Element) RawText() string {
	if e == nil {
		return ""
	}
	e.used = true
	return e.text
}

// Use marks the element consumed without reading it.
func (e *Element) Use() {
	if e != nil {
		e.used = true
	}
}

// UseAll marks the element and everything in it consumed: for an element
// whose whole content a caller deliberately takes or leaves.
func (e *Element) UseAll() {
	if e == nil {
		return
	}
	e.used = true
	for i := range e.Attrs {
		e.Attrs[i].used = true
	}
	for _, k := range e.Kids {
		k.UseAll()
	}
}

// Child returns the first child named name, marked consumed, or nil. A
// second child of that name stays unconsumed, so it is reported.
func (e *Element) Child(name string) *Element {
	if e == nil {
		return nil
	}
	for _, k := range e.Kids {
		if k.Name == name {
			k.used = true
			return k
		}
	}
	return nil
}

// Children returns every child named name, in file order, all marked
// consumed.
func (e *Element) Children(name string) []*Element {
	if e == nil {
		return nil
	}
	var out []*Element
	for _, k := range e.Kids {
		if k.Name == name {
			k.used = true
			out = append(out, k)
		}
	}
	return out
}

// Attr returns the value of the attribute named name (no namespace) and
// whether it is present, and marks it consumed.
func (e *Element) Attr(name string) (string, bool) {
	if e == nil {
		return "", false
	}
	for i := range e.Attrs {
		a := &e.Attrs[i]
		if a.Name == name && !a.Foreign {
			a.used = true
			return a.Value, true
		}
	}
	return "", false
}

// Parent returns the enclosing element, nil for the root.
func (e *Element) Parent() *Element { return e.parent }

// Path returns the element's path from the root: names joined by "/", an
// ordinal [k] where the element has same-named siblings, and the label in
// parentheses where one is set, e.g.
// EtherCATInfo/Descriptions/Devices/Device[3](EL2004)/RxPdo[2]/Entry.
func (e *Element) Path() string {
	if e == nil {
		return ""
	}
	var parts []string
	for x := e; x != nil; x = x.parent {
		parts = append(parts, x.step())
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
		if i > 0 {
			b.WriteByte('/')
		}
	}
	return b.String()
}

// step is the element's own part of its path.
func (e *Element) step() string {
	s := e.Name
	if k, many := e.ordinal(); many {
		s += "[" + strconv.Itoa(k) + "]"
	}
	if e.Label != "" {
		s += "(" + e.Label + ")"
	}
	return s
}

// ordinal returns the element's 1-based position among same-named
// siblings and whether it is worth showing: there are others (a streamed
// element only knows about the ones before it).
func (e *Element) ordinal() (int, bool) {
	if e.index > 0 {
		return e.index, e.index > 1
	}
	if e.parent == nil {
		return 1, false
	}
	k, n := 0, 0
	for _, s := range e.parent.Kids {
		if s.Name != e.Name {
			continue
		}
		n++
		if s == e {
			k = n
		}
	}
	return k, n > 1
}

// Pattern returns the element's path with names only, the key under which
// warnings about it are gathered, e.g.
// EtherCATInfo/Descriptions/Devices/Device/Slots.
func (e *Element) Pattern() string {
	var parts []string
	for x := e; x != nil; x = x.parent {
		parts = append(parts, x.Name)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
		if i > 0 {
			b.WriteByte('/')
		}
	}
	return b.String()
}
