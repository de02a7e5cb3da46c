package broker

import (
	"net"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

func TestBrokerCarriesMessages(t *testing.T) {
	b, err := Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.HasPrefix(b.URL(), "tcp://127.0.0.1:") || strings.HasSuffix(b.Addr(), ":0") {
		t.Fatalf("URL %s, addr %s", b.URL(), b.Addr())
	}
	got := make(chan string, 1)
	sub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("sub"))
	if tok := sub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer sub.Disconnect(0)
	tok := sub.Subscribe("ecagent/#", 1, func(_ paho.Client, m paho.Message) { got <- m.Topic() + " " + string(m.Payload()) })
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("pub"))
	if tok := pub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer pub.Disconnect(0)
	pub.Publish("ecagent/a/b/status", 1, true, "online").WaitTimeout(5 * time.Second)
	select {
	case m := <-got:
		if m != "ecagent/a/b/status online" {
			t.Errorf("got %q", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing arrived")
	}
}

func TestBrokerPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if b, err := Start(l.Addr().String(), nil); err == nil {
		b.Close()
		t.Fatal("started on a port in use")
	} else if !strings.Contains(err.Error(), l.Addr().String()) {
		t.Errorf("the error does not name the address: %v", err)
	}
}
