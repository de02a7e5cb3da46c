package metrics

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
)

// TestDriveStateGaugeIsTheStateNumber checks that ecagent_drive_state
// exports the number of package state's State as it comes from
// shm.EventDriveState, and pins those numbers.
func TestDriveStateGaugeIsTheStateNumber(t *testing.T) {
	tests := []struct {
		s    state.State
		want float64
	}{
		{state.Unknown, 0},
		{state.NotReadyToSwitchOn, 1},
		{state.SwitchOnDisabled, 2},
		{state.ReadyToSwitchOn, 3},
		{state.SwitchedOn, 4},
		{state.OperationEnabled, 5},
		{state.QuickStopActive, 6},
		{state.FaultReactionActive, 7},
		{state.Fault, 8},
	}
	r := newTestRegistry(t, testOptions())
	for _, tt := range tests {
		r.SetDriveState(3, "AKD", int(tt.s), tt.s.String())
		if got := gaugeByLabel(t, family(t, r, nameDriveState), labelPosition, "3"); got != tt.want {
			t.Errorf("%v: %s = %v, want %v", tt.s, nameDriveState, got, tt.want)
		}
	}
}

// TestDriveStateHelpNamesEveryState checks the help text of
// ecagent_drive_state against package state's numbers and names.
func TestDriveStateHelpNamesEveryState(t *testing.T) {
	help := ""
	for _, s := range Documented() {
		if s.Name == nameDriveState {
			help = s.Help
		}
	}
	if help == "" {
		t.Fatalf("%s is not documented", nameDriveState)
	}
	for s := state.Unknown; s <= state.Fault; s++ {
		if want := strconv.Itoa(int(s)) + " " + s.String(); !strings.Contains(help, want) {
			t.Errorf("help of %s lacks %q", nameDriveState, want)
		}
	}
}
