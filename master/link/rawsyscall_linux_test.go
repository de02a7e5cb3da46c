//go:build linux

package link

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestFrameCallsAreRaw: the system calls that carry the cycle's frames
// (send, poll, read: none of them can block on the non-blocking socket)
// are raw, so that the runtime never hands the cycle thread's P off for
// them and sysmon cannot take it mid-call (the cycle would then wait for
// another thread to give it back). Any call into package unix other than
// a raw system call in those methods fails the test.
func TestFrameCallsAreRaw(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fd_linux.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"send": false, "poll": false, "read": false}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil {
			continue
		}
		if _, hot := want[fn.Name.Name]; !hot {
			continue
		}
		want[fn.Name.Name] = true
		raw := 0
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "unix" {
				if strings.HasPrefix(sel.Sel.Name, "RawSyscall") {
					raw++
				} else {
					t.Errorf("%s: (*fdConn).%s calls unix.%s, not a raw system call", fset.Position(call.Pos()), fn.Name.Name, sel.Sel.Name)
				}
			}
			return true
		})
		if raw == 0 {
			t.Errorf("(*fdConn).%s makes no raw system call", fn.Name.Name)
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("(*fdConn).%s not found in fd_linux.go", name)
		}
	}
}
