package config

import (
	"strings"
	"testing"
)

// TestLoadBadInputExactText pins the whole text of Load's error for bad
// keys, types and values in every section, from the file and from the
// environment: the key, the value as written, where it came from and what
// is allowed. "$FILE" stands for the YAML file; problems are joined with
// newlines in the order Load reports them. TestLoadErrors checks other
// cases by substring; these pin the complete message.
func TestLoadBadInputExactText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   loadCase
		want string
	}{
		// Wrong types.
		{"a list for a string", loadCase{file: "site: [a, b]\n"},
			`config: site = "a,b" ($FILE:1): must be a string (quote it)`},
		{"a list for an enum", loadCase{file: "log:\n  level: [debug]\n"},
			`config: log.level = "debug" ($FILE:2): must be a string (quote it)`},
		{"a word for an integer", loadCase{file: "cycle:\n  priority: high\n"},
			`config: cycle.priority = "high" ($FILE:2): must be an integer`},
		{"a fraction for an integer", loadCase{file: "bus:\n  expectedslaves: 2.5\n"},
			`config: bus.expectedslaves = "2.5" ($FILE:2): must be an integer`},
		{"yes for a boolean", loadCase{file: "cycle:\n  lockmemory: yes\n"},
			`config: cycle.lockmemory = "yes" ($FILE:2): must be true or false`},
		// Out of range.
		{"negative expected slaves", loadCase{file: "bus:\n  expectedslaves: -1\n"},
			`config: bus.expectedslaves = "-1" ($FILE:2): must be between 0 (accept what is found) and 65535`},
		{"QoS 3", loadCase{file: "mqtt:\n  qos: 3\n"},
			`config: mqtt.qos = "3" ($FILE:2): must be 0, 1 or 2`},
		{"empty outbox", loadCase{file: "mqtt:\n  buffer: 0\n"},
			`config: mqtt.buffer = "0" ($FILE:2): must be between 1 and 10000000 messages`},
		{"negative status interval", loadCase{file: "status:\n  interval: -5s\n"},
			`config: status.interval = "-5s" ($FILE:2): must be between 100ms and 1h, or 0 to disable`},
		{"negative busy wait", loadCase{file: "cycle:\n  period: 1ms\n  busywait: -1us\n"},
			`config: cycle.busywait = "-1us" ($FILE:3): must be at least 0 and less than cycle.period (1ms)`},
		// Bad durations.
		{"a duration in words", loadCase{file: "metrics:\n  window: 10 seconds\n"},
			`config: metrics.window = "10 seconds" ($FILE:2): must be a duration with a unit, e.g. "1ms", "250us" or "5s"`},
		{"a bare number as a period", loadCase{file: "cycle:\n  period: 250\n"},
			`config: cycle.period = "250" ($FILE:2): must be a duration with a unit, e.g. "1ms", "250us" or "5s" (a bare number has no unit)`},
		// Bad enums and shapes.
		{"unknown MQTT scheme", loadCase{file: "mqtt:\n  scheme: xml\n"},
			`config: mqtt.scheme = "xml" ($FILE:2): must be json or sparkplug`},
		{"OTLP protocol http", loadCase{file: "otlp:\n  protocol: http\n"},
			`config: otlp.protocol = "http" ($FILE:2): must be grpc, http/protobuf, or empty (OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)`},
		{"relative shared-memory path", loadCase{file: "cycle:\n  shm: relative.shm\n"},
			`config: cycle.shm = "relative.shm" ($FILE:2): must be an absolute file path, e.g. /run/ecagent/ecagent.shm`},
		{"interface alias", loadCase{file: "bus:\n  interface: eth0:1\n"},
			`config: bus.interface = "eth0:1" ($FILE:2): must be empty (simulated segment) or a network interface name of at most 15 characters without '/', ':' or spaces`},
		// Unknown keys.
		{"misspelt MQTT key", loadCase{file: "mqtt:\n  qso: 1\n"},
			`config: unknown key "mqtt.qso" ($FILE:2); did you mean "mqtt.qos"?`},
		{"misspelt key two levels down", loadCase{file: "mqtt:\n  writes:\n    enable: true\n"},
			`config: unknown key "mqtt.writes.enable" ($FILE:3); did you mean "mqtt.writes.enabled"?`},
		{"unknown key close to nothing", loadCase{file: "zzzzzzzz: 1\n"},
			`config: unknown key "zzzzzzzz" ($FILE:1)`},
		// Bad list items.
		{"device name with a space", loadCase{file: "bus:\n  devices: [EK1100, \"EL 2004\"]\n"},
			`config: bus.devices[1] = "EL 2004" ($FILE:2): must be a model name without spaces, a path to an SII image ending in .bin or an ESI device, FILE.xml[:DEVICE][@REVISION]`},
		{"PDO entry of 65 bits", loadCase{file: "bus:\n  pdo:\n    - slave: 1\n      rxpdos:\n        - index: 0x1601\n          entries: [\"0x6040:00/65\"]\n"},
			`config: bus.pdo[0].rxpdos[0].entries[0] = "0x6040:00/65" ($FILE:6): 65 bits: an entry has 1..64 bits`},
		{"PDO slave not a number", loadCase{file: "bus:\n  pdo:\n    - slave: x\n"},
			`config: bus.pdo[0].slave = "x" ($FILE:3): must be an integer`},
		{"PDO item not a mapping", loadCase{file: "bus:\n  pdo: [5]\n"},
			`config: bus.pdo[0] = "5" ($FILE:2): must be a mapping of slave, rxpdos, txpdos`},
		{"drive fault reset not an enum value", loadCase{file: "drives:\n  - slave: 1\n    mode: csv\n    faultreset: sometimes\n    target: {kind: constant, value: 0}\n"},
			`config: drives[0].faultreset = "sometimes" ($FILE:4): must be manual or auto`},
		{"misspelt drive target key and what it leaves unset", loadCase{file: "drives:\n  - slave: 1\n    mode: csv\n    target: {kind: sine, amplitdue: 5, period: 1s}\n"},
			`config: unknown key "drives[0].target.amplitdue" ($FILE:4); did you mean "drives[0].target.amplitude"?` + "\n" +
				`config: drives[0].target.amplitude = "0" ($FILE:4): a sine needs an amplitude other than 0 (use kind constant for a fixed target)`},
		{"write rule without a signal", loadCase{file: "mqtt:\n  writes:\n    allow: [\"EL2004-1\"]\n"},
			`config: mqtt.writes.allow[0] = "EL2004-1" ($FILE:3): "EL2004-1": want SLAVE/SIGNAL, e.g. EL2004-1/channel_1.output`},
		{"OTLP header with a colon", loadCase{file: "otlp:\n  headers: [\"x-tenant: 1\"]\n"},
			`config: otlp.headers[0] = "x-tenant: 1" ($FILE:2): must be name=value with a header name without spaces or ':'`},
		// Bad environment variables.
		{"env: a word for an integer", loadCase{env: []string{"ECAGENT_MQTT_QOS=high"}},
			`config: mqtt.qos = "high" (ECAGENT_MQTT_QOS): must be an integer`},
		{"env: a bare number as a duration", loadCase{env: []string{"ECAGENT_METRICS_WINDOW=10"}},
			`config: metrics.window = "10" (ECAGENT_METRICS_WINDOW): must be a duration with a unit, e.g. "1ms", "250us" or "5s"`},
		{"env: misspelt key", loadCase{env: []string{"ECAGENT_MQTT_WRITES_ENABLE=true"}},
			`config: unknown key "mqtt.writes.enable" (ECAGENT_MQTT_WRITES_ENABLE); did you mean "mqtt.writes.enabled"?`},
		{"env: a section", loadCase{env: []string{"ECAGENT_OTLP=x"}},
			`config: unknown key "otlp" (ECAGENT_OTLP): otlp is a section, not a value; set its keys: otlp.endpoint, otlp.protocol, otlp.interval, otlp.timeout, otlp.headers`},
		{"env: a list of mappings", loadCase{env: []string{"ECAGENT_BUS_PDO=1"}},
			`config: bus.pdo = "1" (ECAGENT_BUS_PDO): must be a list of mappings; only the YAML file can set it (not the environment or a flag)`},
		{"env: a value that is not UTF-8", loadCase{env: []string{"ECAGENT_OTLP_ENDPOINT=http://\x96:4318"}},
			`config: otlp.endpoint = "http://\x96:4318" (ECAGENT_OTLP_ENDPOINT): is not valid UTF-8 text`},
		{"env: a list item that is not UTF-8", loadCase{env: []string{"ECAGENT_BUS_DEVICES=EK1100,EL\xff2004"}},
			`config: bus.devices = "EK1100,EL\xff2004" (ECAGENT_BUS_DEVICES): is not valid UTF-8 text`},
		{"env: empty label", loadCase{env: []string{"ECAGENT_SITE="}},
			`config: site = "" (ECAGENT_SITE): must be a non-empty name without spaces, '/', '+' or '#' (it is a Prometheus label and an MQTT topic level)`},
		{"env: Sparkplug group with a slash", loadCase{env: []string{"ECAGENT_MQTT_SPARKPLUG_GROUP=a/b"}},
			`config: mqtt.sparkplug.group = "a/b" (ECAGENT_MQTT_SPARKPLUG_GROUP): must be a non-empty Sparkplug id without '/', '+', '#' or spaces`},
		{"env: busy wait beyond the period set by another variable", loadCase{env: []string{"ECAGENT_CYCLE_PERIOD=1ms", "ECAGENT_CYCLE_BUSYWAIT=2ms"}},
			`config: cycle.busywait = "2ms" (ECAGENT_CYCLE_BUSYWAIT): must be at least 0 and less than cycle.period (1ms)`},
		// Several problems at once: unknown keys as the layers are read,
		// then values in the order validation checks them (log before mqtt).
		{"file and environment together", loadCase{file: "zzzz: 1\nmqtt:\n  qos: 3\n", env: []string{"ECAGENT_LOG_LEVEL=loud"}},
			`config: unknown key "zzzz" ($FILE:1)` + "\n" +
				`config: log.level = "loud" (ECAGENT_LOG_LEVEL): must be debug, info, warn or error` + "\n" +
				`config: mqtt.qos = "3" ($FILE:3): must be 0, 1 or 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.in.loadWith(t, deployModels)
			if r.err == nil {
				t.Fatalf("Load succeeded, want:\n%s", tt.want)
			}
			want := strings.ReplaceAll(tt.want, "$FILE", r.path)
			if got := r.err.Error(); got != want {
				t.Errorf("error text:\n got %s\nwant %s", got, want)
			}
		})
	}
}
