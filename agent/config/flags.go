package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// FlagConfigFile is the flag that names the YAML file (--config FILE).
const FlagConfigFile = "config"

// RegisterFlags adds --config and one flag per key (--cycle.period,
// --bus.interface, …) to fs, each with its help text, its environment
// variable and its built-in default. Pass the parsed fs to [Load] as
// [Sources].Flags. It panics, as pflag does, if fs already has a flag of the
// same name.
func RegisterFlags(fs *pflag.FlagSet) {
	registerFlags(fs, func(string) bool { return true })
}

// RegisterFlagsFor is [RegisterFlags] for a command that reads only some
// keys: it adds --config and the flags of the keys named, where a section
// ("bus") names every key inside it. The file and the environment may still
// set every key, as [Load] reads them whole. It panics on a name that is
// neither a key nor a section, which only a change to the caller can cause.
func RegisterFlagsFor(fs *pflag.FlagSet, keys ...string) {
	s := newSchema()
	for _, k := range keys {
		if _, ok := s.field(k); !ok && !s.isSection(k) {
			panic(fmt.Sprintf("config: RegisterFlagsFor: no key or section %q", k))
		}
	}
	registerFlags(fs, func(key string) bool {
		for _, k := range keys {
			if key == k || strings.HasPrefix(key, k+".") {
				return true
			}
		}
		return false
	})
}

func registerFlags(fs *pflag.FlagSet, want func(key string) bool) {
	fs.String(FlagConfigFile, "", "read the configuration from the YAML `FILE` (env "+EnvConfigFile+"); "+
		"the lists of mappings (drives, bus.pdo, bus.slaves) have no flag or environment variable, only the file sets them "+
		"(examples: deploy/examples/servo-*.yaml; their keys: ecagent config schema)")
	def := Default()
	for _, f := range newSchema().fields {
		if f.kind == kindList || !want(f.key) {
			continue // lists are YAML only (see Describe)
		}
		usage := f.help + " (env " + EnvName(f.key) + ")"
		switch v := f.get(&def).(type) {
		case string:
			fs.String(f.key, v, usage)
		case int:
			fs.Int(f.key, v, usage)
		case bool:
			fs.Bool(f.key, v, usage)
		case time.Duration:
			fs.Duration(f.key, v, usage)
		case []string:
			fs.StringSlice(f.key, v, usage+"; comma separated")
		}
	}
}
