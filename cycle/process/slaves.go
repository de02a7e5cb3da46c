package process

import (
	"fmt"
	"slices"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master"
)

// Slave is the segment as configured at one ring position (an item of
// bus.slaves, which the agent may have read from an ENI): identity,
// alias, previous port and startup commands, numbers parsed.
type Slave struct {
	Slave          int    `json:"slave"`
	Name           string `json:"name"`
	Vendor         uint32 `json:"vendor"`
	Product        uint32 `json:"product"`
	Revision       uint32 `json:"revision"`
	RevisionPolicy string `json:"revisionpolicy"` // exact, minimum or any
	// Alias is the station alias the slave must hold; 0 checks none.
	Alias uint16 `json:"alias"`
	// PreviousPort is A to D, the port of slave Previous this one hangs
	// off; "" checks none.
	PreviousPort string       `json:"previousport,omitempty"`
	Previous     int          `json:"previous,omitempty"`
	Startup      []StartupCmd `json:"startup,omitempty"`
	// OutputBits and InputBits are the process data the slave's PDO
	// assignment must give; nil checks nothing.
	OutputBits *int `json:"outputbits,omitempty"`
	InputBits  *int `json:"inputbits,omitempty"`
}

// StartupCmd is one startup command of a slave: an SDO download (SDO) or
// a register command, run at Transition (see master.StartupCmd).
type StartupCmd struct {
	Transition   string   `json:"transition"`
	Comment      string   `json:"comment,omitempty"`
	SDO          bool     `json:"sdo,omitempty"`
	Index        uint16   `json:"index,omitempty"`
	SubIndex     uint8    `json:"subindex,omitempty"`
	Complete     bool     `json:"complete,omitempty"`
	Cmd          string   `json:"cmd,omitempty"` // FPRD, FPWR or FPRW
	Ado          uint16   `json:"ado,omitempty"`
	Data         []byte   `json:"data"`
	WKC          int      `json:"wkc,omitempty"`
	Retries      int      `json:"retries,omitempty"`
	Timeout      Duration `json:"timeout,omitempty"`
	Validate     []byte   `json:"validate,omitempty"`
	ValidateMask []byte   `json:"validatemask,omitempty"`
}

// MaxProcessDataBits bounds bus.slaves[].outputbits and inputbits: a
// slave's process data fits its ESC's memory (64 KiB).
const MaxProcessDataBits = 8 * 65536

// startupTransitions are the transition codes of startup commands.
var startupTransitions = []string{"IP", "PS", "SO", "OP", "SP", "PI", "SI", "OI", "OS"}

// registerCmds maps the register commands of startup commands.
var registerCmds = map[string]wire.Command{"FPRD": wire.FPRD, "FPWR": wire.FPWR, "FPRW": wire.FPRW}

// revisionPolicies maps bus.slaves[].revisionpolicy.
var revisionPolicies = map[string]master.RevisionPolicy{"exact": master.RevisionExact, "minimum": master.RevisionMinimum, "any": master.RevisionAny}

// slavesProblems checks bus.slaves.
func (c Config) slavesProblems(v *validator) {
	b := c.Bus
	for i, s := range b.Slaves {
		key := fmt.Sprintf("bus.slaves[%d]", i)
		if s.Slave != i {
			v.add(key+".slave", s.Slave, fmt.Sprintf("must be %d: bus.slaves lists every slave in ring order", i))
		}
		if _, ok := revisionPolicies[s.RevisionPolicy]; !ok {
			v.add(key+".revisionpolicy", s.RevisionPolicy, "must be exact, minimum or any")
		}
		if s.PreviousPort != "" && (len(s.PreviousPort) != 1 || s.PreviousPort[0] < 'A' || s.PreviousPort[0] > 'D' || s.Previous < 0 || s.Previous >= i) {
			v.add(key+".previousport", s.PreviousPort, fmt.Sprintf("must be A to D of a slave before this one (previous %d)", s.Previous))
		}
		for _, b := range []struct {
			key  string
			bits *int
		}{{key + ".outputbits", s.OutputBits}, {key + ".inputbits", s.InputBits}} {
			if b.bits != nil {
				v.count(b.key, *b.bits, 0, MaxProcessDataBits)
			}
		}
		for j, c := range s.Startup {
			k := fmt.Sprintf("%s.startup[%d]", key, j)
			if !slices.Contains(startupTransitions, c.Transition) {
				v.add(k+".transition", c.Transition, "must be one of IP, PS, SO, OP, SP, PI, SI, OI, OS")
			}
			if _, ok := registerCmds[c.Cmd]; !c.SDO && !ok {
				v.add(k+".cmd", c.Cmd, "must be FPRD, FPWR or FPRW")
			}
			if len(c.Data) == 0 {
				v.add(k+".data", "", "must hold at least one byte")
			}
			v.count(k+".wkc", c.WKC, 0, 3)
			v.count(k+".retries", c.Retries, 0, 100)
			v.duration(k+".timeout", c.Timeout, 0, MaxStateTimeout)
		}
	}
}

// expectedSlaves maps bus.slaves onto the master's configuration.
func expectedSlaves(slaves []Slave) []master.ExpectedSlave {
	out := make([]master.ExpectedSlave, 0, len(slaves))
	for _, s := range slaves {
		e := master.ExpectedSlave{Position: s.Slave, Name: s.Name, VendorID: s.Vendor, ProductCode: s.Product,
			Revision: s.Revision, RevisionPolicy: revisionPolicies[s.RevisionPolicy],
			Alias: s.Alias, CheckAlias: s.Alias != 0, PreviousPort: s.PreviousPort, Previous: s.Previous,
			OutputBits: -1, InputBits: -1}
		if s.OutputBits != nil {
			e.OutputBits = *s.OutputBits
		}
		if s.InputBits != nil {
			e.InputBits = *s.InputBits
		}
		for _, c := range s.Startup {
			e.Startup = append(e.Startup, master.StartupCmd{Transition: c.Transition, Comment: c.Comment,
				SDO: c.SDO, Index: c.Index, SubIndex: c.SubIndex, Complete: c.Complete,
				Cmd: registerCmds[c.Cmd], Ado: c.Ado, Data: c.Data, WKC: c.WKC, Retries: c.Retries,
				Timeout: time.Duration(c.Timeout), ValidateData: c.Validate, ValidateMask: c.ValidateMask})
		}
		out = append(out, e)
	}
	return out
}
