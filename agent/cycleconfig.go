package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/cycle/process"
)

// simulatedFrameTimeout is the least bus.timeout for the built-in
// simulated segment. It is a process on the same host whose answers wait
// for the scheduler: without real-time priority (a container without an
// RT budget) on a loaded host an answer took longer than 4 tries of the
// default 10 ms, and bring-up failed. The cyclic exchange does not use
// this timeout.
const simulatedFrameTimeout = 100 * time.Millisecond

// CycleConfig is the part of cfg the cycle process reads (bus.*, cycle.*,
// log.*, drives), as the cycle program takes it. This is the one place
// that maps the agent's configuration onto the cycle's.
func CycleConfig(cfg config.Config) process.Config {
	b := cfg.Bus
	if cfg.Simulated() && b.Timeout < simulatedFrameTimeout {
		b.Timeout = simulatedFrameTimeout
	}
	c := process.Config{
		Bus: process.Bus{
			Interface:      b.Interface,
			Link:           b.Link,
			ExpectedSlaves: b.ExpectedSlaves,
			Timeout:        process.Duration(b.Timeout),
			StateTimeout:   process.Duration(b.StateTimeout),
			AlarmCycles:    b.AlarmCycles,
			DC: process.DC{Enabled: b.DC.Enabled, Sync0Shift: process.Duration(b.DC.Sync0Shift),
				Sync1: process.Duration(b.DC.Sync1), DriftFrames: b.DC.DriftFrames, StartDelay: process.Duration(b.DC.StartDelay)},
		},
		Cycle: process.Cycle{
			Period:     process.Duration(cfg.Cycle.Period),
			Core:       cfg.Cycle.Core,
			Priority:   cfg.Cycle.Priority,
			BusyWait:   process.Duration(cfg.Cycle.BusyWait),
			RecvSpin:   process.Duration(cfg.Cycle.RecvSpin),
			Exchange:   cfg.Cycle.Exchange,
			LockMemory: cfg.Cycle.LockMemory,
			SHM:        cfg.Cycle.SHM,
		},
		Log: process.Log{Level: cfg.Log.Level, Format: cfg.Log.Format},
	}
	for _, p := range b.PDO {
		c.Bus.PDO = append(c.Bus.PDO, process.SlavePDOs{Slave: p.Slave, RxPDOs: cyclePDOs(p.RxPDOs), TxPDOs: cyclePDOs(p.TxPDOs)})
	}
	for _, d := range cfg.Drives {
		t := d.Target
		c.Drives = append(c.Drives, process.Drive{
			Slave: d.Slave, Mode: d.Mode, FaultReset: d.FaultReset, SettleCycles: d.SettleCycles,
			Target: process.Target{Kind: t.Kind, Value: t.Value, From: t.From, To: t.To, Duration: process.Duration(t.Duration),
				Offset: t.Offset, Amplitude: t.Amplitude, Period: process.Duration(t.Period)},
		})
	}
	return c
}

// cyclePDOs translates configured PDOs; nil stays nil (keep the slave's
// assignment), empty stays empty (assign none).
func cyclePDOs(pdos []config.PDO) []process.PDO {
	if pdos == nil {
		return nil
	}
	out := make([]process.PDO, len(pdos))
	for i, p := range pdos {
		out[i].Index = p.Index
		for _, e := range p.Entries {
			out[i].Entries = append(out[i].Entries, process.PDOEntry{Index: e.Index, SubIndex: e.SubIndex, Bits: e.Bits})
		}
	}
	return out
}

// CycleProgramName is the file name of the cycle program (cmd/ecagent-cycle).
const CycleProgramName = "ecagent-cycle"

// CycleProgram returns the path of the cycle program the agent starts:
// cycle.program (a path, or a name looked up in $PATH), else
// ecagent-cycle in the directory of the running executable, else
// ecagent-cycle from $PATH.
func CycleProgram(cfg config.Config) (string, error) {
	if p := cfg.Cycle.Program; p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("cycle.program %q: %w", p, err)
		}
		return path, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the cycle program: %w", err)
	}
	beside := filepath.Join(filepath.Dir(exe), CycleProgramName)
	if _, err := os.Stat(beside); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return beside, nil // exec says what is wrong with it, if anything
	}
	path, err := exec.LookPath(CycleProgramName)
	if err != nil {
		return "", fmt.Errorf("the cycle program %s is neither beside %s nor in $PATH: install it there, or set cycle.program", CycleProgramName, exe)
	}
	return path, nil
}
