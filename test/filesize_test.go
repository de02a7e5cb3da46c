package test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines is the length past which a Go file must say why it is
// long. A file that grows past it usually holds two concerns; split it by
// concern, or give the reason in a comment line before the package clause
// that starts with "Long file:".
const maxFileLines = 600

// TestFilesAreSmall fails for every Go file the repository tracks that is
// longer than maxFileLines and gives no reason for it.
func TestFilesAreSmall(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range trackedGoFiles(t, root) {
		lines, reason, err := fileLength(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if lines > maxFileLines && reason == "" {
			t.Errorf("%s has %d lines (more than %d) and no \"// Long file: …\" reason before its package clause: split it by concern",
				f, lines, maxFileLines)
		}
	}
}

// fileLength counts a file's lines and returns the reason it gives for its
// length, if any, from the comments before its package clause.
func fileLength(path string) (lines int, reason string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	header := true
	for sc.Scan() {
		lines++
		line := strings.TrimSpace(sc.Text())
		if header && strings.HasPrefix(line, "package ") {
			header = false
		}
		if r, ok := strings.CutPrefix(line, "// Long file:"); header && ok {
			reason = strings.TrimSpace(r)
		}
	}
	return lines, reason, sc.Err()
}
