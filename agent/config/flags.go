package config

import (
	"time"

	"github.com/spf13/pflag"
)

// FlagConfigFile is the flag that names the YAML file (--config FILE).
const FlagConfigFile = "config"

// RegisterFlags adds --config and one flag per key (--cycle.period,
// --bus.interface, …) to fs, each with its help text, its environment
// variable and its built-in default, so that --help documents every setting.
// Pass the parsed fs to [Load] as [Sources].Flags. It panics, as pflag does,
// if fs already has a flag of the same name.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.String(FlagConfigFile, "", "read the configuration from the YAML `FILE` (or set "+EnvConfigFile+"). "+
		"Lists of mappings have no flag or environment variable; only the file sets them "+
		"(examples: deploy/examples/servo-*.yaml):"+listHelp())
	def := Default()
	for _, f := range newSchema().fields {
		if f.kind == kindList {
			continue // YAML only, documented under --config
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
