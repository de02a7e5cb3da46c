package test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/eniconfig"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/sim"
)

// TestENIBringUpFrames brings the default segment up over a veth pair
// three times, with the master configured as the agent configures the
// cycle process: from the ENI (bus.eni), from the YAML ecagent config
// from-eni writes for it, and from the plain YAML (no bus.slaves, so no
// identity check and none of the EL4132's startup SDOs). It counts the
// frames each bring-up sends (the simulator's count: every frame is a
// round trip, a bring-up step or a cycle, against devices that answer
// after a count of frames) and requires the ENI's to be no more than the
// equivalent YAML's; the figures are logged (-v).
func TestENIBringUpFrames(t *testing.T) {
	needRoot(t)
	eniPath, err := filepath.Abs(defaultSegmentENI)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fromENI := filepath.Join(dir, "from-eni.yaml")
	out, err := exec.Command(ecagentBinary(t), "config", "from-eni", eniPath).Output()
	if err != nil {
		t.Fatalf("config from-eni: %v", err)
	}
	if err := os.WriteFile(fromENI, out, 0o644); err != nil {
		t.Fatal(err)
	}
	withENI := filepath.Join(dir, "eni.yaml")
	if err := os.WriteFile(withENI, []byte("bus:\n  eni: "+eniPath+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.yaml")
	if err := os.WriteFile(plain, []byte("bus:\n  expectedslaves: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	frames := map[string]uint64{}
	cycleConfigs := map[string]contract.Config{}
	for i, tc := range []struct{ name, file string }{{"eni", withENI}, {"from-eni yaml", fromENI}, {"plain yaml", plain}} {
		cfg, err := config.Load(config.Sources{File: tc.file, ENI: eniconfig.Apply})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// Devices that take frames, counted, rather than time to answer
		// (SII, state changes, mailbox): the count is the bring-up's own,
		// not the host's speed.
		w := newWire(t, fmt.Sprintf("enib%d", i))
		devs, err := sim.ParseDevices(referenceSet)
		if err != nil {
			t.Fatal(err)
		}
		seg := simOnWireWith(t, w, devs, sim.WithSIIBusyFrames(1), sim.WithStateChangeDelay(2), sim.WithMailboxDelay(2))
		cfg.Bus.Interface = w.MasterEnd
		pc := cfg.CycleConfig()
		cycleConfigs[tc.name] = pc
		mc := process.MasterConfig(pc, slog.New(slog.DiscardHandler))
		mc.Timeout = 50 * time.Millisecond
		l, err := link.Open(w.MasterEnd, link.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		m, err := master.New(l, mc)
		if err != nil {
			t.Fatal(err)
		}
		before := seg.Stats().Frames
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = m.BringUp(ctx)
		cancel()
		frames[tc.name] = seg.Stats().Frames - before
		_ = m.Close()
		_ = l.Close()
		if err != nil {
			t.Fatalf("%s: bring-up: %v", tc.name, err)
		}
		t.Logf("bring-up from %s: %d frames (%d slaves expected, %d startup commands)", tc.name, frames[tc.name],
			len(pc.Bus.Slaves), startupCount(pc))
	}
	// What the cycle process reads (JSON through its pipe) is the same.
	a, b := cycleConfigs["eni"], cycleConfigs["from-eni yaml"]
	a.Bus.Interface, b.Bus.Interface = "", ""
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("the cycle process gets another configuration from the ENI than from the YAML config from-eni writes:\n%s\n%s", ja, jb)
	}
	if frames["eni"] > frames["from-eni yaml"] {
		t.Errorf("bring-up from the ENI took %d frames, from the equivalent YAML %d", frames["eni"], frames["from-eni yaml"])
	}
}

func startupCount(c contract.Config) int {
	n := 0
	for _, s := range c.Bus.Slaves {
		n += len(s.SDOs) + len(s.InitCmds)
	}
	return n
}
