package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/contract"
	"github.com/spf13/pflag"
)

func TestDescribeHasEveryKey(t *testing.T) {
	t.Parallel()
	d := Describe(testModels)
	byKey := map[string]KeyInfo{}
	for _, k := range d.Keys {
		if _, dup := byKey[k.Key]; dup {
			t.Errorf("key %s described twice", k.Key)
		}
		byKey[k.Key] = k
		if k.Description == "" || k.Type == "" || k.Type == "invalid" {
			t.Errorf("%s: type %q, description %q", k.Key, k.Type, k.Description)
		}
		if k.FileOnly != strings.Contains(k.Key, "[]") && k.Type != "list" {
			t.Errorf("%s: fileOnly %v", k.Key, k.FileOnly)
		}
		if quotesProbe(k.Allowed) {
			t.Errorf("%s: allowed quotes a probe value: %q", k.Key, k.Allowed)
		}
	}
	def := Default()
	for _, f := range newSchema().fields {
		k, ok := byKey[f.key]
		if !ok {
			t.Errorf("Describe lacks %s", f.key)
			continue
		}
		if f.kind == kindList {
			if !k.FileOnly || k.Env != "" || k.Flag != "" {
				t.Errorf("list %s: %+v", f.key, k)
			}
			continue
		}
		if k.Env != EnvName(f.key) || k.Flag != "--"+f.key {
			t.Errorf("%s: env %q, flag %q", f.key, k.Env, k.Flag)
		}
		if want := describeValue(f.get(&def)); f.key != "host" && k.Default != want {
			t.Errorf("%s: default %q, want %q", f.key, k.Default, want)
		}
	}
	for _, sec := range newSchema().sections {
		found := false
		for _, s := range d.Sections {
			found = found || s.Key == sec.key
		}
		if !found {
			t.Errorf("Describe lacks section %s", sec.key)
		}
	}
}

// TestDescribeItemKeys checks that every field of the list items is
// described, by walking the item types independently of Describe.
func TestDescribeItemKeys(t *testing.T) {
	t.Parallel()
	var want []string
	var walk func(prefix string, rt reflect.Type)
	walk = func(prefix string, rt reflect.Type) {
		for i := range rt.NumField() {
			sf := rt.Field(i)
			key := prefix + "." + sf.Tag.Get("koanf")
			switch {
			case sf.Type.Kind() == reflect.Struct:
				walk(key, sf.Type)
			case sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.Struct && sf.Type.Elem() != reflect.TypeFor[contract.PDOEntry]():
				want = append(want, key)
				walk(key+"[]", sf.Type.Elem())
			default:
				want = append(want, key)
			}
		}
	}
	walk("drives[]", reflect.TypeFor[contract.Drive]())
	walk("bus.pdo[]", reflect.TypeFor[contract.SlavePDOs]())
	got := map[string]bool{}
	for _, k := range Describe(testModels).Keys {
		got[k.Key] = true
	}
	for _, key := range want {
		if !got[key] {
			t.Errorf("Describe lacks %s", key)
		}
	}
}

func TestDescribeAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, want string
	}{
		{"cycle.period", "must be between 50us and 1s"},
		{"cycle.core", "must be -1 (no pinning) or an online CPU of this host (as listed in /sys/devices/system/cpu/online)"},
		{"log.level", "must be debug, info, warn or error"},
		{"mqtt.qos", "must be 0, 1 or 2"},
		{"status.interval", "or 0 to disable"},
		{"bus.devices", "must be one of " + strings.Join(testModels, ", ")},
		{"bus.pdo[].rxpdos[].index", "0x1600..0x17FF"},
		{"bus.pdo[].txpdos[].entries", "INDEX:SUB/BITS"},
		{"drives[].mode", "must be csp, csv or cst"},
		{"drives[].target.amplitude", "other than 0"},
		{"drives[].target.period", "at least two cycle periods"},
		{"drives[].faultreset", "must be manual or auto"},
	}
	byKey := map[string]KeyInfo{}
	for _, k := range Describe(testModels).Keys {
		byKey[k.Key] = k
	}
	for _, tt := range tests {
		if got := byKey[tt.key].Allowed; !strings.Contains(got, tt.want) {
			t.Errorf("%s: allowed %q, want it to contain %q", tt.key, got, tt.want)
		}
	}
	for _, key := range []string{"cycle.lockmemory", "mqtt.username"} {
		if got := byKey[key].Allowed; got != "" {
			t.Errorf("%s takes any value, but allowed is %q", key, got)
		}
	}
}

func TestRegisterFlagsFor(t *testing.T) {
	t.Parallel()
	fset := pflag.NewFlagSet("rtcheck", pflag.ContinueOnError)
	RegisterFlagsFor(fset, "cycle.core", "bus")
	for name, want := range map[string]bool{
		FlagConfigFile: true, "cycle.core": true, "bus.interface": true, "bus.dc.enabled": true,
		"cycle.period": false, "mqtt.broker": false, "busy": false,
	} {
		if got := fset.Lookup(name) != nil; got != want {
			t.Errorf("--%s registered: %v, want %v", name, got, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("RegisterFlagsFor accepted an unknown key")
		}
	}()
	RegisterFlagsFor(pflag.NewFlagSet("x", pflag.ContinueOnError), "cycle.perod")
}
