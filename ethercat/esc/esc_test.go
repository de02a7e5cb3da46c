package esc

import (
	"bytes"
	"strings"
	"testing"
)

func TestALControlStatusRoundTrip(t *testing.T) {
	for _, c := range []ALControl{{State: StateInit}, {State: StateOp, Acknowledge: true}, {State: StateSafeOp, RequestID: true}} {
		b := make([]byte, ALControlLen)
		c.Encode(b)
		if got := DecodeALControl(b); got != c {
			t.Errorf("AL control %+v → % x → %+v", c, b, got)
		}
	}
	// 0x0014 on the wire: SAFEOP request with acknowledge... state 4, bit 4.
	if s := DecodeALStatus([]byte{0x14, 0x00}); s.State != StateSafeOp || !s.Error || s.String() != "SAFEOP+ERR" {
		t.Errorf("0x0014 decodes to %+v (%v)", s, s)
	}
	for _, s := range []ALStatus{{State: StatePreOp}, {State: StateOp, Error: true}, {State: StateInit, IDLoaded: true}} {
		b := make([]byte, ALStatusLen)
		s.Encode(b)
		if got := DecodeALStatus(b); got != s {
			t.Errorf("AL status %+v → % x → %+v", s, b, got)
		}
	}
}

func TestALStateNames(t *testing.T) {
	for _, s := range []ALState{StateInit, StatePreOp, StateBootstrap, StateSafeOp, StateOp} {
		got, ok := ParseALState(s.String())
		if !ok || got != s || !s.Valid() {
			t.Errorf("%v does not round-trip through its name", s)
		}
	}
	if StateNone.Valid() || ALState(5).Valid() || ALState(9).Valid() {
		t.Error("invalid states")
	}
	// What a BRD of the AL status reads when slaves are in different
	// states: the OR of theirs.
	for v, want := range map[ALState]string{5: "INIT+SAFEOP", 9: "INIT+OP", 10: "PREOP+OP", 14: "PREOP+SAFEOP+OP",
		15: "INIT+PREOP+SAFEOP+OP", 0x10: "ALState(16)", 0x18: "ALState(24)"} {
		if got := v.String(); got != want {
			t.Errorf("ALState(%d) = %q, want %q", v, got, want)
		}
	}
	if _, ok := ParseALState("RUN"); ok {
		t.Error("RUN parsed as a state")
	}
}

func TestALStatusCodeString(t *testing.T) {
	for code, want := range map[ALStatusCode]string{
		ALSyncManagerWatchdog:  "0x001b (sync manager watchdog)",
		ALInvalidMailboxConfig: "0x0016 (invalid mailbox configuration)",
		0x8001:                 "0x8001 (vendor specific)",
		0x00EE:                 "0x00ee (reserved)",
	} {
		if got := code.String(); got != want {
			t.Errorf("%04x: %q, want %q", uint16(code), got, want)
		}
	}
}

func TestDLStatus(t *testing.T) {
	// An EK1100 with ports 0 and 1 linked and communicating, 2 and 3 closed.
	s := DLStatus{PDIOperational: true, WatchdogOK: true, Ports: [4]PortStatus{
		{Link: true, Communication: true},
		{Link: true, Communication: true},
		{Loop: true},
		{Loop: true},
	}}
	b := make([]byte, DLStatusLen)
	s.Encode(b)
	if !bytes.Equal(b, []byte{0x33, 0x5a}) {
		t.Errorf("encoded % x, want 33 5a", b)
	}
	if got := DecodeDLStatus(b); got != s {
		t.Errorf("round trip %+v", got)
	}
	if open := s.OpenPorts(); open != [4]bool{true, true, false, false} {
		t.Errorf("open ports %v", open)
	}
}

func TestFMMU(t *testing.T) {
	// The FMMU SOEM configured for an EL2004: 4 output bits at logical 0.0 → 0x0F00.0.
	f := ForBits(0, 4, 0x0F00, 0, FMMUWrite)
	want := FMMU{LogicalStart: 0, Length: 1, LogicalStartBit: 0, LogicalEndBit: 3, PhysicalStart: 0x0F00, Type: FMMUWrite, Active: true}
	if f != want || f.Bits() != 4 {
		t.Errorf("ForBits = %+v (%d bits)", f, f.Bits())
	}
	// A 4-bit window that starts at bit 6 crosses a byte boundary.
	g := ForBits(6, 4, 0x1000, 0, FMMURead)
	if g.LogicalStart != 0 || g.Length != 2 || g.LogicalStartBit != 6 || g.LogicalEndBit != 1 || g.Bits() != 4 {
		t.Errorf("crossing FMMU %+v (%d bits)", g, g.Bits())
	}
	b := bytes.Repeat([]byte{0xee}, FMMULen)
	g.Encode(b)
	if got := DecodeFMMU(b); got != g || !bytes.Equal(b[13:], []byte{0, 0, 0}) {
		t.Errorf("round trip %+v, reserved % x", got, b[13:])
	}
}

func TestSyncManager(t *testing.T) {
	s := SyncManager{PhysicalStart: 0x1000, Length: 128, Control: SMModeMailbox | SMDirWrite | SMIRQPDI, Activate: SMActivateOn}
	b := make([]byte, SyncManagerLen)
	s.Encode(b)
	if got := DecodeSyncManager(b); got != s || !got.Mailbox() || !got.Writes() || !got.Enabled() {
		t.Errorf("round trip %+v", got)
	}
}

func TestInfo(t *testing.T) {
	i := Info{Type: 0x11, Revision: 0, Build: 2, FMMUs: 8, SyncManagers: 8, RAMSizeKiB: 8, PortDescriptor: 0x0F, Features: FeatureDC | FeatureDC64}
	b := make([]byte, InfoLen)
	i.Encode(b)
	if got := DecodeInfo(b); got != i || !got.HasDC() || got.Port(0) != 3 || got.Port(1) != 3 || got.Port(2) != 0 {
		t.Errorf("round trip %+v", got)
	}
}

func TestSIIControl(t *testing.T) {
	c := DecodeSIIControl([]byte{0x40, 0x81})
	if !c.Busy() || c.ReadSize() != 8 || c.Failed() {
		t.Errorf("%#04x: busy %v size %d failed %v", uint16(c), c.Busy(), c.ReadSize(), c.Failed())
	}
	if !SIIControl(SIICommandError).Failed() {
		t.Error("NACK not failed")
	}
}

func TestRegisterString(t *testing.T) {
	for r, want := range map[Register]string{
		RegALStatusCode:       "ALStatusCode",
		RegFMMU(2):            "FMMU2",
		RegSyncManager(3) + 2: "SyncManager3+2",
		RegProcessRAM:         "ProcessRAM",
		Register(0x0F80):      "Register(0x0f80)",
	} {
		if got := r.String(); got != want {
			t.Errorf("%#04x: %q, want %q", uint16(r), got, want)
		}
	}
	if !strings.HasPrefix(RegSyncManager(1).String(), "SyncManager1") || RegSyncManager(1) != 0x0808 || RegFMMU(1) != 0x0610 {
		t.Error("block helpers")
	}
}
