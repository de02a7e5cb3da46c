package shm

import (
	"strings"
	"testing"
)

func TestSampleFlagsString(t *testing.T) {
	tests := []struct {
		f    SampleFlags
		want string
	}{
		{0, "0"},
		{SampleLostFrame, "lost-frame"},
		{SampleWKCMismatch | SampleOverrun, "wkc-mismatch|overrun"},
		{SampleSkipped | SampleDCValid, "skipped|dc-valid"},
		{SampleLostFrame | 0x8000, "lost-frame|0x8000"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("SampleFlags(%#x).String() = %q, want %q", uint16(tt.f), got, tt.want)
		}
	}
	f := SampleLostFrame | SampleOverrun
	if !f.Has(SampleOverrun) || f.Has(SampleOverrun|SampleSkipped) {
		t.Errorf("Has is wrong for %v", f)
	}
}

func TestKindStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{CommandInvalid.String(), "invalid"},
		{CommandSetOutputs.String(), "set-outputs"},
		{CommandRequestState.String(), "request-state"},
		{CommandAcknowledgeError.String(), "acknowledge-error"},
		{CommandResetDriveFault.String(), "reset-drive-fault"},
		{CommandKind(99).String(), "CommandKind(99)"},
		{EventInvalid.String(), "invalid"},
		{EventStateChange.String(), "state-change"},
		{EventALError.String(), "al-error"},
		{EventSlaveLost.String(), "slave-lost"},
		{EventSlaveFound.String(), "slave-found"},
		{EventCommandDone.String(), "command-done"},
		{EventCommandRejected.String(), "command-rejected"},
		{EventCycleStarted.String(), "cycle-started"},
		{EventNote.String(), "note"},
		{EventEmergency.String(), "emergency"},
		{EventDriveState.String(), "drive-state"},
		{EventDriveFault.String(), "drive-fault"},
		{EventDriveFaultCleared.String(), "drive-fault-cleared"},
		{EventBusAlarm.String(), "bus-alarm"},
		{EventBusAlarmCleared.String(), "bus-alarm-cleared"},
		{EventSlaveReconnected.String(), "slave-reconnected"},
		{EventSlaveRefused.String(), "slave-refused"},
		{EventALAcknowledged.String(), "al-acknowledged"},
		{EventRecoveryFailed.String(), "recovery-failed"},
		{EventLinkDown.String(), "link-down"},
		{EventLinkUp.String(), "link-up"},
		{EventSlaveState.String(), "slave-state"},
		{EventKind(77).String(), "EventKind(77)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

func TestEmergencyValueRoundTrip(t *testing.T) {
	tests := []struct {
		code uint16
		reg  uint8
		data [5]byte
	}{
		{0, 0, [5]byte{}},
		{0x8611, 0x81, [5]byte{1, 2, 3, 4, 5}},
		{0xFFFF, 0xFF, [5]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
	}
	for _, tt := range tests {
		e := Event{Kind: EventEmergency, Value: EmergencyValue(tt.code, tt.reg, tt.data)}
		code, reg, data := e.Emergency()
		if code != tt.code || reg != tt.reg || data != tt.data {
			t.Errorf("round trip of %#04x %#02x % x gave %#04x %#02x % x", tt.code, tt.reg, tt.data[:], code, reg, data[:])
		}
	}
}

func TestEventText(t *testing.T) {
	tests := []struct{ set, want string }{
		{"", ""},
		{"slave 3 left OP", "slave 3 left OP"},
		{strings.Repeat("x", EventTextSize), strings.Repeat("x", EventTextSize)},
		{strings.Repeat("y", EventTextSize+10), strings.Repeat("y", EventTextSize)},
	}
	var e Event
	e.SetText(strings.Repeat("z", EventTextSize)) // a longer text before must not show through
	for _, tt := range tests {
		e.SetText(tt.set)
		if got := e.TextString(); got != tt.want {
			t.Errorf("SetText(%q): TextString() = %q, want %q", tt.set, got, tt.want)
		}
	}
}
