package config

import (
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// DurationPattern matches the durations the configuration file accepts
// (Go's time.ParseDuration without a sign, which no key allows): one or
// more numbers with a unit, e.g. "250us", "1.5ms", "1m30s", or a bare 0.
const DurationPattern = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// DurationBound is what the validator accepts for one duration key, found
// by probing it. JSON Schema cannot compare durations, so
// [JSONSchema] gives duration keys only their [DurationPattern]; tools that
// can (the Helm chart's templates) check these bounds.
type DurationBound struct {
	// Key is the dotted key; items of lists of mappings are marked "[]".
	Key string `json:"key"`
	// Min and Max are the accepted range in nanoseconds; nil when that
	// side has no bound of its own (none, or one that depends on another
	// key or on the host, such as "less than cycle.period").
	Min *int64 `json:"min,omitempty"`
	Max *int64 `json:"max,omitempty"`
	// Zero says that 0 is accepted besides the range ("0 to disable").
	Zero bool `json:"zero,omitempty"`
	// Problem is the validator's sentence for a value out of range.
	Problem string `json:"problem"`
}

// JSONSchema returns the configuration file as a JSON Schema (draft-07)
// object: every section and list item closed (additionalProperties false),
// every key with its type, and, where the validator has them and they do
// not depend on another key or on the host, the allowed words (enum) and
// the integer range. Duration keys get [DurationPattern]; their ranges are
// in the returned [DurationBound]s. Like [Describe], it is derived from the
// [Config] type and from the validator, so it cannot drift from [Load].
func JSONSchema(models []string) (schema map[string]any, durations []DurationBound) {
	d := Describe(models)
	p := newProber(models)
	envs := p.environments()
	root := object("")
	for _, sec := range d.Sections {
		node(root, sec.Key, true)["description"] = sec.Description
	}
	for _, k := range d.Keys {
		s := node(root, k.Key, false)
		s["description"] = keyDescription(k)
		switch k.Type {
		case "list":
			s["type"] = "array"
			s["items"] = object("")
			continue
		case "string":
			s["type"] = []string{"string", "integer"} // `line: 3` is meant as text
			if words := enumWords(p, envs, k); words != nil {
				s["type"] = "string"
				s["enum"] = words
			}
		case "bool":
			s["type"] = "boolean"
		case "strings":
			s["type"] = "array"
			s["items"] = map[string]any{"type": "string"}
		case "int", "uint16":
			s["type"] = "integer"
			if k.Type == "uint16" { // also written in hex, e.g. "0x1600"
				s["type"] = []string{"integer", "string"}
				s["pattern"] = `^(0[xX][0-9a-fA-F]{1,4}|[0-9]+)$`
			}
			b := numericBound(p, envs, k.Key)
			if b.Min != nil {
				s["minimum"] = *b.Min
			}
			if b.Max != nil {
				s["maximum"] = *b.Max
			}
			if b.Zero { // "0, or a number in the range"
				rng := map[string]any{}
				for _, m := range []string{"minimum", "maximum"} {
					if v, ok := s[m]; ok {
						rng[m] = v
						delete(s, m)
					}
				}
				s["anyOf"] = []any{map[string]any{"const": 0}, rng}
			}
		case "duration":
			// A bare 0 is the one number the decoder takes as a duration.
			s["type"] = []string{"string", "integer"}
			s["pattern"] = DurationPattern
			s["minimum"], s["maximum"] = 0, 0
			b := numericBound(p, envs, k.Key)
			b.Key = k.Key
			if b.Max != nil || b.Min != nil && *b.Min > 0 { // the pattern already refuses negatives
				durations = append(durations, b)
			}
		}
	}
	root["$schema"] = "http://json-schema.org/draft-07/schema#"
	return root, durations
}

// object is an empty closed JSON Schema object with a description.
func object(description string) map[string]any {
	s := map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}
	if description != "" {
		s["description"] = description
	}
	return s
}

// node returns the schema of a dotted key under root, creating the
// sections on the way, and the key itself as a section or a leaf;
// "name[]" descends into a list's items.
func node(root map[string]any, key string, section bool) map[string]any {
	cur := root
	segs := strings.Split(key, ".")
	for i, seg := range segs {
		name, isList := strings.CutSuffix(seg, "[]")
		props := cur["properties"].(map[string]any)
		next, ok := props[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			if section || i < len(segs)-1 {
				next = object("")
			}
			props[name] = next
		}
		if isList {
			next = next["items"].(map[string]any)
		}
		if i == len(segs)-1 {
			return next
		}
		cur = next
	}
	return cur
}

func keyDescription(k KeyInfo) string {
	s := k.Description + " (default " + k.Default
	if k.Allowed != "" {
		s += "; " + k.Allowed
	}
	return s + ")"
}

// probeEnv is a valid configuration to probe a key in, with the CPUs
// cycle.core may name.
type probeEnv struct {
	base Config
	cpus cpuSet
}

// environments are two valid configurations for a real network interface
// (the simulated segment's own limit, its number of devices, is left to
// the agent) that differ in every duration (doubled), every switch
// (flipped), where that stays valid, and in the host's CPUs. A bound that
// differs between them depends on another key or on the host, which a
// schema of independent keys cannot state, so only the bounds they agree
// on are kept.
func (p prober) environments() []probeEnv {
	base := p.base()
	base.Bus.Interface = "eth0"
	a := probeEnv{base: base, cpus: p.cpus}
	b := probeEnv{base: cloneConfig(base), cpus: cpuSet{cpus: map[int]bool{0: true, 1: true, 2: true, 3: true}, text: p.cpus.text}}
	for _, k := range Describe(p.models).Keys {
		c := cloneConfig(b.base)
		switch v := p.at(&c, k.Key, false); k.Type {
		case "duration":
			v.SetInt(2 * v.Int())
		case "bool":
			v.SetBool(!v.Bool())
		default:
			continue
		}
		if len(c.problems(p.models, b.cpus.get)) == 0 {
			b.base = c
		}
	}
	return []probeEnv{a, b}
}

// at returns the field of key ("drives[].target.period") in c, items
// being the first of their list; use sets a target's kind to one that
// uses the field.
func (p prober) at(c *Config, key string, use bool) reflect.Value {
	parent, name := "", key
	if i := strings.LastIndex(key, "."); i >= 0 {
		parent, name = key[:i], key[i+1:]
	}
	v := reflect.ValueOf(c).Elem()
	if parent != "" {
		v = p.firstItem(c, parent)
	}
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		if sf.Tag.Get("koanf") != name {
			continue
		}
		if kinds := sf.Tag.Get("use"); use && kinds != "" {
			if kind, ok := fieldByTag(v, "kind"); ok {
				kind.SetString(strings.Split(kinds, ",")[0])
			}
		}
		return v.Field(i)
	}
	panic("config: no key " + key)
}

// cloneConfig copies c with the lists of mappings the probes change, so
// that probing one key leaves the environment as it was.
func cloneConfig(c Config) Config {
	c.Drives = slices.Clone(c.Drives)
	c.Bus.PDO = slices.Clone(c.Bus.PDO)
	for i := range c.Bus.PDO {
		c.Bus.PDO[i].RxPDOs = slices.Clone(c.Bus.PDO[i].RxPDOs)
		c.Bus.PDO[i].TxPDOs = slices.Clone(c.Bus.PDO[i].TxPDOs)
	}
	return c
}

// accepts reports whether the validator takes v for key in env, in an
// item that uses the key, and its sentence when it does not.
func (p prober) accepts(env probeEnv, key string, v any) (bool, string) {
	return p.acceptsIn(env, key, v, true)
}

func (p prober) acceptsIn(env probeEnv, key string, v any, use bool) (bool, string) {
	c := cloneConfig(env.base)
	f := p.at(&c, key, use)
	f.Set(reflect.ValueOf(v).Convert(f.Type()))
	key = probeKey(key)
	for _, fe := range c.problems(p.models, env.cpus.get) {
		if fe.Key == key || strings.HasPrefix(fe.Key, key+"[") {
			return false, fe.Problem
		}
	}
	return true, ""
}

// numericBound probes an integer or duration key in every environment and
// keeps the bounds they agree on.
func numericBound(p prober, envs []probeEnv, key string) DurationBound {
	var out DurationBound
	for i, env := range envs {
		b := p.interval(env, key)
		if i == 0 {
			out = b
			continue
		}
		if !sameBound(out.Min, b.Min) {
			out.Min = nil
		}
		if !sameBound(out.Max, b.Max) {
			out.Max = nil
		}
		out.Zero = out.Zero || b.Zero
	}
	if out.Min == nil && out.Max == nil {
		out.Zero = false
	}
	return out
}

func sameBound(a, b *int64) bool { return a != nil && b != nil && *a == *b }

// interval finds the range of values the validator accepts for key in
// env: from an accepted start outwards, doubling the step, then halving
// between the last accepted and the first refused value. A range with
// holes other than 0 ("other than 0", "0 to disable") has no bounds.
func (p prober) interval(env probeEnv, key string) DurationBound {
	probe := cloneConfig(env.base)
	f := p.at(&probe, key, true)
	lo, hi := int64(-1)<<40, int64(1)<<40
	var start0 int64
	switch {
	case isDuration(f.Type()):
		lo, hi, start0 = -int64(1000*time.Hour), int64(1000*time.Hour), f.Int()
	case f.Kind() == reflect.Uint16:
		lo, hi, start0 = 0, math.MaxUint16, int64(f.Uint())
	default:
		start0 = f.Int()
	}
	starts := []int64{start0, 0, 1, 1000, int64(time.Millisecond), int64(time.Second)}
	ok := func(v int64) bool {
		a, _ := p.accepts(env, key, v)
		return a
	}
	start, found := int64(0), false
	for _, s := range starts {
		if s >= lo && s <= hi && ok(s) {
			start, found = s, true
			break
		}
	}
	if !found {
		return DurationBound{}
	}
	var b DurationBound
	if top, bounded := edge(ok, start, hi); bounded {
		b.Max = &top
		_, b.Problem = p.accepts(env, key, top+1)
	}
	if bottom, bounded := edge(ok, start, lo); bounded {
		b.Min = &bottom
		_, b.Problem = p.accepts(env, key, bottom-1)
	}
	// Outside the range, only 0 may be accepted.
	for _, v := range outside(b, lo, hi) {
		if ok(v) {
			if v == 0 {
				b.Zero = true
				continue
			}
			return DurationBound{}
		}
	}
	// An item that does not use the key takes it unset: 0.
	if zero, _ := p.acceptsIn(env, key, int64(0), false); zero && (b.Min != nil && *b.Min > 0 || b.Max != nil && *b.Max < 0) {
		b.Zero = true
	}
	return b
}

// outside lists the probe points beyond the bounds of b.
func outside(b DurationBound, lo, hi int64) []int64 {
	var out []int64
	if b.Max != nil {
		for step := int64(2); *b.Max+step <= hi && step > 0; step *= 2 {
			out = append(out, *b.Max+step)
		}
		out = append(out, hi)
	}
	if b.Min != nil {
		for step := int64(2); *b.Min-step >= lo && step > 0; step *= 2 {
			out = append(out, *b.Min-step)
		}
		out = append(out, lo)
	}
	for _, v := range []int64{-1, 0, 1} {
		if v >= lo && v <= hi && (b.Min != nil && v < *b.Min) || (b.Max != nil && v > *b.Max) {
			out = append(out, v)
		}
	}
	return out
}

// edge walks from start (accepted) towards limit and returns the last
// accepted value before the first refused one; bounded is false when
// limit itself is accepted.
func edge(ok func(int64) bool, start, limit int64) (last int64, bounded bool) {
	dir := int64(1)
	if limit < start {
		dir = -1
	}
	last = start
	for step := int64(1); ; step *= 2 {
		next := start + dir*step
		if dir*(next-limit) >= 0 {
			next = limit
		}
		if !ok(next) {
			for refused := next; (refused-last)*dir > 1; {
				mid := last + (refused-last)/2
				if ok(mid) {
					last = mid
				} else {
					refused = mid
				}
			}
			return last, true
		}
		last = next
		if next == limit {
			return limit, false
		}
	}
}

var parenthetical = regexp.MustCompile(`\s*\([^)]*\)`)

// enumWords returns the words a string key is limited to, read from the
// validator's sentence ("must be debug, info, warn or error"; "empty" is
// "") and kept only if the validator takes every one of them in every
// environment and refuses a word not among them; nil otherwise.
func enumWords(p prober, envs []probeEnv, k KeyInfo) []string {
	first, _, _ := strings.Cut(k.Allowed, "; ")
	list, ok := strings.CutPrefix(parenthetical.ReplaceAllString(first, ""), "must be ")
	if !ok {
		return nil
	}
	list = strings.ReplaceAll(strings.ReplaceAll(list, ", or ", ", "), " or ", ", ")
	var words []string
	for w := range strings.SplitSeq(list, ", ") {
		if w == "empty" {
			w = ""
		}
		if strings.ContainsAny(w, " \t") {
			return nil
		}
		words = append(words, w)
	}
	if len(words) < 2 {
		return nil
	}
	for _, env := range envs {
		if a, _ := p.accepts(env, k.Key, probeUnknown); a {
			return nil
		}
		for _, w := range words {
			if a, _ := p.accepts(env, k.Key, w); !a {
				return nil
			}
		}
	}
	return words
}
