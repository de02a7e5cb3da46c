package etgxml

import (
	"fmt"
	"os"
)

// Limits bound what a Reader accepts. A zero field takes the value of the
// defaults the caller passes to Or.
type Limits struct {
	MaxBytes    int64 // the input's length in bytes
	MaxDepth    int   // the nesting depth of elements, the root being 1
	MaxElements int   // the number of elements in the input
	MaxSubtree  int   // the elements of one subtree read whole (Reader.Fill), which bounds the memory it holds
}

// Or returns l with each zero field taken from d.
func (l Limits) Or(d Limits) Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxElements <= 0 {
		l.MaxElements = d.MaxElements
	}
	if l.MaxSubtree <= 0 {
		l.MaxSubtree = d.MaxSubtree
	}
	return l
}

// Open opens the file at path for reading after checking its size
// against max, so that a file past the limit is refused at once, before a
// byte of it is read. A path that is not a regular file (a directory, a
// device) is refused too; a pipe is read and cut at the limit by the
// Reader.
func Open(path string, max int64) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case st.IsDir():
		f.Close()
		return nil, fmt.Errorf("%s: is a directory, not an XML file", path)
	case st.Mode().IsRegular() && st.Size() > max:
		f.Close()
		return nil, &Error{File: path, Kind: ErrTooLarge,
			Msg: fmt.Sprintf("file of %s refused: larger than the limit of %s", byteSize(st.Size()), byteSize(max))}
	case !st.Mode().IsRegular() && st.Mode()&os.ModeNamedPipe == 0:
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%v)", path, st.Mode().Type())
	}
	return f, nil
}

// byteSize renders n bytes for a person.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
