package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ecagent/ecagent/agent/config"
)

// configDocPath is the configuration reference, relative to the module
// root; TestConfigDoc keeps it equal to what writeConfigDoc makes.
const configDocPath = "docs/configuration.md"

// writeConfigDoc writes the configuration reference in Markdown: how the
// layers combine, then every key by section, from the same description
// `ecagent config schema` prints.
func writeConfigDoc(w io.Writer, d config.Description) error {
	var b strings.Builder
	b.WriteString(`# Configuration reference

<!-- Generated from the code by "go test ./cmd/ecagent -run TestConfigDoc -update"; do not edit. -->

Every command reads its settings in four layers, each overriding the one before only for the keys
it sets:

1. the built-in defaults (below);
2. a YAML file: ` + "`--config FILE`" + `, or the file the environment variable ` + "`ECAGENT_CONFIG`" + ` names;
3. environment variables: ` + "`ECAGENT_`" + ` and the key in capitals, with ` + "`_`" + ` for each ` + "`.`" + `
   (` + "`cycle.period`" + ` is ` + "`ECAGENT_CYCLE_PERIOD`" + `); lists are comma separated;
4. flags: ` + "`--KEY VALUE`" + ` (` + "`--cycle.period 250us`" + `), but only those given on the command line.

Each command accepts the flags of the keys it reads (` + "`ecagent COMMAND --help`" + ` shows the common
ones); the file and the environment may set any key. Durations carry a unit (` + "`250us`" + `, ` + "`1ms`" + `,
` + "`5s`" + `). Keys marked *file only* are lists of mappings that only the YAML file can set; an item's
keys are written ` + "`drives[].mode`" + ` here, and ` + "`drives[0].mode`" + ` in error messages.

` + "`ecagent config schema`" + ` prints this reference (` + "`--json`" + ` for tools), ` + "`ecagent config check FILE`" + `
validates a file (exit code 2 with every problem, its line and what is allowed), and
` + "`ecagent run --print-config`" + ` prints the effective configuration as YAML. Examples:
` + "`deploy/examples/`" + `.
`)
	section, started := "", false
	for _, k := range d.Keys {
		if s := topSection(k); s != section || !started {
			section, started = s, true
			fmt.Fprintf(&b, "\n## %s\n", docSectionTitle(d, s))
		}
		fmt.Fprintf(&b, "\n### `%s`\n\n%s\n\n", k.Key, mdText(k.Description))
		facts := []string{"type: " + k.Type}
		if k.Default != "" {
			def := "`" + k.Default + "`"
			if strings.HasPrefix(k.Default, "(") { // a description, not a value
				def = k.Default
			}
			facts = append(facts, "default: "+def)
		}
		if k.FileOnly {
			facts = append(facts, "file only")
		}
		fmt.Fprintf(&b, "- %s\n", strings.Join(facts, "; "))
		if k.Allowed != "" {
			fmt.Fprintf(&b, "- allowed: %s\n", mdText(k.Allowed))
		}
		if k.Env != "" {
			fmt.Fprintf(&b, "- environment: `%s`; flag: `%s`\n", k.Env, k.Flag)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// docSectionTitle is a section heading of the document.
func docSectionTitle(d config.Description, s string) string {
	if s == "" {
		return "Fleet labels (top level)"
	}
	for _, sec := range d.Sections {
		if sec.Key == s {
			return "`" + s + "`: " + mdText(sec.Description)
		}
	}
	return "`" + s + "`"
}

// mdText escapes what Markdown would take for markup in help text.
func mdText(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "<", `\<`, "`", "\\`", "|", `\|`)
	return r.Replace(s)
}
