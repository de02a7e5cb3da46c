// Package config loads, validates and prints the configuration of the
// ecagent agent.
//
// # Layers
//
// A [Config] is built from four layers; each later layer overrides the keys it
// sets and leaves the others alone:
//
//  1. built-in defaults ([Default]);
//  2. a YAML file, if one is named (by [Sources].File, else the --config flag,
//     else the ECAGENT_CONFIG environment variable);
//  3. environment variables ECAGENT_…;
//  4. command-line flags registered by [RegisterFlags], but only those the user
//     actually set (a flag's default never overrides a file or the environment).
//
// # Keys
//
// Keys are dotted paths such as cycle.period or bus.interface. Key names are
// lower case and contain no underscores (a test enforces this), which keeps the
// environment mapping unambiguous.
//
// # Environment variables
//
// A variable maps to a key by dropping the ECAGENT_ prefix, lower-casing the
// rest and turning every underscore into a dot:
//
//	ECAGENT_CYCLE_PERIOD=250us        → cycle.period
//	ECAGENT_BUS_INTERFACE=eth1        → bus.interface
//	ECAGENT_BUS_EXPECTEDSLAVES=7      → bus.expectedslaves
//	ECAGENT_BUS_DEVICES=EK1100,EL2004 → bus.devices (lists are comma separated)
//
// ECAGENT_CONFIG names the YAML file. A variable that lands inside a known
// section (ECAGENT_CYCLE_PERIDO) but names no key is an error, with the closest
// key offered. Any other ECAGENT_ variable is ignored, because environments
// carry foreign ones: Kubernetes, for example, injects ECAGENT_PORT and
// ECAGENT_SERVICE_HOST for a Service named ecagent. Use [EnvName] to get the
// variable for a key.
//
// # Values
//
// Durations are Go duration strings ("1ms", "250us", "5s"); a bare number is
// rejected because its unit would be a guess, except 0. Lists are YAML
// sequences, or comma-separated strings in the environment and on the command
// line. A YAML null (a key with nothing after the colon) leaves the key unset.
//
// Lists of mappings (drives, bus.pdo) exist only in the YAML file: they have
// no environment variable and no flag, and [Describe] lists their item keys
// (`ecagent config schema`). Problems inside them name the item's key, e.g.
// drives[0].target.period, with the line of the file it is on (or of the
// nearest enclosing key when it is missing). An empty list ([]) is the
// same as none.
//
// # Errors
//
// [Load] reports every problem at once (errors.Join). Each problem about a
// value is a [*FieldError] naming the key, the value as written, where it came
// from and what is allowed; unknown keys are [*UnknownKeyError]s; a file that
// cannot be read or parsed is a [*FileError].
package config
