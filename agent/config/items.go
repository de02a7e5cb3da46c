package config

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// Lists of mappings (drives, bus.pdo) are leaves of the schema: koanf
// keeps a YAML sequence whole, so the loader decodes its items here, by the
// koanf tags of the item type, and reports problems under keys such as
// drives[0].target.period. Only a YAML file can express them.

// itemProblem is a problem inside a list of mappings.
type itemProblem struct {
	key, value, problem string
	unknown             bool   // key names no field; problem is empty
	suggestion          string // for an unknown key
}

// itemField is one field of an item struct, by its koanf tag.
type itemField struct {
	name  string // koanf tag
	help  string
	use   string // the target kinds that use the field, comma separated; "" for all
	value reflect.Value
}

// structFields lists the fields of an item struct value.
func structFields(rv reflect.Value) []itemField {
	t := rv.Type()
	out := make([]itemField, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		out = append(out, itemField{name: sf.Tag.Get("koanf"), help: sf.Tag.Get("help"), use: sf.Tag.Get("use"), value: rv.Field(i)})
	}
	return out
}

var (
	durationType         = reflect.TypeFor[time.Duration]()
	contractDurationType = reflect.TypeFor[contract.Duration]()
	textUnmarshalerType  = reflect.TypeFor[encoding.TextUnmarshaler]()
	textMarshalerType    = reflect.TypeFor[encoding.TextMarshaler]()
)

// isDuration reports whether t is a duration: time.Duration (the
// agent's own keys) or contract.Duration (the keys the cycle process
// reads, which its JSON writes as text).
func isDuration(t reflect.Type) bool { return t == durationType || t == contractDurationType }

// listOnlyInFile explains why a list of mappings came from elsewhere.
const listOnlyInFile = "must be a list of mappings; only the YAML file can set it (not the environment or a flag)"

// decodeList decodes a list of mappings of slice type t under key. The
// returned slice holds every item, with the fields that failed left at
// their defaults; a value that is no list at all gives a nil slice and one
// problem under key itself.
func decodeList(t reflect.Type, key string, raw any) (any, []itemProblem) {
	switch v := raw.(type) {
	case nil:
		return reflect.Zero(t).Interface(), nil
	case []any:
		if len(v) == 0 {
			return reflect.Zero(t).Interface(), nil // [] means none, like no list
		}
		out := reflect.MakeSlice(t, 0, len(v))
		var problems []itemProblem
		for i, item := range v {
			ev, p := decodeItemValue(t.Elem(), fmt.Sprintf("%s[%d]", key, i), item)
			out = reflect.Append(out, ev)
			problems = append(problems, p...)
		}
		return out.Interface(), problems
	}
	if reflect.TypeOf(raw) == t { // a default, already typed
		rv := reflect.ValueOf(raw)
		if rv.IsNil() {
			return raw, nil
		}
		cp := reflect.MakeSlice(t, rv.Len(), rv.Len())
		reflect.Copy(cp, rv)
		return cp.Interface(), nil
	}
	return reflect.Zero(t).Interface(), []itemProblem{{key: key, value: formatValue(raw), problem: listOnlyInFile}}
}

// itemDefault returns the value an item of type t starts from.
func itemDefault(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	if t == reflect.TypeFor[contract.Drive]() {
		v.Set(reflect.ValueOf(contract.DefaultDrive()))
	}
	return v
}

// decodeItemValue decodes raw into a value of type t found under key.
func decodeItemValue(t reflect.Type, key string, raw any) (reflect.Value, []itemProblem) {
	fail := func(problem string) (reflect.Value, []itemProblem) {
		return itemDefault(t), []itemProblem{{key: key, value: formatValue(raw), problem: problem}}
	}
	if !isDuration(t) && reflect.PointerTo(t).Implements(textUnmarshalerType) {
		s, ok := raw.(string)
		if !ok {
			return fail("must be a string")
		}
		v := reflect.New(t)
		if err := v.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return fail(err.Error())
		}
		return v.Elem(), nil
	}
	var (
		v       any
		problem string
	)
	switch {
	case isDuration(t):
		v, problem = decodeDuration(raw)
	case t.Kind() == reflect.Struct:
		return decodeItemStruct(t, key, raw)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		v, problem = decodeStrings(raw)
	case t.Kind() == reflect.Slice:
		if _, isList := raw.([]any); !isList {
			return fail("must be a list")
		}
		out, problems := decodeList(t, key, raw)
		return reflect.ValueOf(out), problems
	case t.Kind() == reflect.String:
		v, problem = decodeString(raw)
	case t.Kind() == reflect.Int:
		v, problem = decodeInt(raw)
	case t.Kind() == reflect.Bool:
		v, problem = decodeBool(raw)
	case t.Kind() == reflect.Uint16:
		v, problem = decodeUint16(raw)
	default:
		problem = "unsupported type " + t.String()
	}
	if problem != "" {
		return fail(problem)
	}
	return reflect.ValueOf(v).Convert(t), nil
}

// decodeItemStruct decodes a mapping into the struct type t.
func decodeItemStruct(t reflect.Type, key string, raw any) (reflect.Value, []itemProblem) {
	out := itemDefault(t)
	m, ok := raw.(map[string]any)
	if !ok {
		return out, []itemProblem{{key: key, value: formatValue(raw), problem: "must be a mapping of " + strings.Join(fieldNames(t), ", ")}}
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	var problems []itemProblem
	for _, name := range names {
		sub := key + "." + name
		f, found := fieldByTag(out, name)
		if !found {
			known := make([]string, 0, t.NumField())
			for _, n := range fieldNames(t) {
				known = append(known, key+"."+n)
			}
			problems = append(problems, itemProblem{key: sub, unknown: true, suggestion: closestKey(sub, known)})
			continue
		}
		if m[name] == nil {
			continue // null: left at its default
		}
		v, p := decodeItemValue(f.Type(), sub, m[name])
		problems = append(problems, p...)
		if len(p) == 0 || f.Kind() == reflect.Struct || f.Kind() == reflect.Slice {
			f.Set(v)
		}
	}
	return out, problems
}

// fieldNames lists the koanf tags of struct type t.
func fieldNames(t reflect.Type) []string {
	out := make([]string, t.NumField())
	for i := range t.NumField() {
		out[i] = t.Field(i).Tag.Get("koanf")
	}
	return out
}

// fieldByTag finds the field of struct value v whose koanf tag is name.
func fieldByTag(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("koanf") == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func decodeUint16(raw any) (any, string) {
	const want = "must be an integer between 0 and 0xFFFF, e.g. 0x1600"
	switch v := raw.(type) {
	case string:
		n, err := strconv.ParseUint(strings.TrimSpace(v), 0, 16)
		if err != nil {
			return nil, want
		}
		return uint16(n), ""
	case int, int64, uint64, float64:
		n, problem := decodeInt(v)
		if problem != "" || n.(int) < 0 || n.(int) > math.MaxUint16 {
			return nil, want
		}
		return uint16(n.(int)), ""
	}
	return nil, want
}
