package process

import (
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master"
)

// registerCmds maps the register commands of bus.slaves[].initcmds.
var registerCmds = map[string]wire.Command{"FPRD": wire.FPRD, "FPWR": wire.FPWR, "FPRW": wire.FPRW}

// revisionPolicies maps bus.slaves[].revisionpolicy.
var revisionPolicies = map[string]master.RevisionPolicy{"exact": master.RevisionExact, "minimum": master.RevisionMinimum, "any": master.RevisionAny}

// expectedSlaves maps bus.slaves onto the master's configuration, the
// text values (identity, objects, hex data) parsed: Config.Validate has
// checked them, so one that does not parse cannot occur. The SDOs of a
// slave come before its register commands.
func expectedSlaves(slaves []contract.Slave) []master.ExpectedSlave {
	out := make([]master.ExpectedSlave, 0, len(slaves))
	for _, s := range slaves {
		vendor, product, revision, _ := contract.ParseIdentity(s.Identity)
		e := master.ExpectedSlave{Position: s.Slave, Name: s.Name, VendorID: vendor, ProductCode: product,
			Revision: revision, RevisionPolicy: revisionPolicies[s.RevisionPolicy],
			Alias: s.Alias, CheckAlias: s.Alias != 0, OutputBits: s.OutputBits, InputBits: s.InputBits}
		if s.PreviousPort != "" {
			e.Previous, e.PreviousPort, _ = contract.ParsePreviousPort(s.PreviousPort)
		}
		for _, c := range s.SDOs {
			index, sub, _ := contract.ParseObject(c.Object)
			data, _ := contract.ParseHex(c.Data)
			e.Startup = append(e.Startup, master.StartupCmd{Transition: c.Transition, Comment: c.Comment, SDO: true,
				Index: index, SubIndex: sub, Complete: c.Complete, Data: data, Timeout: time.Duration(c.Timeout)})
		}
		for _, c := range s.InitCmds {
			data, _ := contract.ParseHex(c.Data)
			validate, _ := contract.ParseHex(c.Validate)
			mask, _ := contract.ParseHex(c.ValidateMask)
			e.Startup = append(e.Startup, master.StartupCmd{Transition: c.Transition, Comment: c.Comment,
				Cmd: registerCmds[c.Cmd], Ado: c.Ado, Data: data, WKC: c.WKC, Retries: c.Retries, Timeout: time.Duration(c.Timeout),
				ValidateData: validate, ValidateMask: mask})
		}
		out = append(out, e)
	}
	return out
}
