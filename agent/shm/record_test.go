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
		{EventKind(77).String(), "EventKind(77)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
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
