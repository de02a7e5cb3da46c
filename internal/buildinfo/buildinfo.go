// Package buildinfo reads what the Go toolchain recorded about the binary
// being run: its module version and VCS revision, for the version lines of
// ecagent and ecagent-cycle.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Read returns the module version ("(devel)" for a work-tree build), the
// VCS revision ("unknown" without one) and whether the work tree had
// uncommitted changes.
func Read() (version, revision string, dirty bool) {
	version, revision = "(devel)", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version, revision, false
	}
	if bi.Main.Version != "" {
		version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return version, revision, dirty
}

// Line is the version line of the program called name, e.g.
// "ecagent v1.2.0 (revision 1c50283…, go1.26.0, linux/amd64)"; a dirty
// work tree's revision ends in "-dirty".
func Line(name string) string {
	v, rev, dirty := Read()
	if dirty {
		rev += "-dirty"
	}
	return fmt.Sprintf("%s %s (revision %s, %s, %s/%s)", name, v, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
