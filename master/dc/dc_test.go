package dc

import (
	"errors"
	"testing"
)

// node describes one slave of a synthetic segment: its parent, its open
// ports, the one-way cable delay from its parent and its local clock at
// segment time zero.
type node struct {
	parent    int
	ports     [4]bool
	dc        bool
	noSysTime bool  // latches port times but has no system time unit
	link      int64 // ns, parent to this slave (and back)
	localBase uint64
}

// latch plays the latching frame through the segment as an ESC forwards
// it (port 0 in, then ports 3, 1, 2 with each branch walked to its end)
// with instantaneous forwarding, and returns the slaves' latched times and
// each slave's true arrival time.
func latch(nodes []node) (slaves []Slave, arrival []int64) {
	slaves = make([]Slave, len(nodes))
	arrival = make([]int64, len(nodes))
	children := make([][]int, len(nodes))
	for i, n := range nodes {
		slaves[i] = Slave{DC: n.dc, SystemTime: n.dc && !n.noSysTime, Parent: n.parent, Ports: n.ports}
		if n.parent != NoParent {
			children[n.parent] = append(children[n.parent], i)
		}
	}
	// visit returns when the frame comes back out of slave i's port 0.
	var visit func(i int, t int64) int64
	visit = func(i int, t int64) int64 {
		arrival[i] = t
		n := nodes[i]
		local := func(t int64) uint64 { return n.localBase + uint64(t) }
		if n.dc {
			slaves[i].PortTimes[0] = uint32(local(t))
			slaves[i].ReceiveTime = local(t)
		}
		next := 0
		for _, k := range [...]int{3, 1, 2} { // ESC processing order, independent of the code under test
			if !n.ports[k] {
				continue
			}
			c := children[i][next]
			next++
			t = visit(c, t+nodes[c].link) + nodes[c].link
			if n.dc {
				slaves[i].PortTimes[k] = uint32(local(t))
			}
		}
		return t
	}
	t := int64(1000)
	for i, n := range nodes {
		if n.parent == NoParent {
			t = visit(i, t+n.link) + n.link
		}
	}
	return slaves, arrival
}

var (
	line    = [4]bool{true, true, false, false}
	end     = [4]bool{true, false, false, false}
	coupler = [4]bool{true, true, false, true} // EK1100 with a branch on port 3
)

func TestComputeDelays(t *testing.T) {
	tests := []struct {
		name  string
		nodes []node
	}{
		{"line", []node{
			{parent: NoParent, ports: line, dc: true, link: 500, localBase: 7_000_000_000},
			{parent: 0, ports: line, dc: true, link: 140, localBase: 3},
			{parent: 1, ports: line, dc: true, link: 150, localBase: 1 << 40},
			{parent: 2, ports: end, dc: true, link: 160, localBase: 12345},
		}},
		{"clocks wrap at 32 bits during the latch", []node{
			{parent: NoParent, ports: line, dc: true, localBase: 1<<32 - 300},
			{parent: 0, ports: end, dc: true, link: 200, localBase: 1<<33 - 250},
		}},
		{"branch on port 3 walked before port 1", []node{
			{parent: NoParent, ports: coupler, dc: true},
			{parent: 0, ports: line, dc: true, link: 1000, localBase: 99}, // port 3: a cable to a second coupler
			{parent: 1, ports: end, dc: true, link: 140},
			{parent: 0, ports: line, dc: true, link: 120, localBase: 5}, // port 1: the terminals
			{parent: 3, ports: end, dc: true, link: 130},
		}},
		{"three branches, ports 3, 1, 2", []node{
			{parent: NoParent, ports: [4]bool{true, true, true, true}, dc: true},
			{parent: 0, ports: end, dc: true, link: 300},
			{parent: 0, ports: line, dc: true, link: 400},
			{parent: 2, ports: end, dc: true, link: 100},
			{parent: 0, ports: end, dc: true, link: 700},
		}},
		{"slave without clock in a line", []node{
			{parent: NoParent, ports: line, dc: true},
			{parent: 0, ports: line, dc: false, link: 140},
			{parent: 1, ports: end, dc: true, link: 150},
		}},
		{"first clock has no system time: the next one is the reference", []node{
			{parent: NoParent, ports: line, dc: true, noSysTime: true, link: 300},
			{parent: 0, ports: line, dc: true, link: 140, localBase: 77},
			{parent: 1, ports: line, dc: true, noSysTime: true, link: 150, localBase: 1 << 35},
			{parent: 2, ports: end, dc: true, link: 160},
		}},
		{"reference is not the first slave", []node{
			{parent: NoParent, ports: line, dc: false, link: 300},
			{parent: 0, ports: line, dc: true, link: 140, localBase: 77},
			{parent: 1, ports: end, dc: true, link: 150},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slaves, arrival := latch(tt.nodes)
			ref := Reference(slaves)
			got, err := Compute(slaves, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range slaves {
				want := uint32(0)
				if slaves[i].DC && i > ref {
					want = uint32(arrival[i] - arrival[ref])
				}
				if got[i].Delay != want {
					t.Errorf("slave %d: delay %d ns, want %d", i, got[i].Delay, want)
				}
			}
		})
	}
}

// TestComputeOffsets checks that local time + offset gives every clock the
// same system time at its latch instant, shifted by its delay only.
func TestComputeOffsets(t *testing.T) {
	slaves, arrival := latch([]node{
		{parent: NoParent, ports: line, dc: false},
		{parent: 0, ports: line, dc: true, link: 100, localBase: 1 << 50},
		{parent: 1, ports: line, dc: true, link: 200, localBase: 42},
		{parent: 2, ports: end, dc: true, link: 300, localBase: 1<<64 - 10},
	})
	for _, latchTime := range []uint64{0, 800_000_000_000_000_000, slaves[1].ReceiveTime} {
		got, err := Compute(slaves, latchTime)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != (Result{}) {
			t.Errorf("slave without clock got %+v", got[0])
		}
		for i := 1; i < len(slaves); i++ {
			// System time at the slave's latch: its receive time plus
			// offset, which must be the latch time exactly.
			if sys := slaves[i].ReceiveTime + got[i].Offset; sys != latchTime {
				t.Errorf("latch time %d: slave %d system time %d at its latch", latchTime, i, sys)
			}
			if want := uint32(arrival[i] - arrival[1]); got[i].Delay != want {
				t.Errorf("slave %d: delay %d, want %d", i, got[i].Delay, want)
			}
		}
		if latchTime == slaves[1].ReceiveTime && got[1].Offset != 0 {
			t.Errorf("reference offset %d with its own time as latch time", got[1].Offset)
		}
	}
}

func TestComputeErrors(t *testing.T) {
	var topo *TopologyError
	tests := []struct {
		name   string
		slaves []Slave
		target any
	}{
		{"no clock", []Slave{{Parent: NoParent, Ports: line}, {Parent: 0, Ports: end}}, &ErrNoReference},
		{"clocks without system time", []Slave{{Parent: NoParent, Ports: line, DC: true}, {Parent: 0, Ports: end, DC: true}}, &ErrNoReference},
		{"junction without clock", []Slave{
			{Parent: NoParent, Ports: line, DC: true, SystemTime: true},
			{Parent: 0, Ports: coupler},
			{Parent: 1, Ports: end, DC: true, SystemTime: true},
			{Parent: 1, Ports: end, DC: true, SystemTime: true},
		}, &topo},
		{"more children than ports", []Slave{
			{Parent: NoParent, Ports: line, DC: true, SystemTime: true},
			{Parent: 0, Ports: end, DC: true, SystemTime: true},
			{Parent: 0, Ports: end, DC: true, SystemTime: true},
		}, &topo},
		{"parent after child", []Slave{
			{Parent: 1, Ports: line, DC: true, SystemTime: true},
			{Parent: NoParent, Ports: end, DC: true, SystemTime: true},
		}, &topo},
		{"clock beside the reference, not behind it", []Slave{
			{Parent: NoParent, Ports: coupler},
			{Parent: 0, Ports: end, DC: true, SystemTime: true},
			{Parent: 0, Ports: end, DC: true, SystemTime: true},
		}, &topo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compute(tt.slaves, 0)
			if err == nil {
				t.Fatal("no error")
			}
			switch target := tt.target.(type) {
			case *error:
				if !errors.Is(err, *target) {
					t.Errorf("error %v, want %v", err, *target)
				}
			case **TopologyError:
				if !errors.As(err, target) {
					t.Errorf("error %v (%T), want a *TopologyError", err, err)
				}
			}
		})
	}
}
