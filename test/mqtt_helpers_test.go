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

	"github.com/ecagent/ecagent/cycle/control"
	"github.com/ecagent/ecagent/cycle/program"
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
// It returns once mosquitto_sub's subscription is in place: it subscribes
// to a probe topic of its own too, which the test publishes to until the
// probe comes back (mosquitto_sub does not say when it has its SUBACK).
// Probe messages are not collected.
func mosquittoSub(t *testing.T, port int, filter string) *mqttInbox {
	t.Helper()
	if _, err := exec.LookPath("mosquitto_sub"); err != nil {
		t.Skip("needs mosquitto_sub (apt-get install mosquitto-clients)")
	}
	probe := fmt.Sprintf("ecagent-test/probe/%d/%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command("mosquitto_sub", "-h", "127.0.0.1", "-p", fmt.Sprint(port), "-q", "1", "-v", "-t", filter, "-t", probe)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := newInbox()
	done := make(chan struct{})
	subscribed := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		seen := false
		for sc.Scan() {
			topic, payload, _ := strings.Cut(sc.Text(), " ")
			if topic == probe {
				if !seen {
					seen = true
					close(subscribed)
				}
				continue
			}
			in.add(mqttMessage{Topic: topic, Payload: []byte(payload), At: time.Now()})
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); <-done })

	pub := paho.NewClient(paho.NewClientOptions().AddBroker(fmt.Sprintf("tcp://127.0.0.1:%d", port)).
		SetClientID(fmt.Sprintf("probe-%d-%d", os.Getpid(), time.Now().UnixNano())))
	if tok := pub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("probe publisher: no connection within 5 s: %v", tok.Error())
	}
	defer pub.Disconnect(0)
	deadline := time.After(5 * time.Second)
	for {
		pub.Publish(probe, 0, false, "probe") // lost while mosquitto_sub is not subscribed yet
		select {
		case <-subscribed:
			return in
		case <-done:
			t.Fatalf("mosquitto_sub -t %s exited before it subscribed", filter)
		case <-deadline:
			t.Fatalf("mosquitto_sub -t %s: no subscription within 5 s", filter)
		case <-time.After(20 * time.Millisecond):
		}
	}
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
	// A clean session subscribes again on every connection; the first
	// SUBACK is what pahoSub waits for. (The handler must not block.)
	subacked := make(chan error, 1)
	if !persistent {
		o.SetOnConnectHandler(func(c paho.Client) {
			tok := c.Subscribe(filter, 1, handler)
			go func() {
				tok.Wait()
				select {
				case subacked <- tok.Error():
				default:
				}
			}()
		})
	}
	c := paho.NewClient(o)
	t.Cleanup(func() { c.Disconnect(0) })
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscriber %s: no connection within 5 s: %v", id, tok.Error())
	}
	if persistent {
		if tok := c.Subscribe(filter, 1, handler); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("subscriber %s: no SUBACK for %s within 5 s: %v", id, filter, tok.Error())
		}
		return in, c
	}
	select {
	case err := <-subacked:
		if err != nil {
			t.Fatalf("subscriber %s: subscribe %s: %v", id, filter, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("subscriber %s: no SUBACK for %s within 5 s", id, filter)
	}
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
	info, err := program.ReadBusInfo(program.BusInfoPath(shmPath))
	if err == nil && info.CyclePID > 0 {
		_ = syscall.Kill(info.CyclePID, syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(info.CyclePID, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		_ = syscall.Kill(info.CyclePID, syscall.SIGKILL)
	}
	for _, p := range []string{shmPath, program.BusInfoPath(shmPath), shmPath + ".cycle.json", control.SocketPath(shmPath), control.SocketDir(shmPath)} {
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
