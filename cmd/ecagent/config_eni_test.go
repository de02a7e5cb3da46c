package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/agent/config"
)

// TestConfigFromENI prints the configuration of the default segment's ENI
// as YAML, which config check takes and whose notes head it, and as JSON
// with the notes on stderr; a configuration naming the ENI (bus.eni) is
// valid, one naming a broken ENI is refused with the file's own error.
func TestConfigFromENI(t *testing.T) {
	const eni = "../../ethercat/eni/testdata/default-segment.xml"
	code, out, errOut := runCLI(t, context.Background(), nil, "config", "from-eni", eni)
	if code != exitOK || !strings.Contains(out, "# not taken from the ENI:") || !strings.Contains(out, "identity: 0x00000002:0x03f63052:0x00130000") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	dir := t.TempDir()
	yaml := filepath.Join(dir, "from-eni.yaml")
	if err := os.WriteFile(yaml, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, context.Background(), nil, "config", "check", yaml); code != exitOK {
		t.Errorf("config check of from-eni's output: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = runCLI(t, context.Background(), nil, "config", "from-eni", eni, "--json")
	var doc struct {
		Bus struct {
			Slaves []struct {
				Name string `json:"name"`
			} `json:"slaves"`
		} `json:"bus"`
		MQTT struct {
			Signals []string `json:"signals"`
		} `json:"mqtt"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if len(doc.Bus.Slaves) != 7 || doc.Bus.Slaves[3].Name != "Term 4 (EL1014)" || len(doc.MQTT.Signals) != 18 {
		t.Errorf("--json: %s", out)
	}
	if !strings.Contains(errOut, "not taken: master init commands (4)") {
		t.Errorf("--json: notes on stderr %q", errOut)
	}

	abs, err := filepath.Abs(eni)
	if err != nil {
		t.Fatal(err)
	}
	withENI := filepath.Join(dir, "eni.yaml")
	if err := os.WriteFile(withENI, []byte("bus:\n  eni: "+abs+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, context.Background(), nil, "config", "check", withENI); code != exitOK {
		t.Errorf("config check with bus.eni: exit %d\n%s\n%s", code, out, errOut)
	}
	broken := filepath.Join(dir, "broken.xml")
	if err := os.WriteFile(broken, []byte("<EtherCATConfig><Config><Master><Info><Name>M</Name></Info></Master>\n<Slave><Info><VendorId>2x</VendorId></Info></Slave></Config></EtherCATConfig>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(withENI, []byte("bus:\n  eni: "+broken+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, context.Background(), nil, "config", "check", withENI)
	if code != exitUsage || !strings.Contains(errOut, "bus.eni") || !strings.Contains(errOut, `broken.xml:2:`) || !strings.Contains(errOut, `VendorId: value "2x": not a number`) {
		t.Errorf("config check with a broken ENI: exit %d\n%s", code, errOut)
	}
}

// TestENISimulatedDevices: with no segment named and bus.devices at its
// default, bus.eni makes the simulated segment of the ENI's devices when
// the simulator has a model of each identity, and leaves it otherwise.
func TestENISimulatedDevices(t *testing.T) {
	abs, err := filepath.Abs("../../ethercat/eni/testdata/servo-demo.xml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Bus.ENI = abs
	if err := applyENI(&cfg); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Bus.Devices, ","); got != "EK1100,AKD" {
		t.Errorf("simulated devices %s, want EK1100,AKD", got)
	}
	cfg.Bus.Slaves[1].Identity = "0x0000006a:0x00414b44:0x00000099" // a revision the simulator has no model of
	if d := simulatedDevices(cfg.Bus.Slaves); d != nil {
		t.Errorf("simulatedDevices with an unknown revision: %v, want nil", d)
	}
	cfg = config.Default()
	cfg.Bus.ENI, cfg.Bus.Interface = abs, "eth1"
	if err := applyENI(&cfg); err != nil || !slices.Equal(cfg.Bus.Devices, config.ReferenceDevices()) {
		t.Errorf("with bus.interface set the devices changed: %v (%v)", cfg.Bus.Devices, err)
	}
}
