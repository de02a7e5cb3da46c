package docs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// beginMarker and endMarker delimit a generated section of a Markdown
// file; section names it, so one file can hold several.
func beginMarker(section string) string {
	return "<!-- BEGIN GENERATED " + section + ": go test ./docs -update -->"
}

func endMarker(section string) string { return "<!-- END GENERATED " + section + " -->" }

// errNoSection is returned by replaceSection when the markers are missing
// or out of order.
var errNoSection = errors.New("no generated section")

// replaceSection returns doc with the text between the markers of section
// replaced by body.
func replaceSection(doc, section, body string) (string, error) {
	begin, end := beginMarker(section), endMarker(section)
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("%w %q: want a line %q and, after it, a line %q", errNoSection, section, begin, end)
	}
	if strings.Count(doc, begin) != 1 || strings.Count(doc, end) != 1 {
		return "", fmt.Errorf("%w %q: its markers appear more than once", errNoSection, section)
	}
	return doc[:i] + begin + "\n\n" + strings.TrimSpace(body) + "\n\n" + doc[j:], nil
}

// checkGenerated compares the generated section of file (a path relative
// to docs/) with body, rewriting the file under -update.
func checkGenerated(t *testing.T, file, section, body string) {
	t.Helper()
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	doc, err := replaceSection(string(old), section, body)
	if err != nil {
		t.Fatalf("docs/%s: %v", file, err)
	}
	if doc == string(old) {
		return
	}
	if testsupport.Update() {
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatalf("writing %s: %v", file, err)
		}
		t.Logf("rewrote the %s section of docs/%s", section, file)
		return
	}
	t.Errorf("docs/%s is out of date: run go test ./docs -update\n%s", filepath.ToSlash(file), testsupport.FirstDifference(doc, string(old)))
}

func TestReplaceSection(t *testing.T) {
	doc := "intro\n" + beginMarker("x") + "\nstale\n" + endMarker("x") + "\noutro\n"
	got, err := replaceSection(doc, "x", "fresh\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n" + beginMarker("x") + "\n\nfresh\n\n" + endMarker("x") + "\noutro\n"
	if got != want {
		t.Errorf("replaceSection = %q, want %q", got, want)
	}
	for _, bad := range []string{
		"no markers at all",
		endMarker("x") + "\n" + beginMarker("x"),
		beginMarker("x") + endMarker("x") + beginMarker("x") + endMarker("x"),
		beginMarker("y") + "\n" + endMarker("y"),
	} {
		if _, err := replaceSection(bad, "x", "body"); !errors.Is(err, errNoSection) {
			t.Errorf("replaceSection(%q) error = %v, want errNoSection", bad, err)
		}
	}
}
