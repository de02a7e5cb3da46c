package process

import (
	"log/slog"
	"time"

	"github.com/ecagent/ecagent/master"
)

// MasterConfig maps the configuration onto the master's.
func MasterConfig(c Config, log *slog.Logger) *master.Config {
	mc := &master.Config{
		Timeout:        time.Duration(c.Bus.Timeout),
		StateTimeout:   time.Duration(c.Bus.StateTimeout),
		ExpectedSlaves: c.Bus.ExpectedSlaves,
		Logger:         log,
	}
	if dc := c.Bus.DC; dc.Enabled {
		frames := dc.DriftFrames
		if frames == 0 {
			frames = -1 // the configuration's 0 is "none", the master's "default"
		}
		mc.DC = &master.DCConfig{DriftFrames: frames, Sync0: time.Duration(c.Cycle.Period), Sync0Shift: time.Duration(dc.Sync0Shift),
			Sync1: time.Duration(dc.Sync1), StartDelay: time.Duration(dc.StartDelay)}
	}
	if len(c.Bus.Slaves) > 0 {
		mc.Expected = expectedSlaves(c.Bus.Slaves)
	}
	for _, p := range c.Bus.PDO {
		mc.PDO = append(mc.PDO, master.SlavePDOConfig{Position: p.Slave, RxPDOs: pdoConfigs(p.RxPDOs),
			TxPDOs: pdoConfigs(p.TxPDOs)})
	}
	return mc
}

// pdoConfigs translates configured PDOs; nil stays nil (keep the slave's).
func pdoConfigs(pdos []PDO) []master.PDOConfig {
	if pdos == nil {
		return nil
	}
	out := make([]master.PDOConfig, len(pdos))
	for i, p := range pdos {
		out[i].Index = p.Index
		if len(p.Entries) == 0 {
			continue // assign only: keep the PDO's mapping
		}
		for _, e := range p.Entries {
			out[i].Entries = append(out[i].Entries, master.PDOEntryConfig{Index: e.Index, SubIndex: e.SubIndex, Bits: e.Bits})
		}
	}
	return out
}
