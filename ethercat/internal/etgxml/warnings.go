package etgxml

import (
	"fmt"
	"strings"
)

// Warning is something a file holds that the reader did not take: an
// element or attribute it does not read, or a value it could not use. It
// is listed once per path and reason, with how often it occurred and
// where first.
type Warning struct {
	File   string // the file of the first occurrence
	Line   int    // the line of the first occurrence
	Path   string // element path without ordinals, attribute as path@name
	Count  int    // occurrences, across files when gathered by a catalogue
	Reason string // what was ignored and why
}

// String renders the warning as file:line: path: reason (N times).
func (w Warning) String() string {
	s := fmt.Sprintf("%s:%d: %s: %s", w.File, w.Line, w.Path, w.Reason)
	if w.Count > 1 {
		s += fmt.Sprintf(" (%d times)", w.Count)
	}
	return s
}

// NotRead is the reason given for an element or attribute no reason table
// names.
const NotRead = "ignored: not read by ecagent"

// Warnings gathers warnings, one per path and reason.
type Warnings struct {
	list  []Warning
	index map[string]int
}

// Add records one occurrence of a warning.
func (w *Warnings) Add(file string, line int, path, reason string) {
	key := path + "\x00" + reason
	if i, ok := w.index[key]; ok {
		w.list[i].Count++
		return
	}
	if w.index == nil {
		w.index = map[string]int{}
	}
	w.index[key] = len(w.list)
	w.list = append(w.list, Warning{File: file, Line: line, Path: path, Count: 1, Reason: reason})
}

// Merge adds every warning of other, keeping the first occurrence.
func (w *Warnings) Merge(other []Warning) {
	for _, o := range other {
		key := o.Path + "\x00" + o.Reason
		if i, ok := w.index[key]; ok {
			w.list[i].Count += o.Count
			continue
		}
		w.Add(o.File, o.Line, o.Path, o.Reason)
		w.list[len(w.list)-1].Count = o.Count
	}
}

// List returns the warnings in the order they first occurred.
func (w *Warnings) List() []Warning {
	if len(w.list) == 0 {
		return nil
	}
	return append([]Warning(nil), w.list...)
}

// Reasons tells why an element or attribute is not read: it is given the
// element's pattern (attributes as pattern@name) and returns the reason,
// or "" for the default NotRead.
type Reasons func(pattern string) string

// Unused records a warning for every element below root and every
// attribute of root and below that nobody consumed. An unconsumed element
// is reported once, not its content.
func (w *Warnings) Unused(file string, root *Element, why Reasons) {
	if root == nil {
		return
	}
	w.unusedAttrs(file, root, why)
	for _, k := range root.Kids {
		if !k.used {
			w.Add(file, k.Line, k.Pattern(), reason(why, k.Pattern()))
			continue
		}
		w.Unused(file, k, why)
	}
}

// UnusedAttrs records a warning for every attribute of e nobody consumed,
// for an element whose children a caller streams.
func (w *Warnings) UnusedAttrs(file string, e *Element, why Reasons) {
	w.unusedAttrs(file, e, why)
}

func (w *Warnings) unusedAttrs(file string, e *Element, why Reasons) {
	for _, a := range e.Attrs {
		if !a.used && !a.Foreign {
			p := e.Pattern() + "@" + a.Name
			w.Add(file, e.Line, p, reason(why, p))
		}
	}
}

// reason asks why, falling back to NotRead.
func reason(why Reasons, pattern string) string {
	if why != nil {
		if r := why(pattern); r != "" {
			return r
		}
	}
	return NotRead
}

// LastSteps returns the last two steps of a pattern ("Device/Slots") and
// the last one ("Slots"), attributes included ("Sm@Virtual", "@Virtual"
// being part of the last step), for a Reasons to switch on.
func LastSteps(pattern string) (two, one string) {
	i := strings.LastIndexByte(pattern, '/')
	one = pattern[i+1:]
	if i < 0 {
		return one, one
	}
	j := strings.LastIndexByte(pattern[:i], '/')
	return pattern[j+1:], one
}
