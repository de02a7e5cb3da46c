package main

import (
	"context"
	"fmt"

	"github.com/ecagent/ecagent/internal/buildinfo"
)

// buildVersion returns the module version and VCS revision the binary was
// built from (internal/buildinfo).
func buildVersion() (version, revision string, dirty bool) { return buildinfo.Read() }

func versionCommand(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "version", help{
		about:    "Print the version, VCS revision and Go version of this binary.",
		examples: []string{"ecagent version"},
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, buildinfo.Line("ecagent"))
	return nil
}
