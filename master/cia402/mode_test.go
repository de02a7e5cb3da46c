package cia402

import "testing"

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
