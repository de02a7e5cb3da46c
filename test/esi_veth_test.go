package test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// esiDevices are devices the simulator has no model of, named by their
// ESI files (written by hand for these tests), between built-in models.
func esiDevices(t *testing.T) string {
	t.Helper()
	ai, err := filepath.Abs("../testdata/esi/example-ea3102.xml")
	if err != nil {
		t.Fatal(err)
	}
	drive, err := filepath.Abs("../ethercat/esi/testdata/cia402-drive.xml")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join([]string{"EK1100", ai + ":EA3102", drive + ":ED402@#x00020000", "EL2004"}, ",")
}

// TestESIDevicesOverVeth: `ecagent sim` serves devices from their ESI
// files alone; `ecagent scan` finds them with the ESI's identity and lists
// their object dictionaries from the SDO information service, with the
// ESI's names, access rights and defaults; the master brings them to OP
// with the ESI's PDOs.
func TestESIDevicesOverVeth(t *testing.T) {
	w := newWire(t, "esi")
	startSim(t, w, esiDevices(t), "--inputs", "counter")
	out, err := exec.Command(ecagentBinary(t), "scan", "--iface", w.MasterEnd, "--expected-slaves", "4", "--sdo").CombinedOutput()
	if err != nil {
		t.Fatalf("ecagent scan --sdo: %v\n%s", err, out)
	}
	text := string(out)
	lines := strings.Split(text, "\n")
	if len(lines) < 6 || !strings.Contains(lines[2], "EA3102") || !strings.Contains(lines[2], "0x00eca901") || !strings.Contains(lines[2], "0x0c1e0ea1") ||
		!strings.Contains(lines[3], "ED402") || !strings.Contains(lines[3], "0x00eca6e7") {
		t.Errorf("scan rows do not show the ESI devices' identities:\n%s", strings.Join(lines[:min(6, len(lines))], "\n"))
	}
	// Each wanted line of the dictionary listing, by its columns.
	for _, want := range [][]string{
		{`0x8000 RECORD "AI Settings Ch.1", max sub 21`},
		{`0x1008:00`, `VISIBLE_STRING`, `"Device name"`, `= "EA3102"`},
		{`0x6000:11`, `INTEGER16`, `16 bit`, `r-r-r- TxPDO`, `"Value"`},
		{`0x8000:15`, `UNSIGNED16`, `rwr-r-`, `"Filter settings"`, `= 0x0002 (2)`},
		{`0x8000:06`, `BOOLEAN`, `rwrwrw`, `"Enable filter"`, `= 0x01 (1)`},
		{`VAR "Target velocity"`}, // the drive's dictionary
	} {
		if !esiHasLine(lines, want...) {
			t.Errorf("scan --sdo output has no line with %q", want)
		}
	}
	if t.Failed() {
		t.Logf("ecagent scan --sdo:\n%s", text)
	}

	m := masterOnWire(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.BringUp(ctx); err != nil {
		t.Fatalf("BringUp: %v", err)
	}
	slaves := m.Slaves()
	if len(slaves) != 4 {
		t.Fatalf("%d slaves", len(slaves))
	}
	if err := m.ReadStates(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range slaves {
		if st := s.Status(); st.State != esc.StateOp || st.Error {
			t.Errorf("%v: %+v code %v, want OP", s, st, s.StatusCode())
		}
	}
	if ai := slaves[1]; ai.InputBits != 64 || ai.OutputBits != 0 || len(ai.TxPDOs) != 2 || ai.TxPDOs[1].Index != 0x1A01 {
		t.Errorf("the analog input terminal: %d input bits, %d output bits, TxPDOs %+v; want the ESI's two TxPDOs of 32 bits", ai.InputBits, ai.OutputBits, ai.TxPDOs)
	}
	if d := slaves[2]; d.InputBits != 128 || d.OutputBits != 112 {
		t.Errorf("the drive: %d input bits, %d output bits; want the ESI's 128 and 112", d.InputBits, d.OutputBits)
	}
	// The terminal's channel 1 value (0x6000:11, 16 bits at bit 16 of its
	// inputs) follows the simulator's counter pattern through the PDOs.
	at := (slaves[1].Inputs.Offset + 16) / 8
	value := func() uint16 {
		in := m.Image().Inputs()
		return uint16(in[at]) | uint16(in[at+1])<<8
	}
	m.Exchange()
	first, changed := value(), false
	deadline := time.Now().Add(10 * time.Second)
	for !changed && time.Now().Before(deadline) {
		if r := m.Exchange(); r.Lost == 0 && r.WKC == r.ExpectedWKC {
			changed = value() != first
		}
	}
	if !changed {
		t.Errorf("the analog input's value stayed %#04x for 10 s of cycles: its PDO carries nothing", first)
	}
}

// esiHasLine reports whether one of lines holds every part.
func esiHasLine(lines []string, parts ...string) bool {
	for _, l := range lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
