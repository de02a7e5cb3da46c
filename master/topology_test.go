package master

import (
	"slices"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
)

func TestAssignParents(t *testing.T) {
	// ports builds an open-port set: p0 is the port towards the master.
	ports := func(open ...int) [esc.PortCount]bool {
		var p [esc.PortCount]bool
		for _, i := range open {
			p[i] = true
		}
		return p
	}
	cases := []struct {
		name  string
		ports [][esc.PortCount]bool
		want  []int
	}{
		{"line: EK1100, terminals, EK1110 at the end",
			[][esc.PortCount]bool{ports(0, 3), ports(0, 1), ports(0, 1), ports(0)},
			[]int{NoParent, 0, 1, 2}},
		{"coupler with terminals and a second RJ45 branch",
			// EK1100 (ports 0, 3 to E-bus terminals, 1 to another coupler);
			// the frame walks the E-bus branch first, then port 1.
			[][esc.PortCount]bool{ports(0, 1, 3), ports(0, 1), ports(0), ports(0, 3), ports(0)},
			[]int{NoParent, 0, 1, 0, 3}},
		{"junction with three branches",
			[][esc.PortCount]bool{ports(0, 1, 2, 3), ports(0), ports(0, 1), ports(0), ports(0)},
			[]int{NoParent, 0, 0, 2, 0}},
		{"inconsistent DL status falls back to the previous slave",
			[][esc.PortCount]bool{ports(0), ports(), ports(0)},
			[]int{NoParent, 0, 1}},
		{"single slave", [][esc.PortCount]bool{ports(0)}, []int{NoParent}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var slaves []*Slave
			for i, p := range c.ports {
				slaves = append(slaves, &Slave{Position: i, Ports: p})
			}
			assignParents(slaves)
			var got []int
			for _, s := range slaves {
				got = append(got, s.Parent)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("parents %v, want %v", got, c.want)
			}
		})
	}
}

func TestNextState(t *testing.T) {
	const (
		I = esc.StateInit
		P = esc.StatePreOp
		S = esc.StateSafeOp
		O = esc.StateOp
		B = esc.StateBootstrap
	)
	cases := []struct{ cur, target, want esc.ALState }{
		{I, O, P}, {P, O, S}, {S, O, O}, {O, O, O},
		{I, S, P}, {P, S, S},
		{O, I, I}, {O, P, P}, {S, P, P}, {O, S, S},
		{O, B, I}, {I, B, B}, {B, O, I}, {B, I, I},
		{esc.StateNone, P, I},
	}
	for _, c := range cases {
		if got := nextState(c.cur, c.target); got != c.want {
			t.Errorf("nextState(%v, %v) = %v, want %v", c.cur, c.target, got, c.want)
		}
	}
}
