package config

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// schemaAt returns the schema of a dotted key ("drives[].mode").
func schemaAt(t *testing.T, root map[string]any, key string) map[string]any {
	t.Helper()
	cur := root
	for seg := range strings.SplitSeq(key, ".") {
		name, isList := strings.CutSuffix(seg, "[]")
		props, _ := cur["properties"].(map[string]any)
		next, ok := props[name].(map[string]any)
		if !ok {
			t.Fatalf("no %s in the schema", key)
		}
		if isList {
			next = next["items"].(map[string]any)
		}
		cur = next
	}
	return cur
}

func TestJSONSchemaKeys(t *testing.T) {
	schema, _ := JSONSchema(nil)
	if _, err := json.Marshal(schema); err != nil {
		t.Fatal(err)
	}
	d := Describe(nil)
	for _, sec := range d.Sections {
		if s := schemaAt(t, schema, sec.Key); s["additionalProperties"] != false {
			t.Errorf("section %s is not closed: %v", sec.Key, s)
		}
	}
	for _, k := range d.Keys {
		s := schemaAt(t, schema, k.Key)
		if s["type"] == nil {
			t.Errorf("%s has no type", k.Key)
		}
		if k.Type == "list" && s["items"].(map[string]any)["additionalProperties"] != false {
			t.Errorf("the items of %s are not closed", k.Key)
		}
	}
}

func TestJSONSchemaBounds(t *testing.T) {
	schema, _ := JSONSchema(nil)
	for _, tc := range []struct {
		key      string
		min, max any // nil: no bound
		enum     []string
	}{
		{key: "cycle.priority", min: int64(0), max: int64(99)},
		{key: "mqtt.qos", min: int64(0), max: int64(2)},
		{key: "bus.expectedslaves", min: int64(0), max: int64(65535)},
		{key: "cycle.core", min: int64(-1)}, // the maximum is the host's
		{key: "drives[].target.amplitude"},  // anything but 0
		{key: "bus.pdo[].rxpdos[].index", min: int64(0x1600), max: int64(0x17FF)},
		{key: "log.level", enum: []string{"debug", "info", "warn", "error"}},
		{key: "otlp.protocol", enum: []string{"grpc", "http/protobuf", ""}},
		{key: "drives[].mode", enum: []string{"csp", "csv", "cst"}},
		{key: "site"}, // a shape, not a list of words
	} {
		t.Run(tc.key, func(t *testing.T) {
			s := schemaAt(t, schema, tc.key)
			if s["minimum"] != tc.min || s["maximum"] != tc.max {
				t.Errorf("minimum %v, maximum %v; want %v, %v", s["minimum"], s["maximum"], tc.min, tc.max)
			}
			enum, _ := s["enum"].([]string)
			if !slices.Equal(enum, tc.enum) {
				t.Errorf("enum %q, want %q", enum, tc.enum)
			}
		})
	}
}

func TestDurationBounds(t *testing.T) {
	_, bounds := JSONSchema(nil)
	ns := func(d time.Duration) *int64 { n := int64(d); return &n }
	for _, tc := range []struct {
		key      string
		min, max *int64
		zero     bool
	}{
		{"cycle.period", ns(contract.MinPeriod), ns(contract.MaxPeriod), false},
		{"bus.timeout", ns(contract.MinBusTimeout), ns(contract.MaxBusTimeout), false},
		{"status.interval", ns(MinStatus), ns(MaxStatus), true},
		{"mqtt.interval", ns(time.Millisecond), ns(time.Hour), true}, // 0 with mqtt.onchange
		{"mqtt.reconnectmax", nil, ns(10 * time.Minute), false},      // at least mqtt.reconnectmin
	} {
		t.Run(tc.key, func(t *testing.T) {
			i := slices.IndexFunc(bounds, func(b DurationBound) bool { return b.Key == tc.key })
			if i < 0 {
				t.Fatalf("no bound for %s in %v", tc.key, bounds)
			}
			b := bounds[i]
			if !equalPtr(b.Min, tc.min) || !equalPtr(b.Max, tc.max) || b.Zero != tc.zero {
				t.Errorf("got %+v, want min %v max %v zero %v", b, deref(tc.min), deref(tc.max), tc.zero)
			}
			if b.Problem == "" {
				t.Error("no problem text")
			}
		})
	}
	for _, key := range []string{"cycle.busywait", "bus.dc.sync0shift"} { // less than cycle.period
		if slices.ContainsFunc(bounds, func(b DurationBound) bool { return b.Key == key }) {
			t.Errorf("%s has a bound, but it depends on cycle.period", key)
		}
	}
}

func equalPtr(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestDurationPattern: the pattern takes what the decoder takes, less the
// signs that no key allows.
func TestDurationPattern(t *testing.T) {
	re := regexp.MustCompile(DurationPattern)
	for _, s := range []string{"250us", "1.5ms", "1m30s", "0", "0s", ".5s", "5.s", "10µs", "1h2m3s4ms5us6ns", "-1ms", "1", "1 ms", "ms", "1d", ""} {
		_, err := time.ParseDuration(s)
		want := err == nil && !strings.HasPrefix(s, "-")
		if got := re.MatchString(s); got != want {
			t.Errorf("%q: pattern matches %v, decoder accepts %v", s, got, want)
		}
	}
}
