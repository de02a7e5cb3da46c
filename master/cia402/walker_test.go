package cia402

import (
	"testing"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
)

// Statuswords of each state, as a drive reports them.
const (
	swNotReady      state.Statusword = 0x0000
	swDisabled      state.Statusword = 0x0250
	swReady         state.Statusword = 0x0231
	swSwitchedOn    state.Statusword = 0x0233
	swEnabled       state.Statusword = 0x0237
	swQuickStop     state.Statusword = 0x0217
	swFaultReaction state.Statusword = 0x021F
	swFault         state.Statusword = 0x0218
)

func TestWalkerSequences(t *testing.T) {
	t.Parallel()
	type in struct {
		sw    state.Statusword
		reset bool
	}
	type out struct {
		cw   state.Controlword
		live bool
		edge bool
	}
	tests := []struct {
		name   string
		walker Walker
		steps  []in
		want   []out
	}{
		{"power up to operation enabled", Walker{},
			[]in{{sw: swNotReady}, {sw: swDisabled}, {sw: swReady}, {sw: swSwitchedOn}, {sw: swEnabled}},
			[]out{{cw: 0x00}, {cw: 0x06}, {cw: 0x07}, {cw: 0x0F}, {cw: 0x0F, live: true}}},
		{"settle cycles hold the target", Walker{SettleCycles: 2},
			[]in{{sw: swSwitchedOn}, {sw: swEnabled}, {sw: swEnabled}, {sw: swEnabled}, {sw: swEnabled}},
			[]out{{cw: 0x0F}, {cw: 0x0F}, {cw: 0x0F}, {cw: 0x0F, live: true}, {cw: 0x0F, live: true}}},
		{"leaving operation enabled restarts the settle count", Walker{SettleCycles: 1},
			[]in{{sw: swEnabled}, {sw: swEnabled}, {sw: swSwitchedOn}, {sw: swEnabled}, {sw: swEnabled}},
			[]out{{cw: 0x0F}, {cw: 0x0F, live: true}, {cw: 0x0F}, {cw: 0x0F}, {cw: 0x0F, live: true}}},
		{"quick stop goes back through switch on disabled", Walker{},
			[]in{{sw: swEnabled}, {sw: swQuickStop}, {sw: swDisabled}},
			[]out{{cw: 0x0F, live: true}, {cw: 0x00}, {cw: 0x06}}},
		{"fault without a reset request stays at 0x00", Walker{},
			[]in{{sw: swEnabled}, {sw: swFaultReaction}, {sw: swFault}, {sw: swFault}, {sw: swFault}},
			[]out{{cw: 0x0F, live: true}, {cw: 0x00}, {cw: 0x00}, {cw: 0x00}, {cw: 0x00}}},
		{"reset edge comes after a 0x00 and is held for the pulse", Walker{PulseCycles: 3},
			[]in{{sw: swEnabled}, {sw: swFault, reset: true}, {sw: swFault, reset: true}, {sw: swFault, reset: true},
				{sw: swFault, reset: true}, {sw: swFault, reset: true}, {sw: swDisabled}, {sw: swReady}},
			[]out{{cw: 0x0F, live: true}, {cw: 0x00}, {cw: 0x80, edge: true}, {cw: 0x80}, {cw: 0x80},
				{cw: 0x00}, {cw: 0x06}, {cw: 0x07}}},
		{"a request made during fault reaction waits for fault", Walker{},
			[]in{{sw: swFaultReaction, reset: true}, {sw: swFault, reset: true}},
			[]out{{cw: 0x00}, {cw: 0x80, edge: true}}},
		{"reset leaves fault early", Walker{PulseCycles: 10},
			[]in{{sw: swFault}, {sw: swFault, reset: true}, {sw: swDisabled}, {sw: swReady}},
			[]out{{cw: 0x00}, {cw: 0x80, edge: true}, {cw: 0x06}, {cw: 0x07}}},
		{"a persisting fault is retried after the retry cycles", Walker{PulseCycles: 1, RetryCycles: 2},
			[]in{{sw: swFault, reset: true}, {sw: swFault, reset: true}, {sw: swFault, reset: true},
				{sw: swFault, reset: true}, {sw: swFault, reset: true}, {sw: swFault, reset: true}},
			[]out{{cw: 0x00}, {cw: 0x80, edge: true}, {cw: 0x00}, {cw: 0x00}, {cw: 0x80, edge: true}, {cw: 0x00}}},
		{"unknown statusword disables the voltage", Walker{},
			[]in{{sw: 0x0001}},
			[]out{{cw: 0x00}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := tt.walker
			for i, s := range tt.steps {
				got := w.Step(s.sw, s.reset)
				want := tt.want[i]
				if got.Controlword != want.cw || got.Live != want.live || got.ResetEdge != want.edge {
					t.Errorf("step %d (statusword %#04x, reset %v): cw %#02x live %v edge %v; want cw %#02x live %v edge %v",
						i, uint16(s.sw), s.reset, uint16(got.Controlword), got.Live, got.ResetEdge,
						uint16(want.cw), want.live, want.edge)
				}
				if got.State != s.sw.State() {
					t.Errorf("step %d: state %v, want %v", i, got.State, s.sw.State())
				}
			}
		})
	}
}

func TestWalkerReset(t *testing.T) {
	t.Parallel()
	var w Walker
	w.Step(swFault, true)
	w.Step(swFault, true) // edge: last word 0x80
	w.Reset()
	// After Reset the walker has no history: the first fault step is 0x00
	// again (no 0x00 is known to have been sent), not a continued pulse.
	if got := w.Step(swFault, true); got.Controlword != 0x00 || got.ResetEdge {
		t.Errorf("after Reset: cw %#x, want 0x00", uint16(got.Controlword))
	}
}

func BenchmarkWalkerStep(b *testing.B) {
	b.ReportAllocs()
	var w Walker
	for b.Loop() {
		w.Step(swEnabled, false)
	}
}
