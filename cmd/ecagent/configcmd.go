package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/sim"
)

// configHelp is the help of `ecagent config` and of its subcommands.
func configHelp() help {
	return help{
		usage: "schema [--json] | check FILE | from-bus [flags] | from-eni FILE [--json]",
		about: "Print the configuration schema (every key with its type, default, allowed values, " +
			"environment variable and flag, including the file-only lists drives and bus.pdo), or " +
			"check a configuration file the way 'ecagent run' would read it.",
		notes: "'config check' exits 0 when the file is valid and 2 with every problem (key, value, " +
			"line, what is allowed) when it is not; it reads only the file, not ECAGENT_* variables, and only a " +
			"regular file (a FIFO, a device or a directory is refused at once). " +
			"docs/configuration.md is the schema as a document.",
		examples: []string{
			"ecagent config schema | less",
			"ecagent config schema --json | jq -r '.keys[].key'",
			"ecagent config check /etc/ecagent/ecagent.yaml",
			"ecagent config from-bus > bus.yaml   # the segment as it is",
			"ecagent config from-eni line.xml     # what an ENI gives",
		},
	}
}

func configCommand(ctx context.Context, e *env, args []string) error {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "from-bus":
		return configFromBusCommand(ctx, e, args)
	case "from-eni":
		return configFromENICommand(ctx, e, args)
	}
	fs := newFlagSet(e, "config", configHelp())
	asJSON := fs.Bool("json", false, "config schema: print the schema as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	switch sub {
	case "schema":
		if fs.NArg() > 0 {
			return usageError{fmt.Errorf("config schema: unexpected argument %q", fs.Arg(0))}
		}
		d := config.Describe(sim.Models())
		if *asJSON {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(d)
		}
		return writeSchemaText(e.stdout, d)
	case "check":
		if fs.NArg() != 1 {
			return usageError{errors.New("config check: want one FILE")}
		}
		if *asJSON {
			return usageError{errors.New("config check: --json is a flag of config schema")}
		}
		path := fs.Arg(0)
		if err := checkRegularFile(path); err != nil {
			return usageError{fmt.Errorf("config check: %w", err)}
		}
		if _, err := loadConfig(ctx, config.Sources{File: path, Models: sim.Models()}); err != nil {
			return err
		}
		_, err := fmt.Fprintf(e.stdout, "%s: valid\n", path)
		return err
	case "":
		return usageError{errors.New("config: want a subcommand: schema or check (or from-bus, from-eni)")}
	}
	return usageError{fmt.Errorf("config: unknown subcommand %q (want schema or check, or from-bus, from-eni)", sub)}
}

// checkRegularFile refuses at once what config check does not read: a
// FIFO (whose open would wait for a writer), a device, a socket, a
// directory. A symbolic link to a regular file is followed, as the agent
// does.
func checkRegularFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a %s, not a regular file: config check reads only a file (ecagent run --config reads a pipe)", path, fileType(fi.Mode()))
	}
	return nil
}

// fileType names the type of a file that is not a regular one.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file (" + m.Type().String() + ")"
}

// writeSchemaText prints the schema for people: the keys by section, each
// with its type, default, what is allowed, its help and where else it can
// be set.
func writeSchemaText(w io.Writer, d config.Description) error {
	var b strings.Builder
	b.WriteString(wrap("Every key can be set in the YAML file (--config FILE or ECAGENT_CONFIG), as an "+
		"environment variable and as a flag of the commands that read it; flags override the "+
		"environment, which overrides the file, which overrides the defaults. Keys marked "+
		"'file only' are lists of mappings that only the file can set.", "", helpWidth))
	section, started := "", false
	for _, k := range d.Keys {
		if s := topSection(k); s != section || !started {
			section, started = s, true
			fmt.Fprintf(&b, "\n[%s\n", sectionTitle(d, s))
		}
		line := fmt.Sprintf("%s  %s", k.Key, k.Type)
		if k.Default != "" {
			line += "  default: " + k.Default
		}
		if k.FileOnly {
			line += "  (file only)"
		}
		b.WriteString("\n" + line + "\n")
		b.WriteString(wrap(k.Description, "    ", helpWidth))
		if k.Allowed != "" {
			b.WriteString(wrap("allowed: "+k.Allowed, "    ", helpWidth))
		}
		if k.Env != "" {
			b.WriteString(wrap("env "+k.Env+", flag "+k.Flag, "    ", helpWidth))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// topSection is the top-level section a key is in, "" for a top-level
// value: "bus.dc.enabled" → "bus", "drives[].mode" → "drives", and a
// top-level list of mappings heads its own section: "drives" → "drives".
func topSection(k config.KeyInfo) string {
	i := strings.IndexAny(k.Key, ".[")
	switch {
	case i >= 0:
		return k.Key[:i]
	case k.Type == "list":
		return k.Key
	}
	return ""
}

// sectionTitle names a top-level section with its help, as the headings
// of the schema and the document do.
func sectionTitle(d config.Description, s string) string {
	if s == "" {
		return "top level] fleet labels"
	}
	for _, sec := range d.Sections {
		if sec.Key == s {
			return s + "] " + sec.Description
		}
	}
	return s + "]" // a list of mappings at the top level (drives)
}
