package mqtt

import (
	"slices"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
)

// retainedMeta returns the meta topics retained at the broker under root,
// as a new subscriber gets them (the broker sends retained messages
// first; a probe published after subscribing marks their end).
func retainedMeta(t *testing.T, url, root string) []string {
	t.Helper()
	s := subscribe(t, url, "meta-probe-"+time.Now().Format("150405.000000"), root+"/#", false)
	if tok := s.c.Publish(root+"/probe", 1, false, "end"); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	s.waitFor(t, "/probe", 5*time.Second, nil)
	var got []string
	for _, m := range s.all() {
		if m.retained && len(m.payload) > 0 && len(m.topic) > len(root+"/meta/") && m.topic[:len(root+"/meta/")] == root+"/meta/" {
			got = append(got, m.topic[len(root+"/meta/"):])
		}
	}
	slices.Sort(got)
	return got
}

// TestRetainedMetaOfSlavesThatLeftIsCleared: a retained meta left by an
// earlier run for a slave this bus has not is cleared once the publisher
// is connected; and when a new bus lacks a device, its meta is cleared
// too (issue 18: the retained meta of slaves that left stayed forever).
func TestRetainedMetaOfSlavesThatLeftIsCleared(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/meta"
	plant := subscribe(t, broker.URL(), "planter", "nothing/here", false)
	for _, stale := range []string{"EL9999-9", "EL2004-8"} {
		if tok := plant.c.Publish(root+"/meta/"+stale, 1, true, `{"slave":"gone"}`); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatal(tok.Error())
		}
	}
	events := subscribe(t, broker.URL(), "meta-events", root+"/events", false)
	p, img, ring := newTestPublisher(t, Config{Broker: broker.URL(), QoS: 1, Root: root, Rules: Rules{Interval: time.Hour}})
	waitServing(t, p, events)
	want := []string{"EK1100-0", "EK1110-6", "EL1014-3", "EL1014-4", "EL2004-1", "EL2004-2", "EL3204-7", "EL4132-5"}
	var got []string
	for deadline := time.Now().Add(5 * time.Second); ; {
		if got = retainedMeta(t, broker.URL(), root); slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("retained meta %v, want %v", got, want)
	}

	// A new bus without the EL3204.
	bus := referenceBus()
	bus.Slaves = bus.Slaves[:len(bus.Slaves)-1]
	model, problems := NewModel(bus, Rules{Interval: time.Hour})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	p.SetBus(model, img, ring)
	waitServing(t, p, events)
	want = slices.DeleteFunc(want, func(s string) bool { return s == "EL3204-7" })
	for deadline := time.Now().Add(5 * time.Second); ; {
		if got = retainedMeta(t, broker.URL(), root); slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("after a bus without the EL3204, retained meta %v, want %v", got, want)
	}
}
