package mqtttest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Message is one message a test subscriber received.
type Message struct {
	Topic    string
	Payload  []byte
	Retained bool
	At       time.Time // when it arrived
}

// Inbox collects the messages of a subscription (paho's or
// mosquitto_sub's) in the order they arrive. Safe for concurrent use.
type Inbox struct {
	mu   sync.Mutex
	msgs []Message
	more chan struct{}
}

// NewInbox returns an empty inbox.
func NewInbox() *Inbox { return &Inbox{more: make(chan struct{}, 1)} }

// Add appends m and wakes a waiting WaitFrom.
func (in *Inbox) Add(m Message) {
	in.mu.Lock()
	in.msgs = append(in.msgs, m)
	in.mu.Unlock()
	select {
	case in.more <- struct{}{}:
	default:
	}
}

// All returns a copy of every message so far.
func (in *Inbox) All() []Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Message(nil), in.msgs...)
}

// Len returns how many messages arrived so far: the from of a later
// WaitFrom that must ignore them.
func (in *Inbox) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.msgs)
}

// WaitFrom waits for a message from index from on whose topic ends in
// suffix and that satisfies ok (nil: any), and returns it; it fails the
// test when none comes within the deadline.
func (in *Inbox) WaitFrom(tb testing.TB, from int, suffix string, within time.Duration, ok func(Message) bool) Message {
	tb.Helper()
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
			tb.Fatalf("no message on …%s within %v", suffix, within)
		}
	}
}

// Wait waits until ok holds for every message received so far, and fails
// the test, saying what it waited for, when it does not within the
// deadline.
func (in *Inbox) Wait(tb testing.TB, within time.Duration, what string, ok func([]Message) bool) {
	tb.Helper()
	deadline := time.After(within)
	for !ok(in.All()) {
		select {
		case <-in.more:
		case <-deadline:
			tb.Fatalf("not within %v: %s (%d messages)", within, what, in.Len())
		}
	}
}

// Connect connects a paho client with this client id (and user and
// password, if user is not empty) that does not reconnect; it is
// disconnected when the test ends. The error says why it did not connect
// within 5 s: some tests expect a refusal.
func Connect(tb testing.TB, url, id, user, password string) (paho.Client, error) {
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetAutoReconnect(false)
	if user != "" {
		o.SetUsername(user).SetPassword(password)
	}
	c := paho.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		return nil, fmt.Errorf("connect %s: %v", id, tok.Error())
	}
	tb.Cleanup(func() { c.Disconnect(0) })
	return c, nil
}

// Subscribe subscribes a paho client to filter at QoS 1 and returns once
// the broker acknowledged the subscription; persistent keeps its session
// on the broker (clean session off) across broker restarts, otherwise the
// client subscribes again on every connection. The client reconnects by
// itself and is disconnected when the test ends.
func Subscribe(tb testing.TB, url, id, filter string, persistent bool) (*Inbox, paho.Client) {
	tb.Helper()
	in := NewInbox()
	handler := func(_ paho.Client, m paho.Message) {
		in.Add(Message{Topic: m.Topic(), Payload: append([]byte(nil), m.Payload()...), Retained: m.Retained(), At: time.Now()})
	}
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(!persistent).
		SetAutoReconnect(true).SetMaxReconnectInterval(100 * time.Millisecond).
		SetConnectRetry(true).SetConnectRetryInterval(100 * time.Millisecond).SetDefaultPublishHandler(handler)
	// A clean session subscribes again on every connection; the first
	// SUBACK is what Subscribe waits for. (The handler must not block.)
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
	tb.Cleanup(func() { c.Disconnect(0) })
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		tb.Fatalf("subscriber %s: no connection within 5 s: %v", id, tok.Error())
	}
	if persistent {
		if tok := c.Subscribe(filter, 1, handler); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			tb.Fatalf("subscriber %s: no SUBACK for %s within 5 s: %v", id, filter, tok.Error())
		}
		return in, c
	}
	select {
	case err := <-subacked:
		if err != nil {
			tb.Fatalf("subscriber %s: subscribe %s: %v", id, filter, err)
		}
	case <-time.After(5 * time.Second):
		tb.Fatalf("subscriber %s: no SUBACK for %s within 5 s", id, filter)
	}
	return in, c
}

// MosquittoSub runs mosquitto_sub -v on filter and collects what it prints
// ("topic payload" lines; the payloads of the JSON scheme are one line).
// It returns once mosquitto_sub's subscription is in place: it subscribes
// to a probe topic of its own too, which the test publishes to until the
// probe comes back (mosquitto_sub does not say when it has its SUBACK).
// Probe messages are not collected.
func MosquittoSub(t testing.TB, port int, filter string) *Inbox {
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
	in := NewInbox()
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
			in.Add(Message{Topic: topic, Payload: []byte(payload), At: time.Now()})
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
