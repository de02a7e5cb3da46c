package coe

import "testing"

// TestEmergencyMeaning checks exact codes, narrow and wide classes, and
// codes outside every class, and the table itself.
func TestEmergencyMeaning(t *testing.T) {
	tests := []struct {
		code uint16
		want string
	}{
		{0x0000, "error reset or no error"},
		{0x0010, "error reset or no error"},
		{0x1000, "generic error"},
		{0x2310, "continuous over current (device output side)"},
		{0x2311, "current, device output side"},
		{0x2100, "current, device input side"},
		{0x2400, "current"},
		{0x3220, "DC link under-voltage"},
		{0x3110, "mains voltage"},
		{0x4310, "temperature"},
		{0x5001, "device hardware"},
		{0x6320, "parameter error"},
		{0x6100, "internal software"},
		{0x7305, "incremental sensor 1 fault"},
		{0x7001, "additional modules"},
		{0x8110, "CAN overrun (objects lost)"},
		{0x8181, "communication"},
		{0x8250, "protocol error"},
		{0x8611, "following error"},
		{0x8620, "monitoring"},
		{0x8700, "sync controller error"},
		{0x9000, "external error"},
		{0xA000, "transition from PREOP to SAFEOP failed"},
		{0xA001, "transition from SAFEOP to OP failed"},
		{0xA002, "unknown class 0xA0"},
		{0xF001, "additional functions"},
		{0xFF01, "device specific"},
		{0xB123, "unknown class 0xB1"},
	}
	for _, tt := range tests {
		if got := EmergencyMeaning(tt.code); got != tt.want {
			t.Errorf("EmergencyMeaning(%#04x) = %q, want %q", tt.code, got, tt.want)
		}
	}
	checkMeanings(t, emergencyMeanings[:])
}

// TestAbortMeaning checks codes of the table and one outside it, and the
// table itself.
func TestAbortMeaning(t *testing.T) {
	for _, tt := range []struct {
		code AbortCode
		want string
	}{
		{AbortToggle, "toggle bit not changed"},
		{AbortNoObject, "object does not exist in the object dictionary"},
		{AbortNoData, "no data available"},
		{0x06020001, ""},
		{0, ""},
	} {
		if got := tt.code.Meaning(); got != tt.want {
			t.Errorf("%#08x.Meaning() = %q, want %q", uint32(tt.code), got, tt.want)
		}
	}
	checkMeanings(t, abortMeanings[:])
	if len(abortMeanings) != 35 {
		t.Errorf("%d abort codes have a meaning, want the 35 of ETG.1000.6", len(abortMeanings))
	}
}

// checkMeanings fails for a row that a row before it hides (every code it
// matches matches the earlier row too) and for an empty text.
func checkMeanings[C ~uint16 | ~uint32](t *testing.T, table []codeMeaning[C]) {
	t.Helper()
	full := func(m C) C {
		if m == 0 {
			return ^m
		}
		return m
	}
	for i, r := range table {
		if r.text == "" {
			t.Errorf("row %d (%#x) has no text", i, r.code)
		}
		if r.code&^full(r.mask) != 0 {
			t.Errorf("row %d: code %#x has bits outside its mask %#x: it matches nothing", i, r.code, full(r.mask))
		}
		for _, before := range table[:i] {
			// before hides r when its mask is within r's and r's code
			// agrees with it under before's mask.
			if full(before.mask)&^full(r.mask) == 0 && r.code&full(before.mask) == before.code {
				t.Errorf("row %d (%#x, %q) is hidden by the earlier %#x (%q)", i, r.code, r.text, before.code, before.text)
			}
		}
	}
}
