// Package dc computes the distributed-clock settings the master writes
// when it initialises the clocks of a segment: each slave's propagation
// delay from the reference clock (register 0x0928) and its system time
// offset (0x0920), from the receive times the slaves latched for one frame
// (0x0900–0x090C, 0x0918) and the topology the master recorded.
//
// The computation is pure: the caller reads the registers and writes the
// results (see Master.ConfigureDC).
package dc

import (
	"errors"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// NoParent is the Slave.Parent of a slave connected to the master itself.
const NoParent = -1

// portOrder is the order in which an ESC hands a frame to its ports: it
// enters on port 0, passes the processing unit, then leaves and comes back
// through ports 3, 1 and 2 in turn (closed ports are skipped), and finally
// leaves through port 0 again.
var portOrder = [esc.PortCount]int{0, 3, 1, 2}

// Slave is what the computation needs to know of one slave, in ring order.
type Slave struct {
	// DC tells that the slave has a distributed clock (ESC feature bit):
	// it latches the port receive times below when register 0x0900 is
	// written.
	DC bool
	// SystemTime tells that the clock has its system time unit
	// (0x0910–0x0935: a 0x0918 read answers): only such a slave can be the
	// reference and takes an offset and a delay. Small ESCs (ET1200
	// terminals whose SII leaves the SYNC and LATCH units off, such as
	// the EL2828 of the real capture) latch port times without one.
	SystemTime bool
	// Parent is the index of the slave this one hangs off, or NoParent.
	// Children of one parent come in ring order and occupy its open
	// downstream ports in processing order (3, 1, 2).
	Parent int
	// Ports tells which ports are open (DL status 0x0110).
	Ports [esc.PortCount]bool
	// PortTimes are the latched receive times of ports 0–3 (0x0900–0x090C):
	// the local time, in ns wrapping at 32 bits, at which the latching
	// frame arrived on port 0 or came back on ports 1–3. Values of closed
	// ports are ignored.
	PortTimes [esc.PortCount]uint32
	// ReceiveTime is the 64-bit local time at which the latching frame
	// passed the processing unit (0x0918).
	ReceiveTime uint64
}

// Result is the setting computed for one slave.
type Result struct {
	// Delay is the propagation delay from the reference clock in ns, for
	// 0x0928; zero for the reference, for slaves without DC and for those
	// before the reference.
	Delay uint32
	// Offset is the system time offset for 0x0920: the latch system time
	// minus the slave's ReceiveTime, wrapping at 64 bits; zero for slaves
	// without a system time.
	Offset uint64
}

// ErrNoReference is returned when no slave has a distributed clock with a
// system time.
var ErrNoReference = errors.New("dc: no slave with a distributed clock and system time")

// TopologyError reports a slave whose delay cannot be measured: its path
// from the reference clock is not a chain of known ports.
type TopologyError struct {
	Slave  int    // index of the slave
	Reason string // what is wrong
}

// Error names the slave and the problem.
func (e *TopologyError) Error() string {
	return fmt.Sprintf("dc: slave %d: %s", e.Slave, e.Reason)
}

// Reference returns the index of the reference clock, the first slave with
// a distributed clock and a system time, or -1 when there is none.
func Reference(slaves []Slave) int {
	for i, s := range slaves {
		if s.DC && s.SystemTime {
			return i
		}
	}
	return -1
}

// Compute returns each slave's delay and offset, indexed like slaves.
//
// The delay of a slave is accumulated along its path from the reference:
// from its nearest ancestor with a clock, it is the ancestor's delay, plus
// the time the frame spent in the ancestor's earlier branches before it
// entered this slave's branch, plus the one-way link delay — half the
// branch's round trip as the ancestor measured it (return on the branch
// port minus the return on the port before it in processing order) less
// the time the frame spent inside the slave's own subtree (its last open
// port's time minus its port 0 time). Non-DC slaves on the way are assumed
// to have no other branch; when one has, the slaves behind get a
// *TopologyError. The processing delay inside an ESC (some ten ns) is not
// measured and is ignored, as other masters do.
//
// The offset makes the slave's system time (local time + offset) equal to
// latchSystemTime at the instant it latched: latchSystemTime − ReceiveTime.
// Pass the reference's ReceiveTime to keep the reference's local time as
// system time, or the master's clock (ns since the EtherCAT epoch,
// 2000-01-01) to start at the master's time. The propagation delay is not
// added: the static drift compensation that follows removes the remaining
// difference of at most the delay, as with SOEM and ethercrab.
func Compute(slaves []Slave, latchSystemTime uint64) ([]Result, error) {
	ref := Reference(slaves)
	if ref < 0 {
		return nil, ErrNoReference
	}
	out := make([]Result, len(slaves))
	branch, err := branchPorts(slaves)
	if err != nil {
		return nil, err
	}
	for i := ref + 1; i < len(slaves); i++ {
		if !slaves[i].DC {
			continue
		}
		d, err := delay(slaves, branch, out, ref, i)
		if err != nil {
			return nil, err
		}
		out[i].Delay = d
	}
	for i, s := range slaves {
		if s.DC && s.SystemTime {
			out[i].Offset = latchSystemTime - s.ReceiveTime
		}
	}
	return out, nil
}

// branchPorts returns, for every slave, the port of its parent it hangs
// off (-1 for slaves connected to the master): the parent's open
// downstream ports taken in processing order by its children in ring order.
func branchPorts(slaves []Slave) ([]int, error) {
	port := make([]int, len(slaves))
	used := make([]int, len(slaves)) // children seen per parent
	for i, s := range slaves {
		port[i] = -1
		if s.Parent == NoParent {
			continue
		}
		if s.Parent < 0 || s.Parent >= i {
			return nil, &TopologyError{Slave: i, Reason: fmt.Sprintf("parent %d does not precede it", s.Parent)}
		}
		p := &slaves[s.Parent]
		n := used[s.Parent]
		used[s.Parent]++
		for _, k := range portOrder[1:] {
			if !p.Ports[k] {
				continue
			}
			if n == 0 {
				port[i] = k
				break
			}
			n--
		}
		if port[i] < 0 {
			return nil, &TopologyError{Slave: i, Reason: fmt.Sprintf("parent %d has no open port left for it", s.Parent)}
		}
	}
	return port, nil
}

// previousOpenPort returns the open port of s that the frame leaves just
// before it enters port k, in processing order: port 0 for the first
// downstream port.
func previousOpenPort(s *Slave, k int) int {
	prev := 0
	for _, p := range portOrder[1:] {
		if p == k {
			return prev
		}
		if s.Ports[p] {
			prev = p
		}
	}
	return prev
}

// subtreeTime is the time the frame spends in s and behind it: from its
// arrival on port 0 to its return on the last open port.
func subtreeTime(s *Slave) uint32 {
	last := 0
	for _, p := range portOrder[1:] {
		if s.Ports[p] {
			last = p
		}
	}
	return s.PortTimes[last] - s.PortTimes[0]
}

// delay computes the delay of DC slave i from its nearest DC ancestor,
// whose delay is already in out (ancestors precede their descendants).
func delay(slaves []Slave, branch []int, out []Result, ref, i int) (uint32, error) {
	child := i
	for {
		p := slaves[child].Parent
		if p == NoParent {
			return 0, &TopologyError{Slave: i, Reason: "not behind the reference clock"}
		}
		if slaves[p].DC {
			break
		}
		if downstreamPorts(&slaves[p]) > 1 {
			return 0, &TopologyError{Slave: i, Reason: fmt.Sprintf("behind slave %d, a junction without distributed clock", p)}
		}
		child = p
	}
	anc := slaves[child].Parent
	if anc < ref {
		return 0, &TopologyError{Slave: i, Reason: "not behind the reference clock"}
	}
	a := &slaves[anc]
	k := branch[child]
	prev := previousOpenPort(a, k)
	roundTrip := a.PortTimes[k] - a.PortTimes[prev]
	inside := subtreeTime(&slaves[i])
	before := a.PortTimes[prev] - a.PortTimes[0]
	var link uint32
	if roundTrip > inside {
		link = (roundTrip - inside) / 2
	}
	return out[anc].Delay + before + link, nil
}

// downstreamPorts counts the open ports of s other than port 0.
func downstreamPorts(s *Slave) int {
	n := 0
	for _, p := range portOrder[1:] {
		if s.Ports[p] {
			n++
		}
	}
	return n
}
