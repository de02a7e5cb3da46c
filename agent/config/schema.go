package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// kind is the value type of a key, which decides how its raw values decode.
type kind int

const (
	kindInvalid kind = iota
	kindString
	kindInt
	kindBool
	kindDuration
	kindStrings
	kindList // a list of mappings (YAML file only); field.elem is the slice type
)

// String names the kind the way error messages and help text need it.
func (k kind) String() string {
	switch k {
	case kindString:
		return "a string"
	case kindInt:
		return "an integer"
	case kindBool:
		return "true or false"
	case kindDuration:
		return `a duration such as "1ms" or "250us"`
	case kindStrings:
		return "a list of strings"
	case kindList:
		return "a list of mappings (YAML file only)"
	}
	return "invalid"
}

// field is one key of the schema, derived from the koanf and help tags of
// [Config].
type field struct {
	key   string // dotted key, e.g. "cycle.period"
	help  string
	kind  kind
	index []int        // reflect index path inside Config
	elem  reflect.Type // the slice type of a kindList field
}

// section is a key that holds other keys (a nested struct), e.g. "cycle".
type section struct {
	key  string
	help string
}

// schema describes every key of [Config], in declaration order.
type schema struct {
	fields   []field
	sections []section
}

// newSchema walks the Config type. It panics on a field it cannot map, which
// only a change to Config can cause and the tests catch.
func newSchema() schema {
	var s schema
	s.walk(reflect.TypeFor[Config](), "", nil)
	return s
}

func (s *schema) walk(t reflect.Type, prefix string, index []int) {
	for i := range t.NumField() {
		sf := t.Field(i)
		name := sf.Tag.Get("koanf")
		if name == "" {
			panic(fmt.Sprintf("config: field %s.%s has no koanf tag", t.Name(), sf.Name))
		}
		key := prefix + name
		idx := append(append([]int(nil), index...), i)
		help := sf.Tag.Get("help")
		k := kindInvalid
		var elem reflect.Type
		switch {
		case isDuration(sf.Type):
			k = kindDuration
		case sf.Type.Kind() == reflect.Struct:
			s.sections = append(s.sections, section{key: key, help: help})
			s.walk(sf.Type, key+".", idx)
			continue
		case sf.Type.Kind() == reflect.String:
			k = kindString
		case sf.Type.Kind() == reflect.Int:
			k = kindInt
		case sf.Type.Kind() == reflect.Bool:
			k = kindBool
		case sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.String:
			k = kindStrings
		case sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.Struct:
			k, elem = kindList, sf.Type
		default:
			panic(fmt.Sprintf("config: field %s.%s has unsupported type %s", t.Name(), sf.Name, sf.Type))
		}
		s.fields = append(s.fields, field{key: key, help: help, kind: k, index: idx, elem: elem})
	}
}

// field returns the field for key.
func (s schema) field(key string) (field, bool) {
	for _, f := range s.fields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// isSection reports whether key is a section such as "cycle".
func (s schema) isSection(key string) bool {
	for _, sec := range s.sections {
		if sec.key == key {
			return true
		}
	}
	return false
}

// sectionHelp returns the help text of a section.
func (s schema) sectionHelp(key string) string {
	for _, sec := range s.sections {
		if sec.key == key {
			return sec.help
		}
	}
	return ""
}

// keys returns every leaf key in declaration order.
func (s schema) keys() []string {
	out := make([]string, len(s.fields))
	for i, f := range s.fields {
		out[i] = f.key
	}
	return out
}

// keysIn returns the leaf keys directly or indirectly inside a section.
func (s schema) keysIn(sectionKey string) []string {
	var out []string
	for _, f := range s.fields {
		if strings.HasPrefix(f.key, sectionKey+".") {
			out = append(out, f.key)
		}
	}
	return out
}

// get returns the typed value of f in c; a duration is a time.Duration,
// whichever duration type the field has.
func (f field) get(c *Config) any {
	v := reflect.ValueOf(c).Elem().FieldByIndex(f.index)
	if f.kind == kindDuration {
		return time.Duration(v.Int())
	}
	return v.Interface()
}

// set stores v, which must have the field's Go type (a time.Duration for
// any duration), into c.
func (f field) set(c *Config, v any) {
	fv := reflect.ValueOf(c).Elem().FieldByIndex(f.index)
	fv.Set(reflect.ValueOf(v).Convert(fv.Type()))
}
