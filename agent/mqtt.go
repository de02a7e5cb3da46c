package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/agent/mqtt"
	"github.com/ecagent/ecagent/agent/mqtt/broker"
	"github.com/ecagent/ecagent/agent/mqtt/ruleparse"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// mqttCloseGrace is how long stopping waits to deliver what is buffered.
const mqttCloseGrace = 2 * time.Second

// mqttBridge feeds the MQTT publisher from the consumer: the bus of each
// cycle process, its events and the window statistics. It starts the
// embedded broker when mqtt.broker is empty. A nil *mqttBridge (MQTT
// disabled, or the embedded broker could not start) ignores every call.
type mqttBridge struct {
	pub *mqtt.Publisher
	// started is pub once it exists, for the embedded broker, which
	// starts before it and reports the retained commands it refuses.
	started   atomic.Pointer[mqtt.Publisher]
	collector prometheus.Collector
	broker    *broker.Broker
	reg       *metrics.Registry
	rules     mqtt.Rules
	log       *slog.Logger
}

// startMQTT starts the publisher (and the embedded broker) for cfg. An
// unusable MQTT configuration (TLS files) is an error; an embedded broker
// that cannot listen is reported and MQTT stays off.
func startMQTT(cfg config.Config, log *slog.Logger, reg *metrics.Registry) (*mqttBridge, error) {
	mc := cfg.MQTT
	if !mc.Enabled {
		return nil, nil
	}
	scheme, err := mqtt.ParseScheme(mc.Scheme)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := mqttTLS(mc.TLS)
	if err != nil {
		return nil, err
	}
	rules, err := mqttRules(mc)
	if err != nil {
		return nil, err
	}
	b := &mqttBridge{reg: reg, rules: rules, log: log}
	id := newMQTTIdentity(cfg)
	url, username, password := mc.Broker, mc.Username, mc.Password
	if url == "" {
		var ok bool
		if url, username, password, ok = b.startEmbeddedBroker(mc, id, log); !ok {
			return nil, nil
		}
	}
	pc := mqtt.Config{
		Broker: url, ClientID: id.clientID, Username: username, Password: password, TLS: tlsConfig,
		QoS: byte(mc.QoS), Scheme: scheme, Root: id.root,
		Group: mc.Sparkplug.Group, Node: id.node, Rules: rules, Scan: mc.Scan, Buffer: mc.Buffer,
		BufferFile: mqttBufferFile(mc), Timeout: mc.Timeout, ReconnectMin: mc.ReconnectMin, ReconnectMax: mc.ReconnectMax,
		WritesEnabled: mc.Writes.Enabled, Logger: log, StateDir: mqttStateDir(mc),
	}
	b.pub, err = newPublisher(pc, mc, log)
	if err != nil {
		b.closeBroker()
		return nil, err
	}
	b.started.Store(b.pub)
	b.collector = b.pub.Collector()
	if err := reg.Register(b.collector); err != nil {
		b.closeBroker()
		return nil, err
	}
	b.pub.Start()
	log.Info("MQTT publisher", "broker", url, "scheme", mc.Scheme, "interval", mc.Interval, "onchange", mc.OnChange,
		"writes", mc.Writes.Enabled)
	return b, nil
}

// mqttIdentity is who the agent is on MQTT: its client ID, its Sparkplug
// edge node and the root of its topics.
type mqttIdentity struct {
	clientID, node, root string
}

// newMQTTIdentity returns cfg's MQTT identity: the configured client ID
// and Sparkplug node, else ones made of the site and host.
func newMQTTIdentity(cfg config.Config) mqttIdentity {
	mc := cfg.MQTT
	id := mqttIdentity{clientID: mc.ClientID, node: mc.Sparkplug.Node, root: mc.Prefix + "/" + cfg.Site + "/" + cfg.Host}
	if id.clientID == "" {
		id.clientID = "ecagent-" + cfg.Site + "-" + cfg.Host
	}
	if id.node == "" {
		id.node = cfg.Host
	}
	return id
}

// startEmbeddedBroker starts the embedded broker (mqtt.broker empty) with
// its credentials, and returns where and as whom the publisher connects
// to it. When it cannot start, it says so and ok is false: MQTT stays
// off.
func (b *mqttBridge) startEmbeddedBroker(mc config.MQTT, id mqttIdentity, log *slog.Logger) (url, username, password string, ok bool) {
	auth, secretPath, err := embeddedAuth(mqttStateDir(mc), id.root, mc.Sparkplug.Group, id.node, id.clientID, log)
	if err != nil {
		log.Warn("MQTT stays off: the embedded broker's credential is unusable (set mqtt.broker to use another broker)", "err", err)
		return "", "", "", false
	}
	auth.RetainRefused = func(topic string) {
		if p := b.started.Load(); p != nil {
			p.RefuseRetained(topic)
		}
	}
	b.broker, err = broker.StartAuth(mc.Embedded, log, auth)
	if err != nil {
		log.Warn("MQTT stays off: the embedded broker cannot start (set mqtt.broker to use another broker, or mqtt.embedded to listen elsewhere)", "err", err)
		return "", "", "", false
	}
	host, port, _ := net.SplitHostPort(b.broker.Addr())
	try := []any{"addr", b.broker.Addr(), "try", fmt.Sprintf("mosquitto_sub -h %s -p %s -t '%s/#' -v", host, port, mc.Prefix)}
	if secretPath != "" {
		try = append(try, "commands", fmt.Sprintf("mosquitto_pub -h %s -p %s -u %s -P \"$(cat %s)\" -t '%s/set/<slave>/<signal>' -m <value>",
			host, port, embeddedOperator, secretPath, id.root))
	}
	log.Info("embedded MQTT broker", try...)
	return b.broker.URL(), auth.Agent.Username, auth.Agent.Password, true
}

// newPublisher makes the publisher of pc. When the write-ahead log in the
// state directory, which mc did not ask for, cannot be used, the outbox is
// kept in memory, as before there was one, and the log says so.
func newPublisher(pc mqtt.Config, mc config.MQTT, log *slog.Logger) (*mqtt.Publisher, error) {
	pub, err := mqtt.New(pc)
	if err != nil && mc.BufferFile == "" && pc.BufferFile != "" {
		log.Warn("MQTT outbox kept in memory only: its write-ahead log cannot be used (set mqtt.bufferfile to choose another file)",
			"file", pc.BufferFile, "err", err)
		pc.BufferFile = ""
		pub, err = mqtt.New(pc)
	}
	return pub, err
}

// The embedded broker's users: the agent (a password made at each start,
// known to this process only) and operators, whose password is made at
// first start and kept in embeddedSecretFile in the state directory.
const (
	embeddedAgent      = "ecagent"
	embeddedOperator   = "operator"
	embeddedSecretFile = "mqtt-operator.secret"
)

// embeddedAuth returns who may use the embedded broker: the agent, with a
// new password, alone with its client id clientID; operators, who may
// publish the agent's commands only, never retained, with the password
// kept in stateDir (secretPath; "" when there is no state directory: the
// password is then made for this run and known to nobody, so that no
// command can come through the broker); anonymous clients may watch, not
// publish (the data can be seen flowing without set-up, as before).
func embeddedAuth(stateDir, root, group, node, clientID string, log *slog.Logger) (a *broker.Auth, secretPath string, err error) {
	operator := broker.NewSecret()
	if stateDir != "" {
		var created bool
		operator, created, err = broker.LoadOrCreateSecret(stateDir, embeddedSecretFile)
		if err != nil {
			return nil, "", err
		}
		secretPath = filepath.Join(stateDir, embeddedSecretFile)
		if created {
			log.Info("embedded MQTT broker: made the operators' password", "file", secretPath, "user", embeddedOperator)
		}
	} else {
		log.Warn("embedded MQTT broker: no state directory (STATE_DIRECTORY or mqtt.bufferfile) to keep the operators' password in: no client can send commands")
	}
	commands := []string{
		root + "/set/#",
		"spBv1.0/" + group + "/NCMD/" + node,
		"spBv1.0/" + group + "/DCMD/" + node + "/+",
	}
	return &broker.Auth{
		Agent:          broker.Credential{Username: embeddedAgent, Password: broker.NewSecret()},
		Operator:       broker.Credential{Username: embeddedOperator, Password: operator},
		CommandFilters: append(slices.Clone(commands), "spBv1.0/STATE/+"), // and a Sparkplug host application's state
		AnonymousRead:  true,
		AgentClientID:  clientID,
		NoRetain:       commands,
	}, secretPath, nil
}

// mqttStateDir is where the publisher keeps its state across restarts
// (the Sparkplug bdSeq): systemd's StateDirectory= ($STATE_DIRECTORY,
// /var/lib/ecagent in the unit we ship), else the directory of
// mqtt.bufferfile, else nowhere (kept in memory).
func mqttStateDir(mc config.MQTT) string {
	if d := os.Getenv("STATE_DIRECTORY"); d != "" {
		return filepath.SplitList(d)[0]
	}
	if mc.BufferFile != "" {
		return filepath.Dir(mc.BufferFile)
	}
	return ""
}

// mqttWALFile is the write-ahead log of the MQTT outbox in the state
// directory, when mqtt.bufferfile does not name one.
const mqttWALFile = "mqtt-outbox.wal"

// mqttBufferFile is the outbox's write-ahead log: mqtt.bufferfile, else
// mqttWALFile in systemd's StateDirectory= (so that under the unit we ship
// what is buffered during an outage survives a crash), else none.
func mqttBufferFile(mc config.MQTT) string {
	if mc.BufferFile != "" {
		return mc.BufferFile
	}
	if d := os.Getenv("STATE_DIRECTORY"); d != "" {
		return filepath.Join(filepath.SplitList(d)[0], mqttWALFile)
	}
	return ""
}

// mqttRules parses the rules of the MQTT section (Validate has checked
// them).
func mqttRules(mc config.MQTT) (mqtt.Rules, error) {
	r := mqtt.Rules{Interval: mc.Interval, OnChange: mc.OnChange}
	var errs []error
	for _, s := range mc.Slaves {
		rule, err := ruleparse.ParseSlaveRule(s)
		errs = append(errs, err)
		r.Slaves = append(r.Slaves, rule)
	}
	for _, s := range mc.Signals {
		rule, err := ruleparse.ParseSignalRule(s)
		errs = append(errs, err)
		r.Signals = append(r.Signals, rule)
	}
	for _, s := range mc.Writes.Allow {
		rule, err := ruleparse.ParseWriteRule(s)
		errs = append(errs, err)
		r.Writes = append(r.Writes, rule)
	}
	if err := errors.Join(errs...); err != nil {
		return mqtt.Rules{}, fmt.Errorf("mqtt rules: %w", err)
	}
	return r, nil
}

// mqttTLS builds the TLS client configuration of the MQTT connection; nil
// when nothing is configured (Go's defaults then apply to ssl://).
func mqttTLS(t config.MQTTTLS) (*tls.Config, error) {
	if t == (config.MQTTTLS{}) {
		return nil, nil
	}
	c := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("mqtt.tls.ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mqtt.tls.ca %s: no PEM certificate in it", t.CA)
		}
		c.RootCAs = pool
	}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("mqtt.tls.cert/mqtt.tls.key: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// mqttBus describes the bus of a cycle process to the publisher.
func mqttBus(info *contract.BusInfo) mqtt.Bus {
	bus := mqtt.Bus{OutputBytes: info.OutputBytes, InputBytes: info.InputBytes}
	for _, s := range info.Slaves {
		ms := mqtt.Slave{
			Position: s.Position, OrderCode: s.OrderCode, DeviceName: s.Name,
			VendorID: s.VendorID, ProductCode: s.ProductCode, Revision: s.Revision, Serial: s.Serial,
			InputOffset: s.InputOffset, OutputOffset: s.OutputOffset, InputBits: s.InputBits, OutputBits: s.OutputBits,
		}
		for _, sig := range s.Signals {
			ms.Entries = append(ms.Entries, mqtt.Entry{
				Output: sig.Output, PDO: sig.PDO, PDOName: sig.PDOName, Index: sig.Index, SubIndex: sig.SubIndex,
				Name: sig.Name, DataType: sig.DataType, Bits: sig.Bits, Offset: sig.Offset, Unit: sig.Unit,
			})
		}
		bus.Slaves = append(bus.Slaves, ms)
	}
	return bus
}

// attach publishes the bus of cycle process cp.
func (b *mqttBridge) attach(cp *CycleProcess) {
	if b == nil {
		return
	}
	model, problems := mqtt.NewModel(mqttBus(cp.Info()), b.rules)
	for _, p := range problems {
		b.log.Warn("MQTT configuration does not fit the bus", "problem", p)
	}
	b.pub.SetBus(model, cp.Segment().Image(), cp.Segment().Commands())
}

// setBusModel makes the publisher render the bus's state from model (the
// consumer's, fed with every event before the publisher gets it).
func (b *mqttBridge) setBusModel(model *busstate.Model) {
	if b == nil {
		return
	}
	b.pub.SetBusModel(model)
}

// detach stops reading the segment of the cycle process, before it goes.
func (b *mqttBridge) detach(reason string) {
	if b == nil {
		return
	}
	b.pub.Detach(reason)
}

// stateChanged makes the publisher render the bus model's state now,
// also with no bus attached (a cycle process bringing the bus up).
func (b *mqttBridge) stateChanged() {
	if b == nil {
		return
	}
	b.pub.BusStateChanged()
}

// bringUpFailed publishes a failed bring-up: an event, and the bus's
// state from the model.
func (b *mqttBridge) bringUpFailed(reason busstate.BringUpReason, text string, failures int, retryIn time.Duration) {
	if b == nil {
		return
	}
	b.pub.BringUpFailed(reason.String(), text, failures, retryIn, time.Now())
}

// event passes on an event of the cycle.
func (b *mqttBridge) event(ev *shm.Event) {
	if b == nil {
		return
	}
	// The event's time is CLOCK_MONOTONIC; place it on the wall clock.
	at := time.Now().Add(-time.Duration(shm.Now() - ev.Time))
	b.pub.Event(ev, at)
}

// window passes on the statistics of a closed window.
func (b *mqttBridge) window(r cyclestats.Report) {
	if b == nil {
		return
	}
	b.pub.Window(&r, time.Now())
}

// stop delivers what it can, says goodbye and stops the embedded broker.
func (b *mqttBridge) stop() {
	if b == nil {
		return
	}
	if err := b.pub.Close(mqttCloseGrace); err != nil {
		b.log.Error("MQTT buffer file", "err", err)
	}
	b.reg.Unregister(b.collector)
	b.closeBroker()
}

func (b *mqttBridge) closeBroker() {
	if b.broker != nil {
		if err := b.broker.Close(); err != nil {
			b.log.Error("embedded MQTT broker", "err", err)
		}
	}
}
