package mqtt

import (
	"strconv"
	"strings"
	"testing"
)

func topics(ms []message) string {
	s := ""
	for _, m := range ms {
		s += m.topic + " "
	}
	return s
}

func TestOutboxDropsOldestAndCounts(t *testing.T) {
	o := newOutbox(3)
	for i := range 5 {
		o.push(message{topic: strconv.Itoa(i)})
	}
	if o.Len() != 3 || o.Dropped() != 2 {
		t.Fatalf("len %d dropped %d, want 3 and 2", o.Len(), o.Dropped())
	}
	if got := topics(o.drain()); got != "2 3 4 " {
		t.Errorf("kept %q, want the newest three in order", got)
	}
}

func TestOutboxRequeueGoesFirst(t *testing.T) {
	o := newOutbox(4)
	o.push(message{topic: "c"})
	o.push(message{topic: "d"})
	o.requeue([]message{{topic: "a"}, {topic: "b"}})
	if got := topics(o.drain()); got != "a b c d " {
		t.Errorf("order %q", got)
	}
	// Requeued messages may have reached the broker: they are never
	// dropped for room (they are few: one window in flight), the messages
	// never sent are.
	o.push(message{topic: "c"})
	o.push(message{topic: "d"})
	o.push(message{topic: "e"})
	o.push(message{topic: "f"})
	o.requeue([]message{{topic: "a"}, {topic: "b"}})
	o.requeue([]message{{topic: "0"}})
	if o.Len() != 7 {
		t.Errorf("len %d, want 7", o.Len())
	}
	o.push(message{topic: "g"})
	if got := topics(o.drain()); got != "0 a b d e f g " || o.Dropped() != 1 {
		t.Errorf("order %q, dropped %d; want 0 a b d e f g and 1", got, o.Dropped())
	}
}

func TestOutboxRecyclesBuffers(t *testing.T) {
	o := newOutbox(8)
	b := o.buffer()
	b = append(b, "payload"...)
	o.push(message{payload: b})
	m, _ := o.pop()
	o.recycle(m.payload)
	if n := testing.AllocsPerRun(100, func() {
		x := o.buffer()
		x = append(x, "payload"...)
		o.push(message{payload: x})
		m, _ := o.pop()
		o.recycle(m.payload)
	}); n != 0 {
		t.Errorf("a steady flow allocates %v times per message", n)
	}
}

// TestOutboxKeepsTheLatestRetained checks that retained plain messages
// are kept apart from the bounded FIFO: the latest per topic supersedes
// the one still waiting, none is dropped for room (the drop counter counts
// FIFO messages only), and they go out before the FIFO, topics in the
// order they first came.
func TestOutboxKeepsTheLatestRetained(t *testing.T) {
	o := newOutbox(2)
	o.push(message{topic: "r/state", payload: []byte("lost"), retain: true})
	for i := range 5 {
		o.push(message{topic: "r/pd/x", payload: []byte{byte('0' + i)}})
	}
	o.push(message{topic: "r/meta/x", payload: []byte("m"), retain: true})
	o.push(message{topic: "r/state", payload: []byte("ready"), retain: true})
	if got := o.Dropped(); got != 3 {
		t.Errorf("dropped %d, want 3 (five pd in a FIFO of two; no retained message)", got)
	}
	if got := o.Len(); got != 4 {
		t.Errorf("Len() = %d, want 4", got)
	}
	var got []string
	for _, m := range o.drain() {
		got = append(got, m.topic+"="+string(m.payload))
	}
	want := []string{"r/state=ready", "r/meta/x=m", "r/pd/x=3", "r/pd/x=4"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("sent %v, want %v", got, want)
	}
	if o.Len() != 0 {
		t.Errorf("Len() = %d after draining", o.Len())
	}
}
