package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/sim"
)

// busFlags are the flags of the commands that talk to a segment directly,
// outside the agent (scan, sdo).
type busFlags struct {
	iface   *string
	devices *[]string
	timeout *time.Duration
	level   *string
}

func addBusFlags(fs *pflag.FlagSet) busFlags {
	def := config.Default()
	return busFlags{
		iface:   fs.String("iface", "", "network `interface` of the segment (empty: built-in simulated segment)"),
		devices: fs.StringSlice("devices", def.Bus.Devices, "simulated devices when --iface is empty: model names, SII image paths or ESI devices (FILE.xml[:DEVICE][@REVISION])"),
		timeout: fs.Duration("timeout", time.Duration(def.Bus.Timeout), "how long one frame waits for its answer"),
		level:   fs.String("log.level", "warn", "log level: debug, info, warn or error"),
	}
}

// scanBus opens the segment the flags name, scans it (failing unless it
// has expected slaves, when expected > 0) and returns the master and the
// slaves; close releases the segment.
func (b busFlags) scanBus(ctx context.Context, e *env, expected int) (m *master.Master, slaves []*master.Slave, close func(), err error) {
	cfg := config.Default()
	cfg.Bus.Interface, cfg.Bus.Devices, cfg.Bus.ExpectedSlaves, cfg.Bus.Timeout = *b.iface, *b.devices, expected, contract.Duration(*b.timeout)
	cfg.Log.Level = *b.level
	if err := cfg.ValidateWithModels(sim.Models()); err != nil {
		return nil, nil, nil, usageError{err}
	}
	log := newLogger(e.stderr, cfg.Log.SlogLevel(), "text")
	seg, err := openSegment(cfg, log)
	if err != nil {
		return nil, nil, nil, err
	}
	mc := process.MasterConfig(cfg.CycleConfig(), log)
	// A slow segment (--timeout raised) is slow for the EEPROM polls too.
	mc.SIITimeout = max(master.DefaultSIITimeout, 10*time.Duration(cfg.Bus.Timeout))
	m, err = master.New(seg.Link, mc)
	if err != nil {
		seg.Close()
		return nil, nil, nil, err
	}
	if slaves, err = m.Scan(ctx); err != nil {
		_ = m.Close()
		seg.Close()
		return nil, nil, nil, err
	}
	return m, slaves, func() { _ = m.Close(); seg.Close() }, nil
}

// wrapUnlessUsage prefixes err with the command's name, leaving usage
// errors (exit code 2) as they are.
func wrapUnlessUsage(cmd string, err error) error {
	if _, ok := err.(usageError); ok {
		return err
	}
	return fmt.Errorf("%s: %w", cmd, err)
}
