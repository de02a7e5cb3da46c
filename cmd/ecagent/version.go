package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// buildVersion returns the module version and VCS revision the binary was
// built from, as recorded by the Go toolchain.
func buildVersion() (version, revision string, dirty bool) {
	version, revision = "(devel)", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
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
	return
}

func versionCommand(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "version", help{
		about:    "Print the version, VCS revision and Go version of this binary.",
		examples: []string{"ecagent version"},
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	v, rev, dirty := buildVersion()
	if dirty {
		rev += "-dirty"
	}
	fmt.Fprintf(e.stdout, "ecagent %s (revision %s, %s, %s/%s)\n", v, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
