package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// Description is the whole configuration schema as people and tools read
// it (`ecagent config schema`, docs/configuration.md): every section and
// every key, including the keys inside lists of mappings, which only the
// YAML file can set. It is derived from the [Config] type's tags, from
// [Default] and from the validator itself, so it cannot drift from what
// [Load] accepts.
type Description struct {
	// Sections are the keys that hold other keys, e.g. "cycle".
	Sections []SectionInfo `json:"sections"`
	// Keys are the leaf keys in declaration order. Keys inside a list of
	// mappings are written with "[]": "bus.pdo[].rxpdos[].index".
	Keys []KeyInfo `json:"keys"`
}

// SectionInfo describes one section.
type SectionInfo struct {
	// Key is the dotted section key.
	Key string `json:"key"`
	// Description is the section's help text.
	Description string `json:"description"`
}

// KeyInfo describes one configuration key.
type KeyInfo struct {
	// Key is the dotted key; items of lists of mappings are marked "[]".
	Key string `json:"key"`
	// Type is string, int, bool, duration, strings (a list of strings),
	// list (a list of mappings), uint16 or entry (see the description).
	Type string `json:"type"`
	// Default is the built-in value as the YAML file writes it; for a key
	// inside a list of mappings, the value an item starts from.
	Default string `json:"default"`
	// Allowed is what the validator says about a value it refuses: the
	// range or the allowed words. Empty when any value of the type goes.
	Allowed string `json:"allowed,omitempty"`
	// Description is the key's help text.
	Description string `json:"description"`
	// Env is the environment variable; empty for file-only keys.
	Env string `json:"env,omitempty"`
	// Flag is the command-line flag, e.g. "--cycle.period"; empty for
	// file-only keys.
	Flag string `json:"flag,omitempty"`
	// FileOnly marks the lists of mappings and the keys of their items:
	// only the YAML file can set them.
	FileOnly bool `json:"fileOnly"`
}

// hostDefault stands for the default of host, which is the machine's name
// and so differs from host to host.
const hostDefault = "(the operating system's host name)"

// Describe returns the configuration schema. models are the device model
// names the simulator provides, as in [Sources].Models; nil describes
// bus.devices by shape only.
func Describe(models []string) Description {
	s := newSchema()
	var d Description
	for _, sec := range s.sections {
		d.Sections = append(d.Sections, SectionInfo{Key: sec.key, Description: sec.help})
	}
	def := Default()
	p := newProber(models)
	for _, f := range s.fields {
		k := KeyInfo{Key: f.key, Type: kindType(f.kind), Description: f.help}
		if f.key == "host" {
			k.Default = hostDefault
		} else {
			k.Default = describeValue(f.get(&def))
		}
		if f.kind == kindList {
			k.FileOnly = true
			k.Default = "[]"
			d.Keys = append(d.Keys, k)
			d.Keys = append(d.Keys, p.itemKeys(f.key+"[]", f.elem.Elem())...)
			continue
		}
		k.Env, k.Flag = EnvName(f.key), "--"+f.key
		k.Allowed = p.allowed(f.key, func(c *Config) reflect.Value {
			return reflect.ValueOf(c).Elem().FieldByIndex(f.index)
		})
		d.Keys = append(d.Keys, k)
	}
	return d
}

// kindType names a kind in a [KeyInfo].
func kindType(k kind) string {
	switch k {
	case kindString:
		return "string"
	case kindInt:
		return "int"
	case kindBool:
		return "bool"
	case kindDuration:
		return "duration"
	case kindStrings:
		return "strings"
	case kindList:
		return "list"
	}
	return "invalid"
}

// describeValue writes a value as the YAML file would.
func describeValue(v any) string {
	switch v := v.(type) {
	case []string:
		return "[" + strings.Join(v, ", ") + "]"
	case uint16:
		return fmt.Sprintf("0x%04X", v)
	}
	return formatValue(v)
}

// prober finds what the validator allows for a key by setting the key, in
// an otherwise valid configuration, to values that break the usual rules
// (negative, huge, malformed, unknown) and collecting the problems it
// reports for that key. The problem texts say what is allowed, which is
// what they are written for.
type prober struct {
	models []string
	cpus   cpuSet
}

func newProber(models []string) prober {
	// The CPUs differ per host; the text names where they come from.
	cpus := cpuSet{cpus: map[int]bool{0: true}, text: "as listed in " + onlineCPUsFile}
	return prober{models: models, cpus: cpus}
}

// base is a valid configuration with one drive and one PDO item, so that
// the keys of list items can be probed too.
func (p prober) base() Config {
	c := Default()
	c.Host = "probe"
	drive := contract.DefaultDrive()
	drive.Mode = "csp"
	drive.Target.Kind = "constant"
	c.Drives = []contract.Drive{drive}
	c.Bus.PDO = []contract.SlavePDOs{{
		RxPDOs: []contract.PDO{{Index: contract.FirstRxPDO}},
		TxPDOs: []contract.PDO{{Index: contract.FirstTxPDO}},
	}}
	return c
}

// Probe strings: malformed (a control character, a space, topic
// wildcards) and merely unknown. Both contain probeMark, so that a problem
// that quotes the probe (a parser's "option ...: want key=value") can be
// told from one that says what is allowed.
const (
	probeMark      = "nosuch"
	probeMalformed = "\x01 " + probeMark + "/+#"
	probeUnknown   = probeMark
)

// quotesProbe reports whether a problem quotes a probe value (even only
// its control character, escaped) rather than saying what is allowed.
func quotesProbe(problem string) bool {
	return strings.Contains(problem, probeMark) || strings.Contains(problem, `\x01`) || strings.ContainsRune(problem, '\x01')
}

// probeValues are the values tried for a field of type t.
func probeValues(t reflect.Type) []any {
	switch {
	case isDuration(t):
		return []any{-time.Nanosecond, time.Duration(0), 1000 * time.Hour}
	case t.Kind() == reflect.Int:
		return []any{-2, 0, 1 << 40}
	case t.Kind() == reflect.Uint16:
		return []any{uint16(0)}
	case t.Kind() == reflect.String:
		return []any{probeMalformed}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return []any{[]string{}, []string{probeMalformed}, []string{probeUnknown}}
	}
	return nil
}

// allowed probes the field that at returns, reported under key.
func (p prober) allowed(key string, at func(*Config) reflect.Value) string {
	var found []string
	probe := p.base()
	for _, v := range probeValues(at(&probe).Type()) {
		c := p.base()
		at(&c).Set(reflect.ValueOf(v).Convert(at(&c).Type()))
		for _, fe := range c.problems(p.models, p.cpus.get) {
			mine := fe.Key == key || strings.HasPrefix(fe.Key, key+"[")
			if mine && !quotesProbe(fe.Problem) && !slices.Contains(found, fe.Problem) {
				found = append(found, fe.Problem)
			}
		}
	}
	return strings.Join(found, "; ")
}

// itemKeys describes the fields of an item of a list of mappings (struct
// type t) under prefix ("drives[]").
func (p prober) itemKeys(prefix string, t reflect.Type) []KeyInfo {
	return p.walkItem(prefix, t, itemDefault(t), func(c *Config) reflect.Value {
		return p.firstItem(c, prefix)
	})
}

// firstItem returns the probe item that a "[]" prefix names in c, e.g.
// "bus.pdo[].rxpdos[]" is c.Bus.PDO[0].RxPDOs[0].
func (p prober) firstItem(c *Config, prefix string) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	for seg := range strings.SplitSeq(prefix, ".") {
		name := strings.TrimSuffix(seg, "[]")
		if v.Kind() == reflect.Struct {
			f, ok := fieldByTag(v, name)
			if !ok {
				panic("config: no field " + name + " in " + prefix)
			}
			v = f
		}
		if strings.HasSuffix(seg, "[]") {
			v = v.Index(0)
		}
	}
	return v
}

func (p prober) walkItem(prefix string, t reflect.Type, def reflect.Value, at func(*Config) reflect.Value) []KeyInfo {
	var out []KeyInfo
	for i, f := range structFields(def) {
		key := prefix + "." + f.name
		ft := f.value.Type()
		field := func(c *Config) reflect.Value { return at(c).Field(i) }
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, p.walkItem(key, ft, f.value, field)...)
			continue
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && !reflect.PointerTo(ft.Elem()).Implements(textUnmarshalerType):
			out = append(out, KeyInfo{Key: key, Type: "list", Default: "[]", Description: f.help, FileOnly: true})
			out = append(out, p.walkItem(key+"[]", ft.Elem(), reflect.New(ft.Elem()).Elem(), func(c *Config) reflect.Value {
				return field(c).Index(0)
			})...)
			continue
		}
		k := KeyInfo{Key: key, Type: itemType(ft), Default: describeValue(f.value.Interface()), Description: f.help, FileOnly: true}
		if ft.Kind() == reflect.Slice { // text values, such as PDO entries: the decoder says what they look like
			if _, problems := decodeItemValue(ft.Elem(), key, "\x01"); len(problems) > 0 {
				k.Allowed = problems[0].problem
			}
			if f.value.Len() == 0 {
				k.Default = "[]"
			}
		} else {
			k.Allowed = p.allowed(probeKey(key), func(c *Config) reflect.Value {
				if f.use != "" { // a field of one target kind is probed in a target of that kind
					kind, _ := fieldByTag(at(c), "kind")
					kind.SetString(strings.Split(f.use, ",")[0])
				}
				return field(c)
			})
		}
		out = append(out, k)
	}
	return out
}

// probeKey is the key the validator reports for the probe item: "[]"
// becomes "[0]".
func probeKey(key string) string { return strings.ReplaceAll(key, "[]", "[0]") }

// itemType names the type of an item field.
func itemType(t reflect.Type) string {
	switch {
	case isDuration(t):
		return "duration"
	case t.Kind() == reflect.Slice && reflect.PointerTo(t.Elem()).Implements(textUnmarshalerType):
		return "strings"
	case t.Kind() == reflect.Uint16:
		return "uint16"
	}
	return t.Kind().String()
}
