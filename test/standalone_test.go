package test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoTestReadsOutsideTheRepository parses every Go file the repository
// tracks and fails for each string literal that names a path outside it:
// an absolute path into a work tree (/work/, /home/, /root/), or a relative
// path whose "../" steps climb above the module root from the file's own
// folder (where go test runs its package), alone or as the leading ".."
// arguments of a filepath.Join. A clone of the repository must run its tests
// alone; the real-hardware data lives in testdata/real-hw.
func TestNoTestReadsOutsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := trackedGoFiles(t, root)
	if len(files) < 100 {
		t.Fatalf("found %d Go files; the repository has more", len(files))
	}
	for _, f := range files {
		if f == "test/standalone_test.go" {
			continue // the detector's own patterns
		}
		for _, bad := range outsidePaths(t, root, f) {
			t.Errorf("%s: %s", f, bad)
		}
	}
}

// TestOutsidePathsFinds checks the detector on sources that must and must
// not be flagged, so a detector that finds nothing cannot pass the tree.
func TestOutsidePathsFinds(t *testing.T) {
	cases := []struct {
		name, file, src string
		want            int
	}{
		{"climbs above", "master/x_test.go", `package x; const p = "../../elsewhere/data/a.bin"`, 1},
		{"stays inside", "master/x_test.go", `package x; const p = "../testdata/real-hw/sii"`, 0},
		{"absolute work tree", "master/x_test.go", `package x; const p = "/work/elsewhere/data/a"`, 1},
		{"join climbs", "agent/x_test.go", `package x; import "path/filepath"; var p = filepath.Join("..", "..", "elsewhere", "a")`, 1},
		{"join inside", "agent/x_test.go", `package x; import "path/filepath"; var p = filepath.Join("..", "testdata", "a")`, 0},
		{"system path", "agent/x_test.go", `package x; const p = "/proc/self/status"`, 0},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := outsidePaths(t, dir, c.file); len(got) != c.want {
				t.Errorf("found %v, want %d finding(s)", got, c.want)
			}
		})
	}
}

func trackedGoFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "*.go")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	// A file deleted in the work tree but not yet in a commit is still in
	// the index: it is no file of the tree any more.
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	return files
}

// outsidePaths returns a description of each literal path in the file
// (relative to root) that leads outside root.
func outsidePaths(t *testing.T, root, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, file), nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	dir := filepath.Join(root, filepath.Dir(file))
	escapes := func(rel string) bool {
		p := filepath.Clean(filepath.Join(dir, rel))
		return p != root && !strings.HasPrefix(p, root+string(filepath.Separator))
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Join" {
				return true
			}
			var parts []string
			for _, a := range n.Args {
				lit, ok := a.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					break
				}
				s, _ := strconv.Unquote(lit.Value)
				parts = append(parts, s)
			}
			if len(parts) > 0 && parts[0] == ".." && escapes(filepath.Join(parts...)) {
				found = append(found, fset.Position(n.Pos()).String()+": Join("+strings.Join(parts, ", ")+") leaves the repository")
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(n.Value)
			if err != nil {
				return true
			}
			switch {
			case strings.HasPrefix(s, "/work/") || strings.HasPrefix(s, "/home/") || strings.HasPrefix(s, "/root/"):
				found = append(found, fset.Position(n.Pos()).String()+": absolute path "+strconv.Quote(s))
			case strings.HasPrefix(s, "../") && escapes(s):
				found = append(found, fset.Position(n.Pos()).String()+": "+strconv.Quote(s)+" leaves the repository")
			}
		}
		return true
	})
	return found
}
