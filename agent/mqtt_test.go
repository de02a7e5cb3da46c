package agent

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/agent/mqtt"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
)

// TestMQTTSignalsMatchTheImage brings a bus up over the simulator and
// checks that every signal the publisher derives from the bus description
// sits exactly where the master's process image keeps that value: outputs
// written through the master read back through the signal, inputs set in
// the simulator read the same through both.
func TestMQTTSignalsMatchTheImage(t *testing.T) {
	specs := []string{"EK1100", "EL2004", "EL1014", "EL3204", "EL4132", "EL1014",
		filepath.Join("..", "testdata", "real-hw", "sii", "el2889.bin"), "EL2004"}
	m, seg := simbus.Start(t, specs, master.Config{Logger: quiet})
	devs := seg.Devices()
	info := process.NewBusInfo(m, time.Millisecond)
	model, problems := mqtt.NewModel(mqttBus(info), mqtt.Rules{Interval: time.Second})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	for i, s := range m.Slaves() {
		d := &model.Devices[i]
		if (s.InputBits > 0 || s.OutputBits > 0) && len(info.Slaves[i].Signals) == 0 {
			t.Errorf("%s: no signals from its SII", d.Name)
		}
		for k := range d.Signals {
			sig := &d.Signals[k]
			want := uint64(0x5A5A5A5A5A5A5A5A) >> uint(64-sig.Bits)
			if sig.Output {
				if err := m.Image().SetOutputValue(s, sig.BitOffset, sig.Bits, want); err != nil {
					t.Fatalf("%s/%s: %v", d.Name, sig.Name, err)
				}
				if got := sig.Raw(m.Image().Bytes()); got != want {
					t.Errorf("%s/%s: wrote %#x through the master, the signal reads %#x", d.Name, sig.Name, want, got)
				}
				if err := m.Image().SetOutputValue(s, sig.BitOffset, sig.Bits, 0); err != nil {
					t.Fatal(err)
				}
				continue
			}
		}
		if s.InputBits > 0 {
			in := make([]byte, (s.InputBits+7)/8)
			for k := range in {
				in[k] = byte(0x96 + 13*k)
			}
			devs[i].SetInputs(in)
		}
	}
	for range 3 {
		if res := m.Exchange(); res.FrameLost() {
			t.Fatal("lost frame")
		}
	}
	inputs := 0
	for i, s := range m.Slaves() {
		for _, sig := range model.Devices[i].Signals {
			if sig.Output {
				continue
			}
			inputs++
			want, err := m.Image().InputValue(s, sig.BitOffset, sig.Bits)
			if err != nil {
				t.Fatal(err)
			}
			if got := sig.Raw(m.Image().Bytes()); got != want {
				t.Errorf("%s/%s: the master reads %#x, the signal %#x", model.Devices[i].Name, sig.Name, want, got)
			}
		}
	}
	if inputs < 4+4+4*8 {
		t.Errorf("only %d input signals", inputs)
	}
	el3204 := model.Devices[3]
	if s := el3204.Signal("rtd_inputs_channel_1.value"); s == nil || s.Unit != "°C" {
		t.Errorf("EL3204: %+v", el3204.Signals)
	}
}

func TestMQTTTLSConfig(t *testing.T) {
	dir := t.TempDir()
	if c, err := mqttTLS(config.MQTTTLS{}); c != nil || err != nil {
		t.Errorf("nothing configured: %v %v", c, err)
	}
	if c, err := mqttTLS(config.MQTTTLS{ServerName: "broker", InsecureSkipVerify: true}); err != nil || c.ServerName != "broker" || !c.InsecureSkipVerify {
		t.Errorf("server name: %+v %v", c, err)
	}
	if _, err := mqttTLS(config.MQTTTLS{CA: filepath.Join(dir, "absent.pem")}); err == nil || !strings.Contains(err.Error(), "mqtt.tls.ca") {
		t.Errorf("a missing CA file: %v", err)
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mqttTLS(config.MQTTTLS{CA: junk}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a CA file without certificates: %v", err)
	}
	if _, err := mqttTLS(config.MQTTTLS{Cert: junk, Key: junk}); err == nil || !strings.Contains(err.Error(), "mqtt.tls.cert") {
		t.Errorf("a bad key pair: %v", err)
	}
}

func TestStartMQTTDisabledOrPortBusy(t *testing.T) {
	cfg := config.Default()
	cfg.MQTT.Enabled = false
	if b, err := startMQTT(cfg, quiet, nil); b != nil || err != nil {
		t.Errorf("disabled: %v %v", b, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg.MQTT.Enabled, cfg.MQTT.Embedded = true, l.Addr().String()
	if b, err := startMQTT(cfg, quiet, nil); b != nil || err != nil {
		t.Errorf("embedded broker on a busy port: %v %v; want MQTT off, the agent running", b, err)
	}
	// A nil bridge ignores every call.
	var b *mqttBridge
	b.detach("x")
	b.window(cyclestats.Report{})
	b.stop()
}

// TestMQTTEmbeddedBrokerNeedsTheCredential: the embedded broker admits the
// agent with its own password and operators with the one made at first
// start in the state directory (a file of mode 0600); an anonymous client
// may watch but neither overwrite the retained status nor send a command
// (issue 18: any local user could).
func TestMQTTEmbeddedBrokerNeedsTheCredential(t *testing.T) {
	dir := t.TempDir()
	b := startEmbedded(t, dir)
	path := filepath.Join(dir, embeddedSecretFile)
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode() != 0o600 {
		t.Fatalf("operators' password file: %v %v", fi, err)
	}
	secret, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root := "ecagent/plant/edge1"
	client := func(id, user, password string) (paho.Client, error) {
		return mqtttest.Connect(t, b.broker.URL(), id, user, password)
	}
	if _, err := client("guess", embeddedOperator, "guess-guess-guess-guess"); err == nil {
		t.Fatal("a wrong password was admitted")
	}
	for _, qos := range []byte{0, 1} {
		anon, err := client(fmt.Sprint("anon-", qos), "", "")
		if err != nil {
			t.Fatalf("anonymous watcher: %v", err)
		}
		anon.Publish(root+"/status", qos, true, "forged").WaitTimeout(time.Second)
		anon.Publish(root+"/set/EL2004-1/channel_1.output", qos, false, "true").WaitTimeout(time.Second)
	}
	op, err := client("op", embeddedOperator, strings.TrimSpace(string(secret)))
	if err != nil {
		t.Fatal(err)
	}
	// Writes are off: the operator's command is refused, and counted; the
	// anonymous ones never reached the agent.
	if tok := op.Publish(root+"/set/EL2004-1/channel_1.output", 1, false, "true"); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	for deadline := time.Now().Add(5 * time.Second); b.pub.Stats().Rejected[mqtt.RejectDisabled] == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the operator's command did not reach the agent")
		}
	}
	if n := b.pub.Stats().Rejected[mqtt.RejectDisabled]; n != 1 {
		t.Errorf("%d commands reached the agent, want the operator's only", n)
	}
	status := make(chan string, 1)
	watch, err := client("watch", "", "")
	if err != nil {
		t.Fatal(err)
	}
	watch.Subscribe(root+"/status", 1, func(_ paho.Client, m paho.Message) { status <- string(m.Payload()) })
	select {
	case s := <-status:
		if s != "online" {
			t.Fatalf("retained status %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no retained status")
	}
}

// TestMQTTEmbeddedBrokerGuardsTheAgentsCommands (issue 30): through the
// embedded broker, a command published retained is refused and answered
// as such (never stored, never run), and a client taking the agent's
// client id with the operators' password is refused: the agent is not
// disconnected, its status does not flip.
func TestMQTTEmbeddedBrokerGuardsTheAgentsCommands(t *testing.T) {
	dir := t.TempDir()
	b := startEmbedded(t, dir)
	secret, err := os.ReadFile(filepath.Join(dir, embeddedSecretFile))
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(secret))
	operator := func(id string) (paho.Client, error) {
		return mqtttest.Connect(t, b.broker.URL(), id, embeddedOperator, password)
	}
	// The agent's client id, under the operators' credentials.
	for range 5 {
		if _, err := operator("ecagent-plant-edge1"); err == nil || !strings.Contains(err.Error(), "identifier rejected") {
			t.Fatalf("a client with the agent's client id: %v, want refused", err)
		}
	}
	op, err := operator("op")
	if err != nil {
		t.Fatal(err)
	}
	topic := "ecagent/plant/edge1/set/EL2004-1/channel_1.output"
	op.Publish(topic, 0, true, "true").WaitTimeout(5 * time.Second)
	for deadline := time.Now().Add(5 * time.Second); b.pub.Stats().Rejected[mqtt.RejectRetained] == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the retained command was not answered: %+v", b.pub.Stats())
		}
	}
	// A live command after it reaches the agent (refused: writes are
	// off); the retained one never did.
	op.Publish(topic, 1, false, "true").WaitTimeout(5 * time.Second)
	for deadline := time.Now().Add(5 * time.Second); b.pub.Stats().Rejected[mqtt.RejectDisabled] == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the live command did not reach the agent: %+v", b.pub.Stats())
		}
	}
	s := b.pub.Stats()
	if s.Rejected[mqtt.RejectRetained] != 1 || s.Rejected[mqtt.RejectDisabled] != 1 || s.Reconnects != 0 || !s.Connected {
		t.Fatalf("%+v: want one retained and one live command refused, and the agent connected throughout", s)
	}
}

func TestMQTTBufferFile(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "/var/lib/ecagent:/other")
	if got := mqttBufferFile(config.MQTT{}); got != "/var/lib/ecagent/"+mqttWALFile {
		t.Errorf("under systemd: %q", got)
	}
	if got := mqttBufferFile(config.MQTT{BufferFile: "/x/outbox"}); got != "/x/outbox" {
		t.Errorf("configured: %q", got)
	}
	t.Setenv("STATE_DIRECTORY", "")
	if got := mqttBufferFile(config.MQTT{}); got != "" {
		t.Errorf("neither: %q", got)
	}
}

// TestMQTTReconnectDefaultIsThePublishersCap: the default mqtt.reconnectmax
// is the cap the publisher puts on its back-off.
func TestMQTTReconnectDefaultIsThePublishersCap(t *testing.T) {
	if config.DefaultMQTTReconnectMax != mqtt.MaxReconnect {
		t.Errorf("config.DefaultMQTTReconnectMax %v, mqtt.MaxReconnect %v", config.DefaultMQTTReconnectMax, mqtt.MaxReconnect)
	}
}

// startEmbedded starts the agent's MQTT side with its embedded broker
// (state directory dir) and returns once the agent is connected to it; it
// stops when the test ends.
func startEmbedded(t *testing.T, dir string) *mqttBridge {
	t.Helper()
	t.Setenv("STATE_DIRECTORY", dir)
	cfg := config.Default()
	cfg.Site, cfg.Host = "plant", "edge1"
	cfg.MQTT.Enabled, cfg.MQTT.Embedded = true, "127.0.0.1:0"
	reg, err := metrics.NewRegistry(metrics.Options{Site: "plant", Line: "l", Host: "edge1", Target: time.Millisecond, CycleCore: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := startMQTT(cfg, quiet, reg)
	if err != nil || b == nil {
		t.Fatalf("startMQTT: %v %v", b, err)
	}
	t.Cleanup(b.stop)
	if !testsupport.Eventually(10*time.Second, func() bool { return b.pub.Stats().Connected }) {
		t.Fatal("the agent did not connect to its embedded broker")
	}
	return b
}
