package test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Size limits of a non-test function: a reader takes in a function of up
// to maxFuncLines lines (from func to its closing brace) and up to
// maxComplexity paths through it (cyclomatic complexity, counted as
// gocyclo does) in one sitting.
const (
	maxFuncLines  = 80
	maxComplexity = 25
)

// oversized lists the functions that were over a limit when the limits
// came (issue 31), with their size then: lines and complexity. Such a
// function may shrink but not grow; once it is within both limits its
// entry must go (the test fails on a stale entry), and no function may
// join the list. The last four were split in issue 31's leftovers: the
// list is empty, and stays so.
var oversized = map[string]funcSize{}

// funcSize is the size of one function.
type funcSize struct{ lines, complexity int }

// TestFunctionSize measures every non-test function of the module and
// fails for each one over a limit that the allowlist does not name, for
// each allowlisted one that grew, and for each stale allowlist entry.
func TestFunctionSize(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]funcSize{}
	for _, f := range trackedGoFiles(t, root) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for name, s := range fileFuncSizes(t, filepath.Join(root, f)) {
			sizes[f+":"+name] = s
		}
	}
	if len(sizes) < 1000 {
		t.Fatalf("measured %d functions; the module has more", len(sizes))
	}
	for _, p := range sizeProblems(sizes, oversized) {
		t.Error(p)
	}
}

// sizeProblems compares the measured sizes with the limits and the
// allowlist and describes each violation, sorted.
func sizeProblems(sizes, allowed map[string]funcSize) []string {
	var out []string
	for name, s := range sizes {
		over := s.lines > maxFuncLines || s.complexity > maxComplexity
		a, listed := allowed[name]
		switch {
		case over && !listed:
			out = append(out, fmt.Sprintf("%s: %d lines, complexity %d; the limits are %d and %d: split it",
				name, s.lines, s.complexity, maxFuncLines, maxComplexity))
		case listed && !over:
			out = append(out, fmt.Sprintf("%s is within the limits now (%d lines, complexity %d): delete its entry in oversized",
				name, s.lines, s.complexity))
		case listed && (s.lines > max(a.lines, maxFuncLines) || s.complexity > max(a.complexity, maxComplexity)):
			out = append(out, fmt.Sprintf("%s grew to %d lines, complexity %d (allowed while it shrinks: %d, %d): split it",
				name, s.lines, s.complexity, a.lines, a.complexity))
		}
	}
	for name := range allowed {
		if _, ok := sizes[name]; !ok {
			out = append(out, fmt.Sprintf("%s is in oversized but no longer exists: delete its entry", name))
		}
	}
	sort.Strings(out)
	return out
}

// fileFuncSizes returns the size of each function declared in a file, by
// its name (Type.Method for a method).
func fileFuncSizes(t *testing.T, path string) map[string]funcSize {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	out := map[string]funcSize{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		out[funcName(fn)] = funcSize{
			lines:      fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1,
			complexity: complexity(fn),
		}
	}
	return out
}

// funcName is Name, or Type.Name for a method (pointer or not).
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr: // generic receiver T[P]
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// complexity is the cyclomatic complexity of a function as gocyclo
// counts it: 1, plus one for each if, for, range, case and select case
// (not default), && and ||, function literals inside included.
func complexity(fn *ast.FuncDecl) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// TestSizeRules checks the measure and the verdicts on sources whose
// sizes are known, so a measure that finds nothing cannot pass the tree.
func TestSizeRules(t *testing.T) {
	src := `package x

func small(a, b bool) int {
	if a && b || !a {
		return 1
	}
	for i := range 3 {
		switch i {
		case 1, 2:
		default:
		}
	}
	select {
	case <-make(chan int):
	default:
	}
	f := func() {
		for {
		}
	}
	_ = f
	return 0
}

type T struct{}

func (*T) method() {}
`
	path := filepath.Join(t.TempDir(), "x.go")
	write(t, path, src)
	got := fileFuncSizes(t, path)
	// 1 + if + && + || + range + case 1, 2 + select case + for = 8
	if s := got["small"]; s.complexity != 8 || s.lines != 21 {
		t.Errorf("small: %+v, want 21 lines, complexity 8", s)
	}
	if _, ok := got["T.method"]; !ok {
		t.Errorf("no T.method in %v", got)
	}
	sizes := map[string]funcSize{
		"a.go:new":     {81, 1},
		"a.go:listed":  {100, 30},
		"a.go:grew":    {90, 20},
		"a.go:fixed":   {80, 25},
		"a.go:shrinks": {85, 26},
	}
	allowed := map[string]funcSize{
		"a.go:listed":  {100, 30},
		"a.go:grew":    {89, 20},
		"a.go:fixed":   {120, 40},
		"a.go:shrinks": {99, 30},
		"a.go:gone":    {99, 30},
	}
	want := []string{"a.go:fixed is within", "a.go:gone is in oversized", "a.go:grew grew", "a.go:new: 81 lines"}
	problems := sizeProblems(sizes, allowed)
	if len(problems) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(problems, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w) {
			t.Errorf("problem %d = %q, want it to start with %q", i, problems[i], w)
		}
	}
}
