package docs

import (
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// linkPattern matches the target of a Markdown link or image, ](target).
var (
	linkPattern = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan    = regexp.MustCompile("`[^`]*`")
)

// proseLines yields the lines of a Markdown text outside its fenced
// code blocks (the fences' own lines left out too).
func proseLines(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		inFence := false
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if !inFence && !yield(line) {
				return
			}
		}
	}
}

// linkTargets returns the targets of the Markdown links and images in a
// text, as written (anchor included). Links inside code spans and fenced
// blocks are not links.
func linkTargets(text string) []string {
	var out []string
	for line := range proseLines(text) {
		line = codeSpan.ReplaceAllStringFunc(line, func(s string) string {
			return strings.Repeat("x", len(s))
		})
		for _, m := range linkPattern.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// external reports whether a link target leaves the repository.
func external(target string) bool {
	return strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:")
}

// relativeLinks returns the link targets in a Markdown text that name a
// file of the repository: no scheme, no mailto, not a bare #anchor; the
// anchor of a file link is cut off.
func relativeLinks(text string) []string {
	var out []string
	for _, target := range linkTargets(text) {
		if external(target) || strings.HasPrefix(target, "#") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		out = append(out, target)
	}
	return out
}

func TestRelativeLinks(t *testing.T) {
	got := relativeLinks("see [a](a.md), [b](../b/c.go#L3), [web](https://x.org), [top](#top)\n`[no](code.md)`\n```\n[no](fence.md)\n```")
	want := []string{"a.md", "../b/c.go"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("relativeLinks = %q, want %q", got, want)
	}
}

// TestLinksResolve checks that every relative link in README.md and
// docs/*.md names a file or directory that exists.
func TestLinksResolve(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "README.md"))
	if len(files) < 2 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range relativeLinks(string(text)) {
			path := filepath.Join(filepath.Dir(f), filepath.FromSlash(target))
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist (%v)", f, target, err)
			}
		}
	}
}
