package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPdosWithESI: `ecagent pdos --esi DIR` names each PDO entry its
// device's ESI describes, with type and unit, in text and JSON; a broken
// ESI file is reported and the others still name their devices.
func TestPdosWithESI(t *testing.T) {
	const esiDir = "../../testdata/esi"
	noAgent := filepath.Join(t.TempDir(), "none.shm")
	devices := "EK1100," + filepath.Join(esiDir, "example-ea3102.xml") + ",EL2004"
	code, out, errOut := runCLI(t, context.Background(), nil, "pdos", "--sim", "--devices", devices, "--esi", esiDir, "--cycle.shm", noAgent)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`0x6000:11  16 bit  image 3.0  "Value" (INT, mV)`,
		`0x6010:03   2 bit  image 5.2  "Status__Limit 1" (BIT2)`,
		"    0x7000:01   1 bit  image 0.0\n", // the EL2004: no ESI here describes it
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	broken := t.TempDir()
	src, err := os.ReadFile(filepath.Join(esiDir, "example-ea3102.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"good.xml": string(src), "bad.xml": "<EtherCATInfo><Vendor>"} {
		if err := os.WriteFile(filepath.Join(broken, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut = runCLI(t, context.Background(), nil, "pdos", "--json", "--sim", "--devices", devices, "--esi", broken, "--cycle.shm", noAgent)
	if code != 0 || !strings.Contains(errOut, "bad.xml") {
		t.Fatalf("exit %d, stderr %q: want 0 and the broken file named", code, errOut)
	}
	var res pdosWithESI
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	found := false
	for _, n := range res.ESI {
		if n.Position == 1 && n.Index == 0x6010 && n.SubIndex == 0x11 {
			found = n.Name == "Value" && n.Unit == "mV" && n.DataType == "INT" && n.PDOName == "AI Standard Channel 2"
		}
	}
	if !found || len(res.Slaves) != 3 {
		t.Errorf("JSON: %d slaves, esi %+v; want 0x6010:11 named Value, INT, mV", len(res.Slaves), res.ESI)
	}
}
