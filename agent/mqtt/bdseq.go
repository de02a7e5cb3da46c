package mqtt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// bdSeqStore keeps the Sparkplug birth/death sequence number (bdSeq)
// across restarts of the agent, in a small file under the state
// directory: a host pairs an NDEATH with the NBIRTH of the same bdSeq, so
// an agent restarting at 0 would have its new birth taken for the death
// of an old one. Only the session uses it; the zero value keeps the
// number in memory only.
type bdSeqStore struct {
	path string // "" keeps it in memory
	last uint64 // the bdSeq of the last connection; 0 before the first
}

// openBdSeq reads the bdSeq last used by group/node from dir, creating
// dir (0700) when it is missing. An empty dir keeps the bdSeq in memory.
func openBdSeq(dir, group, node string) (*bdSeqStore, error) {
	if dir == "" {
		return &bdSeqStore{}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mqtt: state directory: %w", err)
	}
	s := &bdSeqStore{path: filepath.Join(dir, "sparkplug-bdseq-"+safeFileName(group)+"-"+safeFileName(node))}
	b, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("mqtt: bdSeq: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 8)
	if err != nil {
		return nil, fmt.Errorf("mqtt: bdSeq file %s: %w (remove it to start from 0)", s.path, err)
	}
	s.last = v
	return s, nil
}

// next returns the bdSeq of a new connection (0–255, one more than the
// last) and records it before the connection announces it.
func (s *bdSeqStore) next() (uint64, error) {
	v := (s.last + 1) % 256
	s.last = v
	if s.path == "" {
		return v, nil
	}
	if err := writeFileAtomic(s.path, []byte(strconv.FormatUint(v, 10)+"\n")); err != nil {
		return v, fmt.Errorf("mqtt: bdSeq: %w", err)
	}
	return v, nil
}

// current returns the bdSeq of the current connection.
func (s *bdSeqStore) current() uint64 { return s.last }

// writeFileAtomic replaces path with b: a temporary file created
// exclusively (0600) next to it, synced, then renamed over it, so that a
// reader sees the old contents or the new, never a part.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Left by a crash between create and rename: nobody else writes it.
		if err = os.Remove(tmp); err == nil {
			f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// safeFileName makes s usable as part of a file name.
func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, s)
}
