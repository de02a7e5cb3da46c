package cia402

import "testing"

func TestStatuswordState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sw   Statusword
		want State
	}{
		{0x0000, StateNotReadyToSwitchOn},
		{0x0010, StateNotReadyToSwitchOn}, // voltage enabled does not matter
		{0x0040, StateSwitchOnDisabled},
		{0x0250, StateSwitchOnDisabled}, // remote, voltage, quick stop bits ignored
		{0x0021, StateReadyToSwitchOn},
		{0x0231, StateReadyToSwitchOn},
		{0x0023, StateSwitchedOn},
		{0x0027, StateOperationEnabled},
		{0x1637, StateOperationEnabled}, // target reached, op-mode bits
		{0x0007, StateQuickStopActive},
		{0x000F, StateFaultReactionActive},
		{0x002F, StateFaultReactionActive},
		{0x0008, StateFault},
		{0x0228, StateFault},
		{0x0088, StateFault}, // warning bit
		{0x0001, StateUnknown},
		{0x0041, StateUnknown}, // switch on disabled with ready: undefined
	}
	for _, tt := range tests {
		if got := tt.sw.State(); got != tt.want {
			t.Errorf("Statusword(%#04x).State() = %v, want %v", uint16(tt.sw), got, tt.want)
		}
	}
}

func TestStateString(t *testing.T) {
	t.Parallel()
	want := map[State]string{
		StateUnknown:             "unknown",
		StateNotReadyToSwitchOn:  "not ready to switch on",
		StateSwitchOnDisabled:    "switch on disabled",
		StateReadyToSwitchOn:     "ready to switch on",
		StateSwitchedOn:          "switched on",
		StateOperationEnabled:    "operation enabled",
		StateQuickStopActive:     "quick stop active",
		StateFaultReactionActive: "fault reaction active",
		StateFault:               "fault",
		State(99):                "unknown",
	}
	for s, w := range want {
		if got := s.String(); got != w {
			t.Errorf("State(%d).String() = %q, want %q", s, got, w)
		}
	}
}

func TestMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"csp", ModeCSP, false},
		{"CSV", ModeCSV, false},
		{" cst ", ModeCST, false},
		{"pp", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	names := map[Mode]string{ModeCSP: "csp", ModeCSV: "csv", ModeCST: "cst", ModeProfilePosition: "pp",
		ModeHoming: "hm", ModeNone: "none", Mode(-3): "mode -3"}
	for m, w := range names {
		if m.String() != w {
			t.Errorf("Mode(%d).String() = %q, want %q", m, m.String(), w)
		}
		if back, err := ParseMode(w); m.Cyclic() && (err != nil || back != m) {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", w, back, err, m)
		}
	}
	if int8(ModeCSP) != 8 || int8(ModeCSV) != 9 || int8(ModeCST) != 10 {
		t.Error("cyclic mode numbers are wrong")
	}
}
