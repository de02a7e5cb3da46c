package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/ecagent/ecagent/agent/mqtt/ruleparse"
)

// MQTT configures the process-data publisher (package mqtt) and, when no
// broker is named, the embedded broker.
type MQTT struct {
	// Enabled turns the publisher (and the embedded broker) on.
	Enabled bool `koanf:"enabled" help:"publish process data, statistics and events over MQTT"`
	// Broker is the broker's URL; "" starts the embedded broker on
	// Embedded and publishes to it.
	Broker string `koanf:"broker" help:"broker URL: tcp://host:1883, ssl://host:8883 (TLS), ws:// or wss://; empty starts the embedded broker on mqtt.embedded"`
	// Embedded is the listen address of the embedded broker.
	Embedded string `koanf:"embedded" help:"host:port the embedded broker listens on when mqtt.broker is empty"`
	// ClientID is the MQTT client identifier; "" derives one from site and
	// host.
	ClientID string `koanf:"clientid" help:"MQTT client identifier; empty uses ecagent-<site>-<host>"`
	// Username and Password authenticate to the broker.
	Username string `koanf:"username" help:"user name for the broker; empty sends none"`
	Password string `koanf:"password" help:"password for the broker (prefer the environment variable ECAGENT_MQTT_PASSWORD)"`
	// TLS configures ssl:// and wss:// connections.
	TLS MQTTTLS `koanf:"tls" help:"TLS for ssl:// and wss:// brokers; a client certificate makes it mutual TLS"`
	// QoS is the quality of service of process data, statistics and
	// events (JSON scheme; Sparkplug fixes its own).
	QoS int `koanf:"qos" help:"MQTT quality of service of the JSON scheme's messages: 0, 1 or 2"`
	// Scheme is json or sparkplug.
	Scheme string `koanf:"scheme" help:"topic and payload scheme: json (topics under mqtt.prefix/site/host) or sparkplug (Sparkplug B, spBv1.0/...)"`
	// Prefix is the first topic level(s) of the JSON scheme.
	Prefix string `koanf:"prefix" help:"first topic level(s) of the JSON scheme; topics are <prefix>/<site>/<host>/..."`
	// Interval is how often each slave's process data is published; 0
	// publishes on change only.
	Interval time.Duration `koanf:"interval" help:"publish every slave's process data this often (100ms = 10 Hz, down to 1ms); 0 publishes on change only"`
	// OnChange also publishes a slave as soon as a value changes by more
	// than its deadband.
	OnChange bool `koanf:"onchange" help:"also publish a slave as soon as one of its values changes by more than the signal's deadband"`
	// Scan is how often the process image is checked for changes.
	Scan time.Duration `koanf:"scan" help:"how often the process image is checked for changes when mqtt.onchange is on"`
	// Buffer bounds the messages kept while the broker is unreachable.
	Buffer int `koanf:"buffer" help:"messages kept while the broker is unreachable; beyond it the oldest are dropped and counted"`
	// BufferFile, when set, keeps undelivered messages across a restart of
	// the agent.
	BufferFile string `koanf:"bufferfile" help:"file that keeps undelivered messages when the agent stops, sent first when it starts again; empty keeps them in memory only"`
	// Timeout bounds connecting and waiting for an acknowledgement.
	Timeout time.Duration `koanf:"timeout" help:"how long to wait for the broker to accept a connection or acknowledge a message"`
	// ReconnectMin and ReconnectMax bound the reconnect back-off.
	ReconnectMin time.Duration `koanf:"reconnectmin" help:"first wait before reconnecting to the broker; it doubles up to mqtt.reconnectmax"`
	ReconnectMax time.Duration `koanf:"reconnectmax" help:"longest wait between two attempts to reach the broker (each wait is random between half of it and all of it); the publisher caps it at 2s, so the agent follows a broker that is back"`
	// Slaves and Signals override names, rates, types, units and scaling.
	Slaves  []string `koanf:"slaves" help:"per-slave rules: 'POSITION|NAME [name=NEW] [interval=DURATION] [onchange=BOOL]'"`
	Signals []string `koanf:"signals" help:"per-signal rules: 'SLAVE/SIGNAL [name=NEW] [unit=U] [type=bool|int|uint|float] [scale=X] [offset=X] [deadband=X]'"`
	// Writes configures writing outputs from MQTT.
	Writes MQTTWrites `koanf:"writes" help:"writing outputs from MQTT (off by default)"`
	// Sparkplug names the Sparkplug B group and edge node.
	Sparkplug MQTTSparkplug `koanf:"sparkplug" help:"Sparkplug B identifiers (mqtt.scheme sparkplug)"`
}

// MQTTTLS configures the TLS client of the MQTT connection.
type MQTTTLS struct {
	// CA is a PEM file of the certificate authorities to trust; "" trusts
	// the system's.
	CA string `koanf:"ca" help:"PEM file of the certificate authorities to trust; empty trusts the system's"`
	// Cert and Key are the client certificate and key (mutual TLS).
	Cert string `koanf:"cert" help:"PEM client certificate for mutual TLS; needs mqtt.tls.key"`
	Key  string `koanf:"key" help:"PEM private key of mqtt.tls.cert"`
	// ServerName overrides the name checked against the broker's
	// certificate.
	ServerName string `koanf:"servername" help:"name to check the broker's certificate against; empty uses the broker URL's host"`
	// InsecureSkipVerify accepts any broker certificate (tests only).
	InsecureSkipVerify bool `koanf:"insecureskipverify" help:"accept any broker certificate (for tests only: anyone can pose as the broker)"`
}

// MQTTWrites configures writing outputs from MQTT.
type MQTTWrites struct {
	// Enabled accepts write commands at all.
	Enabled bool `koanf:"enabled" help:"accept output writes from MQTT (…/set/<slave>/<signal>, or Sparkplug DCMD); every rejected write is answered on …/events"`
	// Allow lists the writable outputs with their ranges.
	Allow []string `koanf:"allow" help:"writable outputs: 'SLAVE/SIGNAL [MIN..MAX]' (engineering units), SIGNAL * for all outputs of a slave"`
}

// MQTTSparkplug names the Sparkplug B group and edge node.
type MQTTSparkplug struct {
	// Group is the Sparkplug group id.
	Group string `koanf:"group" help:"Sparkplug group id"`
	// Node is the edge node id; "" uses host.
	Node string `koanf:"node" help:"Sparkplug edge node id; empty uses host"`
}

// MQTT bounds enforced by [Config.Validate].
const (
	MinMQTTInterval  = time.Millisecond       // shortest non-zero mqtt.interval and mqtt.scan
	MaxMQTTInterval  = time.Hour              // longest mqtt.interval
	MaxMQTTScan      = time.Second            // longest mqtt.scan
	MaxMQTTBuffer    = 10_000_000             // largest mqtt.buffer
	MinMQTTTimeout   = 100 * time.Millisecond // shortest mqtt.timeout
	MaxMQTTTimeout   = time.Minute            // longest mqtt.timeout
	MinMQTTReconnect = 10 * time.Millisecond  // shortest mqtt.reconnectmin
	MaxMQTTReconnect = 10 * time.Minute       // longest mqtt.reconnectmax
	// DefaultMQTTReconnectMax is the default mqtt.reconnectmax and the cap
	// the publisher puts on its back-off whatever the key says
	// (mqtt.MaxReconnect, the same value), so that the agent follows a
	// broker that is back within a couple of seconds.
	DefaultMQTTReconnectMax = 2 * time.Second
)

// DefaultMQTTEmbedded is the default mqtt.embedded: the standard MQTT port,
// on loopback only.
const DefaultMQTTEmbedded = "127.0.0.1:1883"

// defaultMQTT is the MQTT section of [Default]: JSON at 10 Hz to the
// embedded broker, writes off.
func defaultMQTT() MQTT {
	return MQTT{
		Enabled:      true,
		Embedded:     DefaultMQTTEmbedded,
		QoS:          1,
		Scheme:       "json",
		Prefix:       "ecagent",
		Interval:     100 * time.Millisecond,
		Scan:         10 * time.Millisecond,
		Buffer:       10000,
		Timeout:      5 * time.Second,
		ReconnectMin: 100 * time.Millisecond,
		ReconnectMax: DefaultMQTTReconnectMax,
		Sparkplug:    MQTTSparkplug{Group: "ecagent"},
	}
}

// problems lists what is wrong with the MQTT section.
func (m MQTT) problems() []*FieldError {
	var out fieldErrors
	m.connectionProblems(&out)
	m.publishingProblems(&out)
	m.ruleProblems(&out)
	if !isSparkplugID(m.Sparkplug.Group) {
		out.add("mqtt.sparkplug.group", m.Sparkplug.Group, "must be a non-empty Sparkplug id without '/', '+', '#' or spaces")
	}
	if m.Sparkplug.Node != "" && !isSparkplugID(m.Sparkplug.Node) {
		out.add("mqtt.sparkplug.node", m.Sparkplug.Node, "must be empty (use host) or a Sparkplug id without '/', '+', '#' or spaces")
	}
	return out
}

// connectionProblems checks the broker, the embedded broker, the client
// id and the TLS files.
func (m MQTT) connectionProblems(out *fieldErrors) {
	if m.Broker != "" {
		if problem := brokerURLProblem(m.Broker); problem != "" {
			out.add("mqtt.broker", m.Broker, problem)
		}
	}
	if !isListenAddress(m.Embedded) {
		out.add("mqtt.embedded", m.Embedded, `must be host:port with a numeric port, e.g. "127.0.0.1:1883"`)
	}
	if strings.IndexFunc(m.ClientID, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		out.add("mqtt.clientid", m.ClientID, "must not contain spaces or control characters")
	}
	if (m.TLS.Cert == "") != (m.TLS.Key == "") {
		out.add("mqtt.tls.cert", m.TLS.Cert, "mqtt.tls.cert and mqtt.tls.key go together: set both (mutual TLS) or neither")
	}
	if !inRange(m.Timeout, MinMQTTTimeout, MaxMQTTTimeout) {
		out.add("mqtt.timeout", m.Timeout, betweenDurations(MinMQTTTimeout, MaxMQTTTimeout))
	}
	if !inRange(m.ReconnectMin, MinMQTTReconnect, MaxMQTTReconnect) {
		out.add("mqtt.reconnectmin", m.ReconnectMin, betweenDurations(MinMQTTReconnect, MaxMQTTReconnect))
	}
	if !inRange(m.ReconnectMax, max(m.ReconnectMin, MinMQTTReconnect), MaxMQTTReconnect) {
		out.add("mqtt.reconnectmax", m.ReconnectMax, fmt.Sprintf("must be between mqtt.reconnectmin (%s) and %s",
			formatDuration(m.ReconnectMin), formatDuration(MaxMQTTReconnect)))
	}
}

// publishingProblems checks what is published how often, and how much is
// buffered.
func (m MQTT) publishingProblems(out *fieldErrors) {
	if m.QoS < 0 || m.QoS > 2 {
		out.add("mqtt.qos", m.QoS, "must be 0, 1 or 2")
	}
	if m.Scheme != "json" && m.Scheme != "sparkplug" {
		out.add("mqtt.scheme", m.Scheme, "must be json or sparkplug")
	}
	if !isTopicPrefix(m.Prefix) {
		out.add("mqtt.prefix", m.Prefix, "must be one or more topic levels separated by '/', without '+', '#', spaces or empty levels, e.g. ecagent")
	}
	if iv := m.Interval; iv != 0 && !inRange(iv, MinMQTTInterval, MaxMQTTInterval) {
		out.add("mqtt.interval", iv, betweenDurations(MinMQTTInterval, MaxMQTTInterval)+", or 0 to publish on change only")
	}
	if m.Interval == 0 && !m.OnChange && m.Enabled {
		out.add("mqtt.interval", m.Interval, "0 publishes on change only, but mqtt.onchange is false: nothing would be published")
	}
	if !inRange(m.Scan, MinMQTTInterval, MaxMQTTScan) {
		out.add("mqtt.scan", m.Scan, betweenDurations(MinMQTTInterval, MaxMQTTScan))
	}
	if m.Buffer < 1 || m.Buffer > MaxMQTTBuffer {
		out.add("mqtt.buffer", m.Buffer, fmt.Sprintf("must be between 1 and %d messages", MaxMQTTBuffer))
	}
}

// ruleProblems checks the one-line rules of mqtt.slaves, mqtt.signals and
// mqtt.writes.allow.
func (m MQTT) ruleProblems(out *fieldErrors) {
	for _, list := range []struct {
		key   string
		rules []string
		parse func(string) error
	}{
		{"mqtt.slaves", m.Slaves, func(s string) error { _, err := ruleparse.ParseSlaveRule(s); return err }},
		{"mqtt.signals", m.Signals, func(s string) error { _, err := ruleparse.ParseSignalRule(s); return err }},
		{"mqtt.writes.allow", m.Writes.Allow, func(s string) error { _, err := ruleparse.ParseWriteRule(s); return err }},
	} {
		for i, s := range list.rules {
			if err := list.parse(s); err != nil {
				out.add(fmt.Sprintf("%s[%d]", list.key, i), s, err.Error())
			}
		}
	}
}

// brokerURLProblem says what is wrong with a broker URL, "" if nothing.
func brokerURLProblem(s string) string {
	const want = "must be empty (embedded broker) or a URL such as tcp://broker:1883, ssl://broker:8883, ws://broker:80/mqtt or wss://broker:443/mqtt"
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return want
	}
	switch u.Scheme {
	case "tcp", "mqtt", "ssl", "tls", "mqtts", "ws", "wss":
	default:
		return want + fmt.Sprintf(" (scheme %q is not one of tcp, mqtt, ssl, tls, mqtts, ws, wss)", u.Scheme)
	}
	if u.Port() == "" {
		return want + " (the port is missing)"
	}
	return ""
}

// isTopicPrefix reports whether s is one or more MQTT topic levels that
// contain no wildcard and are not empty.
func isTopicPrefix(s string) bool {
	if s == "" {
		return false
	}
	for _, level := range strings.Split(s, "/") {
		if level == "" || !isLabel(level) {
			return false
		}
	}
	return true
}

// isSparkplugID reports whether s may be a Sparkplug group, node or device
// id: non-empty, one topic level.
func isSparkplugID(s string) bool { return isLabel(s) }
