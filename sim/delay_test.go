package sim

import (
	"context"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// TestResponseDelay switches delays on at run time and checks that every
// Nth answer, and only those, comes back late.
func TestResponseDelay(t *testing.T) {
	devs, err := ParseDevices([]string{"EK1100", "EL1004"})
	if err != nil {
		t.Fatal(err)
	}
	rd := NewResponseDelay(30*time.Millisecond, 3)
	seg := NewSegment(devs, WithResponseDelay(rd))
	a, b := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = seg.Serve(ctx, b) }()
	var bl wire.Builder
	buf := make([]byte, wire.MaxFrameLen)
	rx := make([]byte, link.MaxFrameSize)
	late := func() bool {
		_ = bl.Reset(buf, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, [6]byte{2})
		_, _ = bl.Append(wire.BRD, 1, 0, 2)
		if err := a.Send(bl.Bytes()); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Recv(rx, time.Now().Add(15*time.Millisecond)); err == nil {
			return false
		}
		if _, err := a.Recv(rx, time.Now().Add(time.Second)); err != nil {
			t.Fatalf("delayed answer never came: %v", err)
		}
		return true
	}
	for i := range 6 {
		if late() {
			t.Fatalf("answer %d late with delaying off", i)
		}
	}
	rd.Set(true)
	var got []bool
	for range 6 {
		got = append(got, late())
	}
	want := []bool{false, false, true, false, false, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("late answers %v, want %v", got, want)
		}
	}
	if !rd.On() {
		t.Error("On() false after Set(true)")
	}
}
