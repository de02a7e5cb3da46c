package dc

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/testsupport/capture"
)

// captured is what ethercrab read from and wrote to one slave in the
// capture, keyed by station address.
type captured struct {
	features    uint16
	dl          esc.DLStatus
	portTimes   [esc.PortCount]uint32
	recvTime    uint64
	hasRecvTime bool
	offset      uint64
	hasOffset   bool
	delay       uint32
	hasDelay    bool
}

// readCapture collects, per station, the answers to the DC reads (WKC 1)
// and the data of the first FPWR of 0x0920 and 0x0928 (the master's
// values, whether or not the slave took them).
func readCapture(t *testing.T) (stations []uint16, bySt map[uint16]*captured) {
	t.Helper()
	le := binary.LittleEndian
	bySt = map[uint16]*captured{}
	get := func(st uint16) *captured {
		c, ok := bySt[st]
		if !ok {
			c = &captured{}
			bySt[st] = c
			stations = append(stations, st)
		}
		return c
	}
	for _, d := range capture.Datagrams(t, "ethercrab-dc") {
		st, ado := d.ADP(), d.ADO()
		switch {
		case d.Command == wire.FPRD && d.WKC == 1 && ado == uint16(esc.RegFeatures) && len(d.Data) >= 2:
			get(st).features = le.Uint16(d.Data)
		case d.Command == wire.FPRD && d.WKC == 1 && ado == uint16(esc.RegDLStatus) && len(d.Data) >= 2:
			get(st).dl = esc.DecodeDLStatus(d.Data)
		case d.Command == wire.FPRD && d.WKC == 1 && ado == uint16(esc.RegDCRecvTimePort0) && len(d.Data) == 16:
			c := get(st)
			for k := range c.portTimes {
				c.portTimes[k] = le.Uint32(d.Data[4*k:])
			}
		case d.Command == wire.FPRD && d.WKC == 1 && ado == uint16(esc.RegDCRecvTimeECAT) && len(d.Data) == 8:
			c := get(st)
			c.recvTime, c.hasRecvTime = le.Uint64(d.Data), true
		case d.Command == wire.FPWR && ado == uint16(esc.RegDCSystemOffset) && len(d.Data) == 8:
			if c := get(st); !c.hasOffset {
				c.offset, c.hasOffset = le.Uint64(d.Data), true
			}
		case d.Command == wire.FPWR && ado == uint16(esc.RegDCSystemDelay) && len(d.Data) == 4:
			if c := get(st); !c.hasDelay {
				c.delay, c.hasDelay = le.Uint32(d.Data), true
			}
		}
	}
	return stations, bySt
}

// TestCaptureEthercrab feeds the port receive times a real EK1100, EL2828
// and EL2889 latched to Compute and checks the delays and offsets against
// those ethercrab wrote in the same capture. They must be identical:
// ethercrab halves integer nanoseconds as Compute does (both round down),
// and writes offset = 0 − 0x0918, which is Compute with latch system time 0.
func TestCaptureEthercrab(t *testing.T) {
	stations, bySt := readCapture(t)
	if len(stations) != 3 {
		t.Fatalf("capture has DC data of %d stations (%#04x), want 3", len(stations), stations)
	}
	slaves := make([]Slave, len(stations))
	for i, st := range stations {
		c := bySt[st]
		// A line, as the DL status shows: every slave but the last has
		// ports 0 and 1 open.
		slaves[i] = Slave{
			DC:          c.features&esc.FeatureDC != 0,
			SystemTime:  c.hasRecvTime,
			Parent:      i - 1,
			Ports:       c.dl.OpenPorts(),
			PortTimes:   c.portTimes,
			ReceiveTime: c.recvTime,
		}
		if !c.hasDelay || !c.hasOffset {
			t.Fatalf("station %#04x: ethercrab's delay or offset write not found", st)
		}
	}
	if want := [esc.PortCount]bool{true, true, false, false}; slaves[0].Ports != want || slaves[1].Ports != want {
		t.Fatalf("open ports %v %v, want a line", slaves[0].Ports, slaves[1].Ports)
	}
	got, err := Compute(slaves, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range stations {
		c := bySt[st]
		t.Logf("station %#04x: ports %v times %d, 0x0918 %#x; delay %d ns (ethercrab %d), offset %#x (ethercrab %#x)",
			st, slaves[i].Ports, slaves[i].PortTimes, c.recvTime, got[i].Delay, c.delay, got[i].Offset, c.offset)
		if got[i].Delay != c.delay {
			t.Errorf("station %#04x: delay %d ns, ethercrab wrote %d", st, got[i].Delay, c.delay)
		}
		// The EL2828 (0x1001) has no system time unit: its 0x0918 read got
		// WKC 0, and so did ethercrab's writes of offset 0 and delay 145.
		// Compute gives it the delay (its port times are real) but no
		// offset.
		if got[i].Offset != c.offset {
			t.Errorf("station %#04x: offset %#x, ethercrab wrote %#x", st, got[i].Offset, c.offset)
		}
	}
	if slaves[1].SystemTime || !slaves[0].SystemTime || !slaves[2].SystemTime {
		t.Errorf("system time units %v %v %v, want the EL2828 without", slaves[0].SystemTime, slaves[1].SystemTime, slaves[2].SystemTime)
	}
	// The figures themselves, so that a wrong capture reader cannot pass.
	if got[1].Delay != 145 || got[2].Delay != 300 {
		t.Errorf("delays %d, %d ns, want 145, 300", got[1].Delay, got[2].Delay)
	}
}
