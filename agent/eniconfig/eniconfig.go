// Package eniconfig turns an ETG.2100 EtherCAT network information file
// (an ENI, as TwinCAT or EC-Engineer export it, read by ethercat/eni) into
// ecagent's configuration: the expected slaves with their startup
// commands (bus.slaves), distributed clocks (bus.dc), the cycle period,
// and the process-image variables' names as MQTT names (mqtt.slaves,
// mqtt.signals). What the file holds that ecagent does its own way, or
// does not do, is listed in Result.Notes, never dropped silently.
//
// The agent converts (bus.eni, ecagent config from-eni); the cycle
// process never reads an ENI, it gets the converted configuration.
package eniconfig

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/mqtt"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/ethercat/eni"
)

// Result is what an ENI gives the configuration.
type Result struct {
	// Slaves is bus.slaves: every slave in ring order.
	Slaves []contract.Slave
	// DC is bus.dc when DCEnabled (a slave with a SYNC0 cycle).
	DC        contract.DC
	DCEnabled bool
	// Period is cycle.period: the cyclic task's cycle time, else the DC
	// SYNC0 cycle; 0 when the file gives neither.
	Period time.Duration
	// MQTTSlaves and MQTTSignals are mqtt.slaves and mqtt.signals rules
	// that publish the slaves and the process-image variables under the
	// ENI's names.
	MQTTSlaves, MQTTSignals []string
	// Variables are the process-image variables the names come from,
	// with where the ENI puts them.
	Variables []Variable
	// Notes say what the file holds that is not taken, and why.
	Notes []string
}

// Variable is one process-image variable of the ENI and the signal it
// names.
type Variable struct {
	Name   string // the ENI's, e.g. "Term 4 (EL1014).Channel 1.Input"
	Slave  int    // ring position
	Signal string // the signal's default name, e.g. channel_1.input
	// Index and SubIndex are the PDO entry's object.
	Index    uint16
	SubIndex uint8
	Output   bool
	DataType string
	BitSize  uint32
	BitOffs  uint32 // in the ENI's Inputs or Outputs image
}

// Read reads and converts the ENI at path.
func Read(path string) (*eni.Config, Result, error) {
	c, err := eni.ReadFile(path, eni.Options{})
	if err != nil {
		return nil, Result{}, err
	}
	r, err := Convert(c)
	return c, r, err
}

// Apply reads the ENI cfg.Bus.ENI names and sets what it gives: bus.slaves
// and bus.dc, cycle.period, and the MQTT names (before the file's own
// mqtt.slaves and mqtt.signals, which so win). A configuration that also
// sets bus.slaves is refused: one of them would be ignored. The notes are
// the caller's to log (Notes).
func Apply(cfg *config.Config) error {
	_, r, err := Read(cfg.Bus.ENI)
	if err != nil {
		return err
	}
	return r.ApplyTo(cfg)
}

// ApplyTo sets what r gives in cfg (see Apply).
func (r Result) ApplyTo(cfg *config.Config) error {
	if len(cfg.Bus.Slaves) > 0 && !reflect.DeepEqual(cfg.Bus.Slaves, r.Slaves) {
		// The same list is what ecagent run --print-config writes with
		// bus.eni: that file loads again.
		return errors.New("bus.slaves is set too, and differs: the ENI gives the slaves; remove one of them")
	}
	// A copy: the configuration is the caller's to change, r stays as read.
	cfg.Bus.Slaves = make([]contract.Slave, len(r.Slaves))
	for i, s := range r.Slaves {
		s.SDOs, s.InitCmds = slices.Clone(s.SDOs), slices.Clone(s.InitCmds)
		cfg.Bus.Slaves[i] = s
	}
	if r.DCEnabled {
		cfg.Bus.DC.Enabled = true
		cfg.Bus.DC.Sync0Shift, cfg.Bus.DC.Sync1 = r.DC.Sync0Shift, r.DC.Sync1
	}
	if r.Period > 0 {
		cfg.Cycle.Period = contract.Duration(r.Period)
	}
	cfg.MQTT.Slaves = append(slices.Clone(r.MQTTSlaves), cfg.MQTT.Slaves...)
	cfg.MQTT.Signals = append(slices.Clone(r.MQTTSignals), cfg.MQTT.Signals...)
	return nil
}

// Convert converts a read ENI. An error says what in the file ecagent
// cannot run with (slave, element, value).
func Convert(c *eni.Config) (Result, error) {
	var r Result
	var errs []error
	note := func(format string, args ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, args...)) }

	// Station addresses → ring positions: the file lists the slaves in
	// ring order, and addresses them by the addresses it gives them.
	byAddr := map[uint16]int{}
	for i, s := range c.Slaves {
		if p, ok := s.Info.Position(); ok && p != i {
			errs = append(errs, fmt.Errorf("slave %d (%s): AutoIncAddr says ring position %d, but the file lists it as slave %d: the order of Config/Slave is the ring order", i, s.Info.Name, p, i))
		}
		if s.Info.PhysAddr != nil {
			byAddr[*s.Info.PhysAddr] = i
		}
	}
	if len(c.Master.InitCmds) > 0 {
		note("master init commands (%d): not run; ecagent scans, addresses and resets the segment its own way", len(c.Master.InitCmds))
	}
	skipped := map[string]int{}
	for i, s := range c.Slaves {
		cs := contract.Slave{Slave: i, Name: s.Info.Name, RevisionPolicy: "exact",
			Identity: contract.FormatIdentity(s.Info.VendorID, s.Info.ProductCode, s.Info.RevisionNo)}
		cs.OutputBits, cs.InputBits = processDataBits(s.ProcessData)
		if id := s.Info.Identification; id != nil {
			if id.Ado == 0x0012 && id.Value != 0 {
				cs.Alias = id.Value
			} else {
				note("slave %d (%s): explicit identification at register %#04x = %d: not checked (ecagent checks the station alias, 0x0012)", i, s.Info.Name, id.Ado, id.Value)
			}
		}
		if pp, ok := previousPort(s.PreviousPorts); ok && pp.PhysAddr != nil {
			if p, found := byAddr[*pp.PhysAddr]; found {
				cs.PreviousPort = fmt.Sprintf("%d:%s", p, pp.Port)
			} else {
				errs = append(errs, fmt.Errorf("slave %d (%s): PreviousPort/PhysAddr %d names no slave of the file", i, s.Info.Name, *pp.PhysAddr))
			}
		}
		if mb := s.Mailbox; mb != nil && mb.CoE != nil {
			for _, ic := range mb.CoE.InitCmds {
				cs.SDOs = append(cs.SDOs, sdos(ic, i, s.Info.Name, note)...)
			}
		}
		for _, ic := range s.InitCmds {
			cmds, why := initCmds(ic, i, byAddr)
			if why != "" {
				skipped[why]++
				continue
			}
			cs.InitCmds = append(cs.InitCmds, cmds...)
		}
		if mb := s.Mailbox; mb != nil {
			for _, p := range mb.Protocols {
				if p != "CoE" {
					note("slave %d (%s): %s mailbox settings: not used (only CoE startup commands are run)", i, s.Info.Name, p)
				}
			}
		}
		r.Slaves = append(r.Slaves, cs)
	}
	for _, why := range sortedKeys(skipped) {
		note("slave register init commands %s (%d): %s", why, skipped[why], skipReasons[why])
	}
	convertDC(c, &r, note)
	convertNames(c, &r, note)
	if len(c.Cyclic) > 0 {
		note("cyclic frames (%d): ecagent lays out its own frames and process image (outputs, then inputs, slave by slave); the ENI's variables are published under their names, and their offsets in ecagent's image are in ecagent's bus description (see docs/eni-esi.md)", countFrames(c.Cyclic))
	}
	return r, errors.Join(errs...)
}

// processDataBits sums the entries of the PDOs the slave's process data
// assigns (listed under an SmN, or with an Sm attribute): the sizes its
// PDO assignment must give, which the ENI's image offsets rest on.
func processDataBits(pd *eni.ProcessData) (out, in int) {
	if pd == nil {
		return 0, 0
	}
	assigned := map[uint16]bool{}
	for _, sm := range pd.SyncManagers {
		for _, p := range sm.PDOs {
			assigned[p] = true
		}
	}
	sum := func(pdos []eni.PDO) int {
		n := 0
		for _, p := range pdos {
			if assigned[p.Index] || p.SyncManager != eni.NoSyncManager {
				for _, e := range p.Entries {
					n += int(e.BitLen)
				}
			}
		}
		return n
	}
	return sum(pd.RxPDOs), sum(pd.TxPDOs)
}

// previousPort returns the connection in use: the selected one, else the
// only one.
func previousPort(pps []eni.PreviousPort) (eni.PreviousPort, bool) {
	for _, p := range pps {
		if p.Selected {
			return p, true
		}
	}
	if len(pps) == 1 {
		return pps[0], true
	}
	return eni.PreviousPort{}, false
}

// sdos converts one CoE init command into one SDO per transition.
func sdos(ic eni.CoEInitCmd, pos int, name string, note func(string, ...any)) []contract.StartupSDO {
	switch {
	case ic.Disabled:
		return nil
	case !ic.Download():
		note("slave %d (%s): CoE init command %q (an SDO upload, Ccs 2): not run; ecagent runs downloads only", pos, name, ic.Comment)
		return nil
	}
	var out []contract.StartupSDO
	for _, t := range ic.Transitions {
		if !slices.Contains(contract.Transitions(), t) {
			note("slave %d (%s): CoE init command %q at %s: not run; ecagent runs startup commands at %s", pos, name, ic.Comment, t, strings.Join(contract.Transitions(), ", "))
			continue
		}
		out = append(out, contract.StartupSDO{Transition: t, Object: fmt.Sprintf("0x%04x:%02x", ic.Index, ic.SubIndex),
			Data: fmt.Sprintf("%x", ic.Data), Complete: ic.CompleteAccess,
			Timeout: contract.Duration(time.Duration(ic.Timeout) * time.Millisecond), Comment: ic.Comment})
	}
	return out
}

// The registers ecagent's bring-up sets up its own way; init commands on
// them are not run. The reasons are in skipReasons.
var ownRegisters = []struct {
	lo, hi uint16
	why    string
}{
	{0x0010, 0x0013, "on the station address and alias"},
	{0x0120, 0x0121, "on AL control"},
	{0x0130, 0x0135, "on AL status"},
	{0x0500, 0x050F, "on the SII EEPROM interface"},
	{0x0600, 0x06FF, "on FMMUs"},
	{0x0800, 0x087F, "on SyncManagers"},
	{0x0900, 0x09FF, "on distributed clocks"},
}

// skipReasons explains each kind of register init command not run.
var skipReasons = map[string]string{
	"on the station address and alias": "not run; ecagent gives station addresses by ring position (0x1001…) and checks the alias",
	"on AL control":                    "not run; ecagent requests the states itself",
	"on AL status":                     "not run; ecagent waits for the states itself, acknowledging errors",
	"on the SII EEPROM interface":      "not run; ecagent reads the SII itself and checks the identity against bus.slaves",
	"on FMMUs":                         "not run; ecagent maps the process image its own way",
	"on SyncManagers":                  "not run; ecagent sets the mailbox and process-data SyncManagers from the SII and the PDO assignment",
	"on distributed clocks":            "not run; ecagent configures distributed clocks from bus.dc",
	"not addressed to one slave":       "not run; broadcast and logical commands are the master's business in ecagent",
	"at other transitions":             "not run; ecagent runs startup commands at IP, PS, SO, OP, SP, PI, SI, OI, OS",
}

// initCmds converts one register init command of slave pos: one command
// per transition, or why it is not run.
func initCmds(ic eni.InitCmd, pos int, byAddr map[uint16]int) ([]contract.InitCmd, string) {
	var name string
	switch ic.Cmd {
	case eni.APRD, eni.FPRD:
		name = "FPRD"
	case eni.APWR, eni.FPWR:
		name = "FPWR"
	case eni.APRW, eni.FPRW:
		name = "FPRW"
	default:
		return nil, "not addressed to one slave"
	}
	// The command must be the slave's own: by position or address.
	target := pos
	if ic.Cmd == eni.FPRD || ic.Cmd == eni.FPWR || ic.Cmd == eni.FPRW {
		if p, ok := byAddr[ic.Address.Adp]; ok {
			target = p
		}
	}
	if target != pos {
		return nil, "not addressed to one slave"
	}
	for _, r := range ownRegisters {
		if ic.Address.Ado >= r.lo && ic.Address.Ado <= r.hi {
			return nil, r.why
		}
	}
	var out []contract.InitCmd
	for _, t := range ic.Transitions {
		if !slices.Contains(contract.Transitions(), t) {
			continue
		}
		c := contract.InitCmd{Transition: t, Cmd: name, Ado: ic.Address.Ado, Data: fmt.Sprintf("%x", ic.Data),
			Retries: int(min(ic.Retries, contract.MaxInitCmdRetries)), Timeout: contract.Duration(time.Duration(ic.Timeout) * time.Millisecond), Comment: ic.Comment}
		if ic.Cnt != nil && *ic.Cnt <= 3 {
			c.WKC = int(*ic.Cnt)
		}
		if v := ic.Validate; v != nil {
			c.Validate, c.ValidateMask = fmt.Sprintf("%x", v.Data), fmt.Sprintf("%x", v.DataMask)
			c.Timeout = contract.Duration(time.Duration(v.Timeout) * time.Millisecond)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, "at other transitions"
	}
	return out, ""
}

// convertDC sets bus.dc and cycle.period from the slaves' DC settings and
// the cyclic task.
func convertDC(c *eni.Config, r *Result, note func(string, ...any)) {
	if len(c.Cyclic) > 0 && c.Cyclic[0].CycleTime != nil {
		r.Period = time.Duration(*c.Cyclic[0].CycleTime) * time.Microsecond
	}
	firstPotential, ref := -1, -1
	var shifts []int32
	for i, s := range c.Slaves {
		dc := s.DC
		if dc == nil {
			continue
		}
		if dc.PotentialReferenceClock && firstPotential < 0 {
			firstPotential = i
		}
		if dc.ReferenceClock {
			ref = i
		}
		if dc.CycleTime0 == nil || *dc.CycleTime0 == 0 {
			continue
		}
		cycle := time.Duration(*dc.CycleTime0)
		if !r.DCEnabled {
			r.DCEnabled = true
			if r.Period == 0 {
				r.Period = cycle
			}
			if cycle != r.Period {
				note("slave %d (%s): DC SYNC0 cycle %v differs from the cyclic task's %v: ecagent runs SYNC0 at cycle.period (%v)", i, s.Info.Name, cycle, r.Period, r.Period)
			}
			if dc.ShiftTime != nil {
				shift := time.Duration(*dc.ShiftTime)
				if shift < 0 || shift >= r.Period {
					note("slave %d (%s): DC shift time %v: ecagent's SYNC0 shift is at least 0 and less than the cycle; 0 is used", i, s.Info.Name, shift)
				} else {
					r.DC.Sync0Shift = contract.Duration(shift)
				}
			}
			if dc.CycleTime1 != nil && *dc.CycleTime1 > 0 && time.Duration(*dc.CycleTime1) < r.Period {
				r.DC.Sync1 = contract.Duration(*dc.CycleTime1)
			}
		}
		if dc.ShiftTime != nil {
			shifts = append(shifts, *dc.ShiftTime)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(shifts)))) > 1 {
		note("DC shift times differ between slaves: ecagent shifts SYNC0 by bus.dc.sync0shift (%v) in every DC slave", r.DC.Sync0Shift)
	}
	if ref >= 0 && firstPotential >= 0 && ref != firstPotential {
		note("DC reference clock slave %d (%s): ecagent takes the first DC-capable slave (slave %d in this file) as reference clock", ref, c.Slaves[ref].Info.Name, firstPotential)
	}
	if r.DCEnabled {
		note("DC: ecagent starts SYNC0 in every slave that supports distributed clocks, with the same cycle and shift")
	}
}

// convertNames turns the process image's variables into MQTT names: the
// slave's name for the slave, the rest of the variable's name for the
// signal of the PDO entry it names.
func convertNames(c *eni.Config, r *Result, note func(string, ...any)) {
	if c.ProcessImage == nil {
		return
	}
	type entry struct {
		signal string // the default name, which Variable keeps
		object string // 0xINDEX:SUB, which the rule names
		output bool
		e      eni.PDOEntry
	}
	for i, s := range c.Slaves {
		prefix := s.Info.Name + "."
		entries := map[string]entry{}
		if pd := s.ProcessData; pd != nil {
			for _, p := range pd.RxPDOs {
				for _, e := range p.Entries {
					entries[p.Name+"."+e.Name] = entry{mqtt.DefaultSignalName(p.Name, e.Name), objectRef(e), true, e}
				}
			}
			for _, p := range pd.TxPDOs {
				for _, e := range p.Entries {
					entries[p.Name+"."+e.Name] = entry{mqtt.DefaultSignalName(p.Name, e.Name), objectRef(e), false, e}
				}
			}
		}
		named := false
		seen := map[string]bool{}
		for _, im := range []struct {
			vars   []eni.Variable
			output bool
		}{{c.ProcessImage.Outputs.Variables, true}, {c.ProcessImage.Inputs.Variables, false}} {
			for _, v := range im.vars {
				rest, ok := strings.CutPrefix(v.Name, prefix)
				if !ok {
					continue
				}
				e, found := entries[rest]
				if !found || e.output != im.output || seen[e.object] || e.object == "" {
					continue
				}
				seen[e.object] = true
				named = true
				// The signal is named by its object: the ENI's PDO and
				// entry names (from the ESI) need not be the SII's.
				rule := fmt.Sprintf("%d/%s name=%s", i, e.object, topicSafe(rest))
				if t := valueType(v.DataType); t != "" {
					rule += " type=" + t
				}
				r.MQTTSignals = append(r.MQTTSignals, rule)
				r.Variables = append(r.Variables, Variable{Name: v.Name, Slave: i, Signal: e.signal, Index: e.e.Index, SubIndex: e.e.SubIndex, Output: im.output,
					DataType: v.DataType, BitSize: v.BitSize, BitOffs: v.BitOffs})
			}
		}
		if named || (s.ProcessData != nil && len(s.ProcessData.RxPDOs)+len(s.ProcessData.TxPDOs) > 0) {
			r.MQTTSlaves = append(r.MQTTSlaves, fmt.Sprintf("%d name=%s", i, topicSafe(s.Info.Name)))
		}
	}
	total := len(c.ProcessImage.Inputs.Variables) + len(c.ProcessImage.Outputs.Variables)
	if unmatched := total - len(r.Variables); unmatched > 0 {
		note("process image variables (%d of %d): named after no PDO entry of a slave of the file (<slave name>.<PDO name>.<entry name>): published under ecagent's default names", unmatched, total)
	}
}

// objectRef names a PDO entry by its object, "0x7000:11"; "" for a gap.
func objectRef(e eni.PDOEntry) string {
	if e.Padding() {
		return ""
	}
	return fmt.Sprintf("0x%04x:%02x", e.Index, e.SubIndex)
}

// topicSafe makes a name an MQTT topic level: white space, '/', '+' and
// '#' become '_' ("Term 3 (EL2004)" → "Term_3_(EL2004)").
func topicSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || strings.ContainsRune("/+#", r) {
			return '_'
		}
		return r
	}, s)
}

// valueType maps an IEC 61131-3 data type of the ENI onto a signal type.
func valueType(t string) string {
	switch strings.ToUpper(t) {
	case "BOOL", "BIT":
		return "bool"
	case "SINT", "INT", "DINT", "LINT":
		return "int"
	case "USINT", "UINT", "UDINT", "ULINT", "BYTE", "WORD", "DWORD", "LWORD":
		return "uint"
	case "REAL", "LREAL":
		return "float"
	}
	return ""
}

func countFrames(cs []eni.Cyclic) int {
	n := 0
	for _, c := range cs {
		n += len(c.Frames)
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
