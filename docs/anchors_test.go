package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	headingPattern    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	inlineLinkPattern = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	htmlAnchorPattern = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// headingSlug is the anchor GitHub gives a heading: its text as rendered
// (a link's text, code spans' content), lower case, without the
// characters that are neither letters, digits, spaces, hyphens nor
// underscores, spaces turned into hyphens.
func headingSlug(heading string) string {
	text := inlineLinkPattern.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors a Markdown text defines: each heading's slug
// (a repeated one numbered -1, -2, … as GitHub does) and every HTML anchor
// (<a id="…"> or <a name="…">). Headings in fenced blocks are not headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for line := range proseLines(text) {
		for _, m := range htmlAnchorPattern.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := headingPattern.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := headingSlug(m[1])
		if n := seen[slug]; n > 0 {
			seen[slug]++
			slug += "-" + strconv.Itoa(n)
		} else {
			seen[slug] = 1
		}
		out[slug] = true
	}
	return out
}

func TestHeadingSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The cycle process's runtime settings":                "the-cycle-processs-runtime-settings",
		"The exchange: pipelined or waiting":                  "the-exchange-pipelined-or-waiting",
		"2026-12-07: performance.md rewritten; figures today": "2026-12-07-performancemd-rewritten-figures-today",
		"`cycle.recvspin` and [links](x.md) — µs":             "cyclerecvspin-and-links--µs",
	} {
		if got := headingSlug(heading); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", heading, got, want)
		}
	}
	got := anchors("# A\n## A\n```\n# B\n```\n<a id=\"c\"></a>\n### A ##\n")
	for _, want := range []string{"a", "a-1", "a-2", "c"} {
		if !got[want] {
			t.Errorf("anchors lack %q: %v", want, got)
		}
	}
	if got["b"] {
		t.Errorf("a heading in a fenced block counted: %v", got)
	}
}

// TestAnchorsResolve checks that every link to an anchor in README.md and
// docs/*.md, in the same file or another Markdown file of the repository,
// names a heading or HTML anchor that file has.
func TestAnchorsResolve(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "README.md"))
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := cache[path]; ok {
			return a
		}
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cache[path] = anchors(string(text))
		return cache[path]
	}
	checked := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range linkTargets(string(text)) {
			file, anchor, ok := strings.Cut(target, "#")
			if !ok || external(target) || (file != "" && !strings.HasSuffix(file, ".md")) {
				continue
			}
			path := f
			if file != "" {
				path = filepath.Join(filepath.Dir(f), filepath.FromSlash(file))
			}
			if _, err := os.Stat(path); err != nil {
				continue // TestLinksResolve reports it
			}
			checked++
			if !anchorsOf(path)[anchor] {
				t.Errorf("%s links to %s, but %s has no heading or anchor %q", f, target, path, anchor)
			}
		}
	}
	if checked == 0 {
		t.Error("no link to an anchor checked")
	}
}
