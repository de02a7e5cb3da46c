package config

import (
	"errors"
	"testing"
	"time"
)

func TestValidateMQTT(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(*MQTT)
		wantKey string // "" means valid
	}{
		{"defaults", func(m *MQTT) {}, ""},
		{"a TLS broker", func(m *MQTT) { m.Broker = "ssl://broker.plant:8883" }, ""},
		{"a websocket broker", func(m *MQTT) { m.Broker = "wss://broker:443/mqtt" }, ""},
		{"a broker without a port", func(m *MQTT) { m.Broker = "tcp://broker" }, "mqtt.broker"},
		{"a broker without a scheme", func(m *MQTT) { m.Broker = "broker:1883" }, "mqtt.broker"},
		{"an http broker", func(m *MQTT) { m.Broker = "http://broker:80" }, "mqtt.broker"},
		{"embedded without a port", func(m *MQTT) { m.Embedded = "localhost" }, "mqtt.embedded"},
		{"client id with a space", func(m *MQTT) { m.ClientID = "edge 1" }, "mqtt.clientid"},
		{"a certificate without its key", func(m *MQTT) { m.TLS.Cert = "c.pem" }, "mqtt.tls.cert"},
		{"mutual TLS", func(m *MQTT) { m.TLS.Cert, m.TLS.Key = "c.pem", "k.pem" }, ""},
		{"QoS 2", func(m *MQTT) { m.QoS = 2 }, ""},
		{"QoS 3", func(m *MQTT) { m.QoS = 3 }, "mqtt.qos"},
		{"sparkplug", func(m *MQTT) { m.Scheme = "sparkplug" }, ""},
		{"unknown scheme", func(m *MQTT) { m.Scheme = "xml" }, "mqtt.scheme"},
		{"two-level prefix", func(m *MQTT) { m.Prefix = "plant/ecagent" }, ""},
		{"prefix with a wildcard", func(m *MQTT) { m.Prefix = "ecagent/#" }, "mqtt.prefix"},
		{"prefix with an empty level", func(m *MQTT) { m.Prefix = "a//b" }, "mqtt.prefix"},
		{"empty prefix", func(m *MQTT) { m.Prefix = "" }, "mqtt.prefix"},
		{"1 kHz", func(m *MQTT) { m.Interval = time.Millisecond }, ""},
		{"faster than 1 kHz", func(m *MQTT) { m.Interval = 500 * time.Microsecond }, "mqtt.interval"},
		{"on change only", func(m *MQTT) { m.Interval, m.OnChange = 0, true }, ""},
		{"nothing to publish", func(m *MQTT) { m.Interval = 0 }, "mqtt.interval"},
		{"nothing to publish, but off", func(m *MQTT) { m.Interval, m.Enabled = 0, false }, ""},
		{"scan too slow", func(m *MQTT) { m.Scan = 2 * time.Second }, "mqtt.scan"},
		{"no buffer", func(m *MQTT) { m.Buffer = 0 }, "mqtt.buffer"},
		{"timeout too short", func(m *MQTT) { m.Timeout = time.Millisecond }, "mqtt.timeout"},
		{"reconnect min too short", func(m *MQTT) { m.ReconnectMin = time.Millisecond }, "mqtt.reconnectmin"},
		{"reconnect max under min", func(m *MQTT) { m.ReconnectMin, m.ReconnectMax = time.Second, 500*time.Millisecond }, "mqtt.reconnectmax"},
		{"slave rule", func(m *MQTT) { m.Slaves = []string{"1 name=valves interval=1s"} }, ""},
		{"bad slave rule", func(m *MQTT) { m.Slaves = []string{"1 name=valves", "2 rate=5"} }, "mqtt.slaves[1]"},
		{"bad signal rule", func(m *MQTT) { m.Signals = []string{"EL3204-7/x scale=zero"} }, "mqtt.signals[0]"},
		{"bad write rule", func(m *MQTT) { m.Writes.Allow = []string{"EL4132-5/x 10..-10"} }, "mqtt.writes.allow[0]"},
		{"group with a slash", func(m *MQTT) { m.Sparkplug.Group = "a/b" }, "mqtt.sparkplug.group"},
		{"node with a plus", func(m *MQTT) { m.Sparkplug.Node = "n+1" }, "mqtt.sparkplug.node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tt.change(&c.MQTT)
			err := c.Validate()
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Key != tt.wantKey || fe.Problem == "" {
				t.Fatalf("Validate = %v, want a *FieldError for %s that says what is allowed", err, tt.wantKey)
			}
		})
	}
}

func TestMQTTFromEnvironment(t *testing.T) {
	t.Parallel()
	c, err := Load(Sources{Models: testModels, Environ: []string{
		"ECAGENT_MQTT_PASSWORD=s3cret", "ECAGENT_MQTT_WRITES_ALLOW=EL2004-1/*,EL4132-5/x -5..5", "ECAGENT_MQTT_TLS_CA=/etc/ca.pem",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.MQTT.Password != "s3cret" || len(c.MQTT.Writes.Allow) != 2 || c.MQTT.Writes.Allow[1] != "EL4132-5/x -5..5" || c.MQTT.TLS.CA != "/etc/ca.pem" {
		t.Errorf("MQTT from the environment: %+v", c.MQTT)
	}
}
