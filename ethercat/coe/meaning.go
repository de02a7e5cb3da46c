package coe

// codeMeaning is one row of a table of the standard meanings of codes:
// the codes c with c&mask == code mean text; a mask of 0 is every bit
// (code exactly).
type codeMeaning[C ~uint16 | ~uint32] struct {
	code, mask C
	text       string
}

// meaningOf returns the text of the first row of table that c matches,
// and false when none does.
func meaningOf[C ~uint16 | ~uint32](table []codeMeaning[C], c C) (string, bool) {
	for _, r := range table {
		mask := r.mask
		if mask == 0 {
			mask = ^mask
		}
		if c&mask == r.code {
			return r.text, true
		}
	}
	return "", false
}
