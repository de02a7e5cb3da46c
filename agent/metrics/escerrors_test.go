package metrics

import (
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/sim"
)

// simRead sends one datagram through seg and returns its answer, or nil
// when the frame was lost.
func simRead(t *testing.T, seg *sim.Segment, cmd wire.Command, adp, ado uint16, data []byte) *wire.Datagram {
	t.Helper()
	var b wire.Builder
	if err := b.Reset(make([]byte, wire.MaxFrameLen), [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, [6]byte{0x02}); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendData(cmd, 0, wire.PhysicalAddress(adp, ado), data); err != nil {
		t.Fatal(err)
	}
	frame := append([]byte(nil), b.Bytes()...)
	if !seg.Process(frame) {
		return nil
	}
	var f wire.Frame
	if err := f.Decode(frame); err != nil {
		t.Fatal(err)
	}
	var dg wire.Datagram
	it := f.Datagrams()
	if !it.Next(&dg) {
		t.Fatal("answer without a datagram")
	}
	return &dg
}

// TestNoisyCableShowsOnItsPort runs a simulated segment with a noisy cable
// into slave 1 (its port 0), reads each slave's error counters as the
// cycle would and feeds them to the registry: ecagent_slave_port_errors
// shows the invalid frames at slave 1 port 0 and only forwarded errors
// elsewhere.
func TestNoisyCableShowsOnItsPort(t *testing.T) {
	devs, err := sim.ParseDevices([]string{"EK1100", "EL2004", "EL1004"})
	if err != nil {
		t.Fatal(err)
	}
	var now int64
	seg := sim.NewSegment(devs, sim.WithClock(func() int64 { return now }))
	for i := range devs {
		if d := simRead(t, seg, wire.APWR, wire.PositionADP(i), 0x0010, []byte{byte(i + 1), 0x10}); d == nil || d.WKC != 1 {
			t.Fatalf("station address of slave %d", i)
		}
	}
	if err := seg.Faults().Noisy(1, 0, 100); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for range 100 { // 1 ms cycles for 100 ms: 10 noise events
		now += 1_000_000
		if simRead(t, seg, wire.BRD, 0, 0x0130, make([]byte, 2)) == nil {
			lost++
		}
	}
	if err := seg.Faults().Noisy(1, 0, 0); err != nil {
		t.Fatal(err)
	}
	r := newTestRegistry(t, testOptions())
	names := []string{"EK1100", "EL2004", "EL1004"}
	for i, name := range names {
		d := simRead(t, seg, wire.FPRD, 0x1001+uint16(i), 0x0300, make([]byte, ESCErrorCounterBytes))
		if d == nil || d.WKC != 1 {
			t.Fatalf("FPRD 0x0300 of slave %d failed", i)
		}
		c, err := DecodeESCErrorCounters(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		r.SetSlaveErrorCounters(i, name, c)
	}
	if lost != 10 {
		t.Fatalf("%d frames lost, want 10", lost)
	}
	mf := family(t, r, nameSlavePortErrors)
	for _, m := range mf.GetMetric() {
		key := labelValue(m, labelPosition) + "/" + labelValue(m, labelPort) + "/" + labelValue(m, labelCounter)
		want := 0.0
		switch key {
		case "1/0/invalid_frame", "1/0/rx_error", "2/0/forwarded_rx_error", "1/1/forwarded_rx_error", "0/1/forwarded_rx_error":
			want = float64(lost)
		}
		if got := m.GetGauge().GetValue(); got != want {
			t.Errorf("ecagent_slave_port_errors position/port/counter %s = %g, want %g", key, got, want)
		}
	}
	if _, err := DecodeESCErrorCounters(make([]byte, 0x10)); err == nil {
		t.Error("a 16-byte block decoded")
	}
}
