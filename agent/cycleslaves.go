package agent

import (
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/cycle/process"
)

// cycleSlaves translates bus.slaves for the cycle process, the text
// values (identity, objects, hex data) parsed; Config.Validate has checked
// them, so a value that does not parse cannot occur.
func cycleSlaves(slaves []config.Slave) []process.Slave {
	if len(slaves) == 0 {
		return nil
	}
	out := make([]process.Slave, 0, len(slaves))
	for _, s := range slaves {
		vendor, product, revision, _ := config.ParseIdentity(s.Identity)
		ps := process.Slave{Slave: s.Slave, Name: s.Name, Vendor: vendor, Product: product, Revision: revision,
			RevisionPolicy: s.RevisionPolicy, Alias: s.Alias}
		if s.OutputBits >= 0 {
			ps.OutputBits = &s.OutputBits
		}
		if s.InputBits >= 0 {
			ps.InputBits = &s.InputBits
		}
		if s.PreviousPort != "" {
			ps.Previous, ps.PreviousPort, _ = config.ParsePreviousPort(s.PreviousPort)
		}
		for _, sdo := range s.SDOs {
			index, sub, _ := config.ParseObject(sdo.Object)
			data, _ := config.ParseHex(sdo.Data)
			ps.Startup = append(ps.Startup, process.StartupCmd{Transition: sdo.Transition, Comment: sdo.Comment, SDO: true,
				Index: index, SubIndex: sub, Complete: sdo.Complete, Data: data, Timeout: process.Duration(sdo.Timeout)})
		}
		for _, ic := range s.InitCmds {
			data, _ := config.ParseHex(ic.Data)
			validate, _ := config.ParseHex(ic.Validate)
			mask, _ := config.ParseHex(ic.ValidateMask)
			ps.Startup = append(ps.Startup, process.StartupCmd{Transition: ic.Transition, Comment: ic.Comment,
				Cmd: ic.Cmd, Ado: ic.Ado, Data: data, WKC: ic.WKC, Retries: ic.Retries, Timeout: process.Duration(ic.Timeout),
				Validate: validate, ValidateMask: mask})
		}
		out = append(out, ps)
	}
	return out
}
