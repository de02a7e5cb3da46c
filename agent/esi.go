package agent

import (
	"log/slog"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/esinames"
	"github.com/ecagent/ecagent/contract"
)

// loadESINames reads the ESI files of bus.esi once, for the names, units
// and data types of the process data (agent/esinames); nil without any.
// A file that cannot be used is logged and left out: the others still
// name their devices.
func loadESINames(cfg config.Config, log *slog.Logger) *esinames.Catalog {
	if len(cfg.Bus.ESI) == 0 {
		return nil
	}
	c, err := esinames.Load(cfg.Bus.ESI)
	if err != nil {
		log.Warn("bus.esi: some ESI files cannot be used; their devices keep the names of their SII", "err", err)
	}
	log.Info("bus.esi: ESI device descriptions indexed", "files", c.Files(), "devices", c.Devices(), "not_read", len(c.Warnings()))
	for _, w := range c.Warnings() {
		log.Debug("bus.esi: not read", "warning", w.String())
	}
	return c
}

// annotate names the signals of a cycle process's bus description from
// the ESI files, before any output renders it.
func annotate(names *esinames.Catalog, info *contract.BusInfo, log *slog.Logger) {
	for _, n := range names.Annotate(info) {
		log.Info("bus.esi: " + n)
	}
}
