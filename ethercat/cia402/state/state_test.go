package state

import "testing"

// coding is the standard's state coding, written out independently of
// the decoder: the mask of the bits that matter and their value.
var coding = []struct {
	state       State
	mask, value Statusword
}{
	{NotReadyToSwitchOn, 0x004F, 0x0000},
	{SwitchOnDisabled, 0x004F, 0x0040},
	{ReadyToSwitchOn, 0x006F, 0x0021},
	{SwitchedOn, 0x006F, 0x0023},
	{OperationEnabled, 0x006F, 0x0027},
	{QuickStopActive, 0x006F, 0x0007},
	{FaultReactionActive, 0x004F, 0x000F},
	{Fault, 0x004F, 0x0008},
}

// TestStatuswordStateDontCareBits decodes every state's pattern with its
// don't-care bits all cleared, all set, and set one at a time.
func TestStatuswordStateDontCareBits(t *testing.T) {
	t.Parallel()
	for _, c := range coding {
		dontCare := ^c.mask
		words := []Statusword{c.value, c.value | dontCare}
		for bit := Statusword(1); bit != 0; bit <<= 1 {
			if bit&dontCare != 0 {
				words = append(words, c.value|bit, (c.value|dontCare)&^bit)
			}
		}
		for _, sw := range words {
			if got := sw.State(); got != c.state {
				t.Errorf("Statusword(%#04x).State() = %v, want %v", uint16(sw), got, c.state)
			}
		}
	}
}

// TestStatuswordStateEveryPattern tries all 128 settings of the coding
// bits 0-3, 5 and 6: each decodes to the state whose coding it matches,
// or to Unknown when it matches none.
func TestStatuswordStateEveryPattern(t *testing.T) {
	t.Parallel()
	const codingBits = 0x006F
	defined := 0
	for sw := Statusword(0); sw <= codingBits; sw++ {
		if sw&^codingBits != 0 {
			continue
		}
		want := Unknown
		for _, c := range coding {
			if sw&c.mask == c.value {
				if want != Unknown {
					t.Fatalf("%#04x matches both %v and %v: the coding table is wrong", uint16(sw), want, c.state)
				}
				want = c.state
			}
		}
		if want != Unknown {
			defined++
		}
		for _, w := range []Statusword{sw, sw | 0xFF90} { // and with every other bit set
			if got := w.State(); got != want {
				t.Errorf("Statusword(%#04x).State() = %v, want %v", uint16(w), got, want)
			}
		}
	}
	// 4 states under 0x4F (2 values of bit 5 each) and 4 under 0x6F.
	if defined != 12 {
		t.Errorf("%d of the 128 patterns are defined, want 12", defined)
	}
}

// TestStatuswordStateRealWords decodes words as drives send them.
func TestStatuswordStateRealWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sw   Statusword
		want State
	}{
		{0x0000, NotReadyToSwitchOn},
		{0x0010, NotReadyToSwitchOn}, // voltage enabled does not matter
		{0x0040, SwitchOnDisabled},
		{0x0250, SwitchOnDisabled}, // remote, voltage, quick stop bits ignored
		{0x0021, ReadyToSwitchOn},
		{0x0231, ReadyToSwitchOn},
		{0x0023, SwitchedOn},
		{0x0233, SwitchedOn},
		{0x0027, OperationEnabled},
		{0x1637, OperationEnabled}, // target reached, op-mode bits
		{0x0007, QuickStopActive},
		{0x0217, QuickStopActive},
		{0x000F, FaultReactionActive},
		{0x002F, FaultReactionActive},
		{0x021F, FaultReactionActive},
		{0x0008, Fault},
		{0x0228, Fault},
		{0x0088, Fault}, // warning bit
		{0x0001, Unknown},
		{0x0041, Unknown}, // switch on disabled with ready: undefined
	}
	for _, tt := range tests {
		if got := tt.sw.State(); got != tt.want {
			t.Errorf("Statusword(%#04x).State() = %v, want %v", uint16(tt.sw), got, tt.want)
		}
	}
}

// TestStateStatuswordRoundTrip encodes every state and decodes it back;
// the encoding sets no bit outside the state's mask.
func TestStateStatuswordRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range coding {
		sw := c.state.Statusword()
		if sw != c.value {
			t.Errorf("%v.Statusword() = %#04x, want %#04x", c.state, uint16(sw), uint16(c.value))
		}
		if got := sw.State(); got != c.state {
			t.Errorf("%v.Statusword().State() = %v", c.state, got)
		}
	}
	if got := Unknown.Statusword().State(); got != Unknown {
		t.Errorf("Unknown.Statusword().State() = %v, want unknown", got)
	}
}

// TestStateNumbersAndNames pins the exported encoding: the numbers are
// the values of ecagent_drive_state and shm.EventDriveState, the names
// its documentation and the MQTT events' state.
func TestStateNumbersAndNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s       State
		number  uint64
		name    string
		faulted bool
	}{
		{Unknown, 0, "unknown", false},
		{NotReadyToSwitchOn, 1, "not ready to switch on", false},
		{SwitchOnDisabled, 2, "switch on disabled", false},
		{ReadyToSwitchOn, 3, "ready to switch on", false},
		{SwitchedOn, 4, "switched on", false},
		{OperationEnabled, 5, "operation enabled", false},
		{QuickStopActive, 6, "quick stop active", false},
		{FaultReactionActive, 7, "fault reaction active", true},
		{Fault, 8, "fault", true},
	}
	for _, tt := range tests {
		if uint64(tt.s) != tt.number {
			t.Errorf("%v is number %d, want %d", tt.s, uint64(tt.s), tt.number)
		}
		if got := tt.s.String(); got != tt.name {
			t.Errorf("State(%d).String() = %q, want %q", tt.number, got, tt.name)
		}
		if got := tt.s.Faulted(); got != tt.faulted {
			t.Errorf("%v.Faulted() = %v, want %v", tt.s, got, tt.faulted)
		}
		if got, ok := FromNumber(tt.number); got != tt.s || !ok {
			t.Errorf("FromNumber(%d) = %v, %v; want %v, true", tt.number, got, ok, tt.s)
		}
	}
	for _, n := range []uint64{9, 99, 256, 1 << 40} {
		if got, ok := FromNumber(n); got != Unknown || ok {
			t.Errorf("FromNumber(%d) = %v, %v; want unknown, false", n, got, ok)
		}
	}
	if got := State(99).String(); got != "unknown" {
		t.Errorf("State(99).String() = %q, want unknown", got)
	}
}

// TestCommands pins the controlword commands to the standard's words.
func TestCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmd  Controlword
		want uint16
	}{
		{"disable voltage", CmdDisableVoltage, 0x00},
		{"quick stop", CmdQuickStop, 0x02},
		{"shutdown", CmdShutdown, 0x06},
		{"switch on", CmdSwitchOn, 0x07},
		{"disable operation", CmdDisableOperation, 0x07},
		{"enable operation", CmdEnableOperation, 0x0F},
		{"fault reset", CmdFaultReset, 0x80},
	}
	for _, tt := range tests {
		if uint16(tt.cmd) != tt.want {
			t.Errorf("%s = %#04x, want %#04x", tt.name, uint16(tt.cmd), tt.want)
		}
	}
}
