package mqttconn

import "testing"

func TestPacketIDWrapSkipsInflight(t *testing.T) {
	c := &Conn{}
	c.next = 65533
	c.ids[65535] = idInflight // still in flight from before the wrap
	c.ids[1] = idAcked        // acknowledged, not yet taken
	c.used = 2
	var got []uint16
	for range 4 {
		id, ok := c.takeID(idInflight, 10)
		if !ok {
			t.Fatal("no id")
		}
		got = append(got, id)
	}
	want := []uint16{65534, 2, 3, 4}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ids %v, want %v", got, want)
		}
	}
	if _, ok := c.takeID(idInflight, 6); ok {
		t.Fatal("an id beyond the in-flight limit")
	}
	c.ids[2] = idAcked
	if !c.Acked(2) || c.Acked(2) || c.Acked(3) || !c.Acked(0) {
		t.Fatal("Acked does not report an acknowledged id exactly once")
	}
}
