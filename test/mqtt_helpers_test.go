package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/ecagent/ecagent/agent"
)

// mqttMessage is one message a test subscriber received.
type mqttMessage struct {
	Topic    string
	Payload  []byte
	Retained bool
	At       time.Time
}

// mqttInbox collects messages, from paho or from mosquitto_sub.
type mqttInbox struct {
	mu   sync.Mutex
	msgs []mqttMessage
	more chan struct{}
}

func newInbox() *mqttInbox { return &mqttInbox{more: make(chan struct{}, 1)} }

func (in *mqttInbox) add(m mqttMessage) {
	in.mu.Lock()
	in.msgs = append(in.msgs, m)
	in.mu.Unlock()
	select {
	case in.more <- struct{}{}:
	default:
	}
}

func (in *mqttInbox) all() []mqttMessage {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]mqttMessage(nil), in.msgs...)
}

func (in *mqttInbox) len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.msgs)
}

// waitFrom waits for a message from index from on whose topic ends in
// suffix and that satisfies ok (nil: any), and returns it.
func (in *mqttInbox) waitFrom(t *testing.T, from int, suffix string, within time.Duration, ok func(mqttMessage) bool) mqttMessage {
	t.Helper()
	deadline := time.After(within)
	for seen := from; ; {
		in.mu.Lock()
		for ; seen < len(in.msgs); seen++ {
			if m := in.msgs[seen]; strings.HasSuffix(m.Topic, suffix) && (ok == nil || ok(m)) {
				in.mu.Unlock()
				return m
			}
		}
		in.mu.Unlock()
		select {
		case <-in.more:
		case <-deadline:
			t.Fatalf("no message on …%s within %v", suffix, within)
		}
	}
}

// mosquittoSub runs mosquitto_sub -v on filter and collects what it prints
// ("topic payload" lines; the payloads of the JSON scheme are one line).
func mosquittoSub(t *testing.T, port int, filter string) *mqttInbox {
	t.Helper()
	if _, err := exec.LookPath("mosquitto_sub"); err != nil {
		t.Skip("needs mosquitto_sub (apt-get install mosquitto-clients)")
	}
	cmd := exec.Command("mosquitto_sub", "-h", "127.0.0.1", "-p", fmt.Sprint(port), "-q", "1", "-v", "-t", filter)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := newInbox()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			topic, payload, _ := strings.Cut(sc.Text(), " ")
			in.add(mqttMessage{Topic: topic, Payload: []byte(payload), At: time.Now()})
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); <-done })
	time.Sleep(100 * time.Millisecond) // its SUBSCRIBE
	return in
}

// pahoSub subscribes a paho client to filter at QoS 1; persistent keeps
// its session on the broker (clean session off) across broker restarts.
func pahoSub(t *testing.T, url, id, filter string, persistent bool) (*mqttInbox, paho.Client) {
	t.Helper()
	in := newInbox()
	handler := func(_ paho.Client, m paho.Message) {
		in.add(mqttMessage{Topic: m.Topic(), Payload: append([]byte(nil), m.Payload()...), Retained: m.Retained(), At: time.Now()})
	}
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(!persistent).
		SetAutoReconnect(true).SetMaxReconnectInterval(100 * time.Millisecond).
		SetConnectRetry(true).SetConnectRetryInterval(100 * time.Millisecond).SetDefaultPublishHandler(handler)
	if !persistent {
		o.SetOnConnectHandler(func(c paho.Client) { c.Subscribe(filter, 1, handler) })
	}
	c := paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscriber: %v", tok.Error())
	}
	if persistent {
		if tok := c.Subscribe(filter, 1, handler); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("subscribe: %v", tok.Error())
		}
	} else {
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() { c.Disconnect(0) })
	return in, c
}

// pdPayload is the JSON scheme's process-data payload.
type pdPayload struct {
	TS     int64          `json:"ts"`
	Seq    uint64         `json:"seq"`
	Cycle  uint64         `json:"cycle"`
	Values map[string]any `json:"values"`
}

func decodePD(t *testing.T, m mqttMessage) pdPayload {
	t.Helper()
	var pd pdPayload
	if err := json.Unmarshal(m.Payload, &pd); err != nil {
		t.Fatalf("%s: %v: %s", m.Topic, err, m.Payload)
	}
	return pd
}

// killOrphanCycle stops the cycle process (and with it the simulator) an
// agent killed with SIGKILL left running on the segment at shmPath.
func killOrphanCycle(t *testing.T, shmPath string) {
	t.Helper()
	info, err := agent.ReadBusInfo(agent.BusInfoPath(shmPath))
	if err == nil && info.CyclePID > 0 {
		_ = syscall.Kill(info.CyclePID, syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(info.CyclePID, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		_ = syscall.Kill(info.CyclePID, syscall.SIGKILL)
	}
	for _, p := range []string{shmPath, agent.BusInfoPath(shmPath), shmPath + ".yaml"} {
		_ = os.Remove(p)
	}
}

// stopAgent stops an agent with SIGTERM and waits for it.
func stopAgent(t *testing.T, a *agentProc) {
	t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		<-done
		t.Errorf("the agent did not stop in time:\n%s", a.log())
	}
}
