package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/knadh/koanf/maps"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
	yamlv3 "go.yaml.in/yaml/v3"
)

// EnvPrefix starts every environment variable the configuration reads.
const EnvPrefix = "ECAGENT_"

// EnvConfigFile is the environment variable that names the YAML file when
// neither [Sources].File nor the --config flag does.
const EnvConfigFile = EnvPrefix + "CONFIG"

// Sources names the layers [Load] reads. The zero value loads the defaults
// alone.
type Sources struct {
	// File is the YAML file to read. "" falls back to the --config flag in
	// Flags, then to ECAGENT_CONFIG in Environ; if none names a file, the
	// file layer is skipped.
	File string
	// Environ is the environment as KEY=VALUE strings; pass os.Environ().
	// It is a parameter (nil means no environment layer) so that tests can
	// run in parallel without touching the process environment.
	Environ []string
	// Flags is the caller's flag set after Parse, with the flags of
	// [RegisterFlags]; only flags the user set override. Other flags in the
	// set are ignored. Nil means no flag layer.
	Flags *pflag.FlagSet
	// Models are the device model names the simulator provides, checked
	// against bus.devices. Nil checks device entries only for shape.
	Models []string
}

// Load builds the configuration from defaults, the YAML file, the
// environment and the flags, in that order, and validates it like
// [Config.ValidateWithModels] plus checks that the files it names exist (SII
// images of a simulated segment, metrics.webconfig, a cycle.program path). It reports every problem
// at once, joined with errors.Join; on error the returned Config is the zero
// value.
func Load(src Sources) (Config, error) {
	return load(src, readConfigFile)
}

// load is [Load] with the file layer read by readFile, so that tests can
// feed it bytes without a file.
func load(src Sources, readFile func(path string) ([]byte, error)) (Config, error) {
	l := &loader{schema: newSchema(), k: koanf.New("."), origin: map[string]string{}, readFile: readFile}
	def := Default()
	l.values = make(map[string]any, len(l.schema.fields))
	for _, f := range l.schema.fields {
		l.values[f.key] = f.get(&def)
		l.origin[f.key] = "default"
	}

	var errs []error
	if path := configPath(src); path != "" {
		errs = append(errs, l.loadFile(path)...)
	}
	errs = append(errs, l.loadEnv(src.Environ)...)
	if src.Flags != nil {
		errs = append(errs, l.loadFlags(src.Flags)...)
	}
	// Every layer sets leaves of the schema only, so the last value of
	// each key wins and one merge into koanf is enough: koanf flattens its
	// whole map again after every merge.
	if err := l.k.Load(nestedValues(maps.Unflatten(l.values, ".")), nil); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}

	cfg, failed, decodeErrs := l.decode(def)
	errs = append(errs, decodeErrs...)
	for _, p := range cfg.problems(src.Models, hostCPUs) {
		if !isFailed(failed, p.Key) {
			errs = append(errs, l.annotate(p))
		}
	}
	errs = append(errs, l.missingFiles(cfg, failed)...)

	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// configPath picks the YAML file: Sources.File, else --config, else
// ECAGENT_CONFIG.
func configPath(src Sources) string {
	if src.File != "" {
		return src.File
	}
	if src.Flags != nil {
		if f := src.Flags.Lookup(FlagConfigFile); f != nil && f.Changed {
			return f.Value.String()
		}
	}
	path := ""
	for _, kv := range src.Environ {
		if name, value, ok := strings.Cut(kv, "="); ok && name == EnvConfigFile {
			path = value // the last one wins, as in the environment layer
		}
	}
	return path
}

// EnvName returns the environment variable for a key:
// EnvName("cycle.period") is "ECAGENT_CYCLE_PERIOD".
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// envKey is the inverse of EnvName for a variable that has the prefix.
func envKey(name string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "_", "."))
}

// loader accumulates the layers in a koanf instance and remembers where each
// key's value came from.
type loader struct {
	schema schema
	k      *koanf.Koanf
	origin map[string]string // key → "default", "file:line", "ECAGENT_…", "--flag"
	// file and lines locate keys inside lists of mappings, which origin
	// records only as a whole: lines maps "drives[0].target.period" and
	// every other key of the file to its line.
	file  string
	lines map[string]int
	// values are the layers' values so far by schema key, the last layer's
	// winning; Load hands them to k when all layers are in.
	values map[string]any
	// readFile reads the YAML file.
	readFile func(path string) ([]byte, error)
}

// loadFile reads the YAML layer.
func (l *loader) loadFile(path string) []error {
	// One parse serves both koanf (the values, decoded from the tree as
	// koanf's YAML parser would) and the key lines, which koanf does not
	// keep.
	data, err := l.readFile(path)
	if err == nil && len(data) > MaxFileSize {
		err = tooLarge(int64(len(data)))
	}
	var doc yamlv3.Node
	if err == nil {
		err = yamlv3.Unmarshal(data, &doc)
	}
	if err == nil {
		// Bounded before decoding: yaml.v3's decoder takes time quadratic
		// in the keys of a mapping.
		if err := checkShape(&doc, path); err != nil {
			return []error{err}
		}
	}
	var tree map[string]any
	if err == nil && doc.Kind != 0 { // an empty file has no document
		err = doc.Decode(&tree)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in FileError
		}
		return []error{&FileError{Path: path, Err: err}}
	}
	// What koanf.Load and All would make of the tree, without All's deep
	// copy: nothing else holds the tree.
	maps.IntfaceKeysToStrings(tree)
	flat, _ := maps.Flatten(tree, nil, ".")
	lines := map[string]int{}
	l.file, l.lines = path, lines
	keyLines(&doc, "", lines)
	return l.merge(flat, func(key string) string {
		for k := key; k != ""; k = parentKey(k) {
			if n, ok := lines[k]; ok {
				return fmt.Sprintf("%s:%d", path, n)
			}
		}
		return path
	})
}

// keyLines records the line of every mapping key under n, by dotted path,
// and of every sequence item, by its index: "drives[0].target".
func keyLines(n *yamlv3.Node, prefix string, lines map[string]int) {
	switch n.Kind {
	case yamlv3.SequenceNode:
		base := strings.TrimSuffix(prefix, ".")
		for i, c := range n.Content {
			key := fmt.Sprintf("%s[%d]", base, i)
			lines[key] = c.Line
			keyLines(c, key+".", lines)
		}
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			keyLines(c, prefix, lines)
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := prefix + n.Content[i].Value
			lines[key] = n.Content[i].Line
			keyLines(n.Content[i+1], key+".", lines)
		}
	}
}

// loadEnv reads the environment layer.
func (l *loader) loadEnv(environ []string) []error {
	var errs []error
	names := map[string]string{} // key → variable
	p := env.Provider(".", env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			if name == EnvConfigFile {
				return "", nil
			}
			key := envKey(name)
			if _, ok := l.schema.field(key); ok {
				names[key] = name
				return key, value
			}
			// Only a variable inside one of our sections is ours to reject;
			// anything else (ECAGENT_PORT from Kubernetes, test variables)
			// belongs to someone else.
			first, _, _ := strings.Cut(key, ".")
			switch {
			case l.schema.isSection(key):
				errs = append(errs, l.sectionGivenValue(key, name))
			case l.schema.isSection(first):
				errs = append(errs, l.unknownKey(key, name))
			}
			return "", nil
		},
	})
	ek := koanf.New(".")
	if err := ek.Load(p, nil); err != nil {
		return append(errs, fmt.Errorf("config: environment: %w", err))
	}
	return append(errs, l.merge(ek.All(), func(key string) string { return names[key] })...)
}

// loadFlags reads the flag layer: only config keys, only flags the user set.
func (l *loader) loadFlags(fset *pflag.FlagSet) []error {
	// A nil koanf makes posflag skip every flag whose Changed is false.
	p := posflag.ProviderWithFlag(fset, ".", nil, func(f *pflag.Flag) (string, any) {
		if _, ok := l.schema.field(f.Name); !ok {
			return "", nil
		}
		return f.Name, posflag.FlagVal(fset, f)
	})
	fk := koanf.New(".")
	if err := fk.Load(p, nil); err != nil {
		return []error{fmt.Errorf("config: flags: %w", err)}
	}
	return l.merge(fk.All(), func(key string) string { return "--" + key })
}

// merge adds one layer's flattened keys to the result, rejecting keys the
// schema does not have. source names where a key came from.
func (l *loader) merge(flat map[string]any, source func(key string) string) []error {
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	var errs []error
	reported := map[string]bool{}
	unknown := 0              // keys the schema does not have
	var more *UnknownKeyError // the first of those beyond maxUnknownKeys
	for _, key := range keys {
		value := flat[key]
		if m, isMap := value.(map[string]any); value == nil || (isMap && len(m) == 0) {
			continue // null or {}: left unset
		}
		if _, ok := l.schema.field(key); ok {
			if long, ok := longValue(value); ok {
				errs = append(errs, valueTooLong(key, long, source(key)))
				continue
			}
			if !validText(value) {
				// It could not be printed back (--print-config) nor be
				// sent as a topic or label.
				errs = append(errs, &FieldError{Key: key, Value: fmt.Sprint(value), Source: source(key),
					Problem: "is not valid UTF-8 text"})
				continue
			}
			l.values[key] = value
			l.origin[key] = source(key)
			continue
		}
		if unknown++; unknown > maxUnknownKeys {
			// Each report looks for the closest known key: thousands of
			// them would take seconds and bury the first.
			if more == nil {
				more = &UnknownKeyError{Key: key, Source: source(key)}
			}
			continue
		}
		err := l.badKey(key, source(key))
		if fe, ok := err.(*FieldError); ok {
			if reported[fe.Key] {
				continue // one report per mapping, not per key inside it
			}
			reported[fe.Key] = true
		}
		errs = append(errs, err)
	}
	if more != nil {
		more.Problem = fmt.Sprintf("the first of %d more unknown keys, not listed", unknown-maxUnknownKeys)
		errs = append(errs, more)
	}
	return errs
}

// validText reports whether every string in v (a value, a list or a
// mapping as parsed) is valid UTF-8.
func validText(v any) bool {
	switch v := v.(type) {
	case string:
		return utf8.ValidString(v)
	case []any:
		for _, e := range v {
			if !validText(e) {
				return false
			}
		}
	case map[string]any:
		for k, e := range v {
			if !utf8.ValidString(k) || !validText(e) {
				return false
			}
		}
	}
	return true
}

// nestedValues is a koanf provider of values already parsed, nested by
// section.
type nestedValues map[string]any

// ReadBytes is not supported: the values are already parsed.
func (v nestedValues) ReadBytes() ([]byte, error) {
	return nil, errors.New("config: parsed values are not bytes")
}

// Read returns the values.
func (v nestedValues) Read() (map[string]any, error) { return v, nil }

// badKey explains a key that is not a leaf of the schema.
func (l *loader) badKey(key, source string) error {
	if l.schema.isSection(key) {
		return l.sectionGivenValue(key, source)
	}
	// A mapping where a value belongs, e.g. "period: {ms: 1}".
	for k := parentKey(key); k != ""; k = parentKey(k) {
		if f, ok := l.schema.field(k); ok {
			return &FieldError{Key: k, Value: "{…}", Source: source,
				Problem: "must be " + f.kind.String() + ", not a mapping"}
		}
	}
	return l.unknownKey(key, source)
}

func (l *loader) sectionGivenValue(key, source string) *UnknownKeyError {
	return &UnknownKeyError{Key: key, Source: source,
		Problem: fmt.Sprintf("%s is a section, not a value; set its keys: %s", key, strings.Join(l.schema.keysIn(key), ", "))}
}

func (l *loader) unknownKey(key, source string) *UnknownKeyError {
	return &UnknownKeyError{Key: key, Source: source, Suggestion: closestKey(key, l.schema.keys())}
}

// decode converts every merged value to its Go type. Keys that fail keep
// their default and are reported in failed.
func (l *loader) decode(def Config) (Config, map[string]bool, []error) {
	cfg := def
	failed := map[string]bool{}
	var errs []error
	for _, f := range l.schema.fields {
		raw := l.k.Get(f.key)
		if f.kind == kindList {
			v, problems := decodeList(f.elem, f.key, raw)
			for _, p := range problems {
				failed[p.key] = true
				errs = append(errs, l.itemError(p))
			}
			f.set(&cfg, v)
			continue
		}
		v, problem := decode(f, raw)
		if problem != "" {
			failed[f.key] = true
			errs = append(errs, &FieldError{Key: f.key, Value: formatValue(raw), Source: l.origin[f.key], Problem: problem})
			continue
		}
		f.set(&cfg, v)
	}
	// Levels and formats are words; accept INFO from an environment.
	cfg.Log.Level = strings.ToLower(strings.TrimSpace(cfg.Log.Level))
	cfg.Log.Format = strings.ToLower(strings.TrimSpace(cfg.Log.Format))
	for i := range cfg.Drives {
		d := &cfg.Drives[i]
		d.Mode = strings.ToLower(strings.TrimSpace(d.Mode))
		d.FaultReset = strings.ToLower(strings.TrimSpace(d.FaultReset))
		d.Target.Kind = strings.ToLower(strings.TrimSpace(d.Target.Kind))
	}
	return cfg, failed, errs
}

// itemError turns a problem inside a list of mappings into an error.
func (l *loader) itemError(p itemProblem) error {
	if p.unknown {
		return &UnknownKeyError{Key: p.key, Source: l.source(p.key), Suggestion: p.suggestion}
	}
	return &FieldError{Key: p.key, Value: p.value, Source: l.source(p.key), Problem: p.problem}
}

// source says where key's value came from. A key inside a list of
// mappings from the file gets the line of the nearest key or item that the
// file has.
func (l *loader) source(key string) string {
	src := l.origin[baseKey(key)]
	if l.file == "" || !strings.HasPrefix(src, l.file) {
		return src
	}
	for k := key; k != ""; k = parentItemKey(k) {
		if n, ok := l.lines[k]; ok {
			return fmt.Sprintf("%s:%d", l.file, n)
		}
	}
	return src
}

// parentItemKey drops the last segment or index:
// "drives[0].target" → "drives[0]" → "drives".
func parentItemKey(key string) string {
	if i := strings.LastIndexAny(key, ".["); i >= 0 {
		return key[:i]
	}
	return ""
}

// isFailed reports whether key, or a key it lies in, failed to decode.
func isFailed(failed map[string]bool, key string) bool {
	for k := key; k != ""; k = parentItemKey(k) {
		if failed[k] {
			return true
		}
	}
	return false
}

// annotate adds the source and the value as written to a validation
// problem.
func (l *loader) annotate(p *FieldError) *FieldError {
	key := baseKey(p.Key)
	p.Source = l.source(p.Key)
	if key == p.Key { // list items already carry their own text
		p.Value = formatValue(l.k.Get(key))
	}
	return p
}

// missingFiles reports files named by cfg that cannot be used.
func (l *loader) missingFiles(cfg Config, failed map[string]bool) []error {
	var errs []error
	if cfg.Simulated() && !failed["bus.devices"] {
		for i, d := range cfg.Bus.Devices {
			what, path := "the SII image", d
			switch {
			case IsESIDevice(d):
				what, path = "the ESI file", esiFile(d)
			case !IsSIIImage(d):
				continue
			}
			if problem := fileProblem(path); problem != "" {
				errs = append(errs, &FieldError{Key: fmt.Sprintf("bus.devices[%d]", i), Value: d,
					Source: l.origin["bus.devices"], Problem: "cannot use " + what + ": " + problem})
			}
		}
	}
	if !failed["bus.esi"] {
		errs = append(errs, esiProblems(cfg.Bus.ESI, l.origin["bus.esi"])...)
	}
	if p := cfg.Cycle.Program; strings.ContainsRune(p, '/') && !failed["cycle.program"] {
		// A name without a slash is looked up in $PATH when the agent
		// starts the cycle, in the agent's environment, not here.
		problem := fileProblem(p)
		if info, err := os.Stat(p); problem == "" && err == nil && info.Mode().Perm()&0o111 == 0 {
			problem = "not executable"
		}
		if problem != "" {
			errs = append(errs, &FieldError{Key: "cycle.program", Value: p,
				Source: l.origin["cycle.program"], Problem: "cannot use the cycle program: " + problem})
		}
	}
	if w := cfg.Metrics.WebConfig; w != "" && !failed["metrics.webconfig"] {
		if problem := fileProblem(w); problem != "" {
			errs = append(errs, &FieldError{Key: "metrics.webconfig", Value: w,
				Source: l.origin["metrics.webconfig"], Problem: "cannot use the web configuration file: " + problem})
		}
	}
	return errs
}

// fileProblem says why path is not a readable regular file, or "".
func fileProblem(path string) string {
	info, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err.Error()
		}
		return err.Error()
	}
	if !info.Mode().IsRegular() {
		return "not a regular file"
	}
	return ""
}

// baseKey strips a list index: "bus.devices[2]" → "bus.devices".
func baseKey(key string) string {
	if i := strings.IndexByte(key, '['); i >= 0 {
		return key[:i]
	}
	return key
}

// parentKey drops the last segment: "cycle.period" → "cycle", "cycle" → "".
func parentKey(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i]
	}
	return ""
}
