package replay

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// Result is the outcome of a replay.
type Result struct {
	Datagrams  int // datagrams the real devices answered
	Same       int // of those, answered with the same WKC and data
	SameWKC    int // answered with the same WKC
	Unanswered int // in frames the simulator did not return
	Lost       int // requests without a recorded answer (not replayed)
	// Undefined counts the bytes, in datagrams answered with the real
	// working counter, whose value no model can know (a mailbox read
	// past the message, reserved registers; sim.Segment.UndefinedBytes):
	// they are not compared, and reported apart.
	Undefined int
	Strays    int // recorded answers to requests the capture does not hold
	Setup     *Setup
	// Groups are the mismatches by command and register, the largest
	// group first.
	Groups   []Group
	examples int
}

// Score returns the share of datagrams answered identically, in percent.
func (r *Result) Score() float64 { return percent(r.Same, r.Datagrams) }

// WKCScore returns the share answered with the real working counter, in
// percent.
func (r *Result) WKCScore() float64 { return percent(r.SameWKC, r.Datagrams) }

func percent(n, of int) float64 {
	if of == 0 {
		return 100
	}
	return 100 * float64(n) / float64(of)
}

// Group is the mismatches of one command on one register (the ADO of a
// physical command; logical commands form one group per command).
type Group struct {
	Command  wire.Command
	Register uint16 // ADO; 0 for logical commands
	Count    int    // datagrams that differ
	WKC      int    // of those, with a different working counter
	Examples []Mismatch
}

// Key names the group, e.g. "FPRD 0x0502" or "LRW".
func (g *Group) Key() string {
	if g.Command.Addressing() == wire.AddressingLogical {
		return g.Command.String()
	}
	return fmt.Sprintf("%v 0x%04X", g.Command, g.Register)
}

// Mismatch is one datagram the simulator answered differently.
type Mismatch struct {
	Exchange int    // index in Capture.Exchanges
	Time     int64  // capture time of the request, ns since the capture's start
	Datagram int    // position in the frame
	ADP      uint16 // as the master sent it
	Length   int
	// Offset is the first byte at which the data differ (0 when only the
	// working counter does, or the simulator did not answer).
	Offset  int
	RealWKC uint16
	SimWKC  uint16
	Real    []byte // data the real devices returned
	Sim     []byte // data the simulator returned; nil when it did not answer
}

// compare scores one exchange: want are the real answer's datagrams, got
// the simulator's (nil when it did not answer), undef the undefined bytes
// of each of want (nil, or nil for a datagram, when there are none).
func (r *Result) compare(n int, ex *Exchange, want, got []wire.Datagram, undef [][]bool) {
	sent := datagrams(ex.Request)
	for k := range want {
		w := &want[k]
		r.Datagrams++
		m := Mismatch{Exchange: n, Time: ex.Sent, Datagram: k, Length: len(w.Data), RealWKC: w.WKC,
			Real: w.Data}
		if k < len(sent) {
			m.ADP = sent[k].ADP()
		}
		if k >= len(got) {
			r.Unanswered++
			r.add(w, m, true)
			continue
		}
		g := &got[k]
		m.SimWKC, m.Sim = g.WKC, g.Data
		var u []bool
		if k < len(undef) {
			u = undef[k]
		}
		wkcOK := g.WKC == w.WKC
		if wkcOK {
			r.SameWKC++
			for _, x := range u {
				if x {
					r.Undefined++
				}
			}
		}
		if wkcOK && (IsTimeRegister(w) || firstDifference(w.Data, g.Data, u) < 0) {
			r.Same++
			continue
		}
		m.Offset = max(firstDifference(w.Data, g.Data, u), 0)
		r.add(w, m, !wkcOK)
	}
}

// firstDifference returns the first index at which a and b differ, not
// counting the bytes undef marks, or -1 when they do not.
func firstDifference(a, b []byte, undef []bool) int {
	for i := range max(len(a), len(b)) {
		if i < len(undef) && undef[i] {
			continue
		}
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func (r *Result) add(w *wire.Datagram, m Mismatch, wkc bool) {
	reg := w.ADO()
	if w.Command.Addressing() == wire.AddressingLogical {
		reg = 0
	}
	i := slices.IndexFunc(r.Groups, func(g Group) bool { return g.Command == w.Command && g.Register == reg })
	if i < 0 {
		r.Groups = append(r.Groups, Group{Command: w.Command, Register: reg})
		i = len(r.Groups) - 1
	}
	g := &r.Groups[i]
	g.Count++
	if wkc {
		g.WKC++
	}
	if len(g.Examples) < r.examples {
		m.Real = append([]byte(nil), m.Real...)
		if m.Sim != nil {
			m.Sim = append([]byte(nil), m.Sim...)
		}
		g.Examples = append(g.Examples, m)
	}
}

// sortGroups orders the groups by size, then command and register.
func (r *Result) sortGroups() {
	slices.SortFunc(r.Groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Command, b.Command), cmp.Compare(a.Register, b.Register))
	})
}
