package testsupport

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the one -update flag of every test binary that links this
// package: two packages registering their own would panic in one binary.
var update = flag.Bool("update", false, "rewrite the golden files and generated documents from the code")

// Update reports whether the test runs with -update: golden files and
// generated documents are to be rewritten from what the code produces.
func Update() bool { return *update }

// Golden compares got with the file at path. Under -update it writes got
// to path first (creating its folder), so the comparison then passes and
// the diff shows in git. A missing or different file fails the test,
// naming the first line that differs and the command that rewrites it.
func Golden(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if Update() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs from what the code produces (go test -update rewrites it): %s", path, FirstDifference(string(got), string(want)))
	}
}

// GoldenOnce is Golden for a file that must never be rewritten once it
// exists (a version's frozen layout): -update writes it only when it is
// missing. It returns the file's content and whether it equals got, and
// leaves the failure message to the caller.
func GoldenOnce(tb testing.TB, path string, got []byte) (want []byte, same bool) {
	tb.Helper()
	want, err := os.ReadFile(path)
	if os.IsNotExist(err) && Update() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("wrote %s", path)
		return got, true
	}
	if err != nil {
		tb.Fatalf("%v (go test -update writes it when it is missing)", err)
	}
	return want, bytes.Equal(got, want)
}

// FirstDifference describes the first line where got (what the code
// produces) and want (the file) differ.
func FirstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  file: %q\n  code: %q", i+1, wl, gl)
		}
	}
	return "(no line differs)"
}
