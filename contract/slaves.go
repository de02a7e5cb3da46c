package contract

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Slave is what the segment must hold at one ring position and what is
// run on it at its state transitions (an item of bus.slaves): the expected
// topology and startup commands an ENI describes (ecagent config from-eni
// writes them from one; bus.eni reads them from one).
type Slave struct {
	// Slave is the ring position.
	Slave int `json:"slave" koanf:"slave" help:"ring position of the slave, 0 for the first; the list names every slave of the segment, in ring order"`
	// Name names the slave in errors (and, from an ENI, in MQTT).
	Name string `json:"name" koanf:"name" help:"the slave's name in errors, e.g. \"Term 3 (EL2004)\""`
	// Identity is VENDOR:PRODUCT:REVISION in hex.
	Identity string `json:"identity" koanf:"identity" help:"the identity the slave must have, VENDOR:PRODUCT:REVISION in hex, e.g. \"0x00000002:0x07d43052:0x00120000\""`
	// RevisionPolicy is exact, minimum or any.
	RevisionPolicy string `json:"revisionpolicy" koanf:"revisionpolicy" help:"how the revision is compared: exact (the same), minimum (this one or later) or any"`
	// Alias is the station alias (0x0012) the slave must hold; 0 checks
	// none.
	Alias uint16 `json:"alias" koanf:"alias" help:"station alias (register 0x0012) the slave must hold; 0 checks none"`
	// PreviousPort is "POSITION:PORT", the port of the previous slave this
	// one hangs off; "" checks none.
	PreviousPort string `json:"previousport" koanf:"previousport" help:"the port of the previous slave the slave is connected to, as POSITION:PORT (e.g. \"0:B\"), PORT A to D; empty checks none"`
	// SDOs are the CoE startup SDO downloads.
	SDOs []StartupSDO `json:"sdos" koanf:"sdos" help:"CoE SDO downloads at state transitions, in order: transition, object, data, complete, timeout, comment"`
	// InitCmds are the startup register commands.
	InitCmds []InitCmd `json:"initcmds" koanf:"initcmds" help:"register commands at state transitions, in order: transition, cmd, ado, data, wkc, retries, timeout, validate, validatemask, comment"`
	// OutputBits and InputBits are the process data the slave's PDO
	// assignment must give; -1 checks nothing.
	OutputBits int `json:"outputbits" koanf:"outputbits" help:"output bits the slave's PDO assignment must give once its startup commands ran (checked before the image is mapped); -1 checks nothing"`
	InputBits  int `json:"inputbits" koanf:"inputbits" help:"input bits the slave's PDO assignment must give once its startup commands ran; -1 checks nothing"`
}

// StartupSDO is one CoE SDO download at a state transition.
type StartupSDO struct {
	Transition string   `json:"transition" koanf:"transition" help:"the state transition: IP, PS, SO, OP, SP, PI, SI, OI or OS"`
	Object     string   `json:"object" koanf:"object" help:"the object written, INDEX:SUB in hex, e.g. \"0x1c12:00\""`
	Data       string   `json:"data" koanf:"data" help:"the bytes written, in hex as on the wire (little-endian), e.g. \"01000016\""`
	Complete   bool     `json:"complete" koanf:"complete" help:"complete access: write every sub-index from SUB on at once"`
	Timeout    Duration `json:"timeout" koanf:"timeout" help:"how long the transfer may take; 0 uses bus.statetimeout"`
	Comment    string   `json:"comment" koanf:"comment" help:"what the command is for, named in errors"`
}

// InitCmd is one register command at a state transition.
type InitCmd struct {
	Transition   string   `json:"transition" koanf:"transition" help:"the state transition: IP, PS, SO, OP, SP, PI, SI, OI or OS"`
	Cmd          string   `json:"cmd" koanf:"cmd" help:"FPRD (read), FPWR (write) or FPRW (read and write) at the slave's station address"`
	Ado          uint16   `json:"ado" koanf:"ado" help:"the register, e.g. 0x0400"`
	Data         string   `json:"data" koanf:"data" help:"the bytes written, or as many zero bytes as are read, in hex"`
	WKC          int      `json:"wkc" koanf:"wkc" help:"the working counter the command must come back with; 0 checks none"`
	Retries      int      `json:"retries" koanf:"retries" help:"how often the command is sent again when its working counter or validation fails, 0..100"`
	Timeout      Duration `json:"timeout" koanf:"timeout" help:"how long the command, its retries and validation may take; 0 uses bus.statetimeout"`
	Validate     string   `json:"validate" koanf:"validate" help:"the answer the command must come back with (under validatemask), in hex; empty compares nothing"`
	ValidateMask string   `json:"validatemask" koanf:"validatemask" help:"the bits of the answer compared with validate, in hex; empty compares every bit"`
	Comment      string   `json:"comment" koanf:"comment" help:"what the command is for, named in errors"`
}

// The values of bus.slaves[].revisionpolicy.
var revisionPolicies = []string{"exact", "minimum", "any"}

// Transitions lists the transition codes startup commands may name.
func Transitions() []string {
	return []string{"IP", "PS", "SO", "OP", "SP", "PI", "SI", "OI", "OS"}
}

// initCmdNames lists the register commands of bus.slaves[].initcmds.
var initCmdNames = []string{"FPRD", "FPWR", "FPRW"}

// MaxProcessDataBits bounds bus.slaves[].outputbits and inputbits: a
// slave's process data fits its ESC's memory (64 KiB).
const MaxProcessDataBits = 8 * 65536

// MaxInitCmdRetries bounds bus.slaves[].initcmds[].retries.
const MaxInitCmdRetries = 100

// ParseIdentity parses VENDOR:PRODUCT:REVISION in hex (the 0x prefix is
// optional).
func ParseIdentity(s string) (vendor, product, revision uint32, err error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf(`must be VENDOR:PRODUCT:REVISION in hex, e.g. "0x00000002:0x07d43052:0x00120000"`)
	}
	var v [3]uint32
	for i, p := range parts {
		n, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(p, "0x"), "0X"), 16, 32)
		if err != nil {
			return 0, 0, 0, fmt.Errorf(`%q is not a 32-bit hex number: want VENDOR:PRODUCT:REVISION, e.g. "0x00000002:0x07d43052:0x00120000"`, p)
		}
		v[i] = uint32(n)
	}
	return v[0], v[1], v[2], nil
}

// FormatIdentity writes an identity as ParseIdentity reads it.
func FormatIdentity(vendor, product, revision uint32) string {
	return fmt.Sprintf("0x%08x:0x%08x:0x%08x", vendor, product, revision)
}

// ParseObject parses INDEX:SUB in hex, e.g. "0x1c12:00".
func ParseObject(s string) (index uint16, sub uint8, err error) {
	const want = `must be INDEX:SUB in hex, e.g. "0x1c12:00"`
	i, sb, ok := strings.Cut(strings.TrimSpace(s), ":")
	trim := func(t string) string { return strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X") }
	iv, err1 := strconv.ParseUint(trim(i), 16, 16)
	sv, err2 := strconv.ParseUint(trim(sb), 16, 8)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%s", want)
	}
	return uint16(iv), uint8(sv), nil
}

// ParseHex parses bytes in hex, as ENI files write them: "01000016"; white
// space is ignored.
func ParseHex(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		return nil, fmt.Errorf("must be bytes in hex, two digits each, e.g. \"01000016\"")
	}
	return b, nil
}

// ParsePreviousPort parses POSITION:PORT, e.g. "0:B".
func ParsePreviousPort(s string) (position int, port string, err error) {
	p, port, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(p)
	if !ok || err != nil || n < 0 || n > MaxRingPosition || len(port) != 1 || port[0] < 'A' || port[0] > 'D' {
		return 0, "", fmt.Errorf(`must be POSITION:PORT, the previous slave's ring position and its port A to D, e.g. "0:B"`)
	}
	return n, port, nil
}

// slavesProblems checks bus.slaves.
func (c Config) slavesProblems(p *problems) {
	for i, s := range c.Bus.Slaves {
		key := fmt.Sprintf("bus.slaves[%d]", i)
		slaveProblems(p, key, i, s)
		for j, sdo := range s.SDOs {
			startupSDOProblems(p, fmt.Sprintf("%s.sdos[%d]", key, j), sdo)
		}
		for j, ic := range s.InitCmds {
			initCmdProblems(p, fmt.Sprintf("%s.initcmds[%d]", key, j), ic)
		}
	}
}

// slaveProblems checks the fields of bus.slaves[i] (key) other than its
// startup commands.
func slaveProblems(p *problems, key string, i int, s Slave) {
	add := p.add
	if s.Slave != i {
		add(key+".slave", s.Slave, fmt.Sprintf("must be the item's index in the list (%d here): bus.slaves lists every slave in ring order, from 0", i))
	}
	if _, _, _, err := ParseIdentity(s.Identity); err != nil {
		add(key+".identity", s.Identity, err.Error())
	}
	if !slices.Contains(revisionPolicies, s.RevisionPolicy) {
		add(key+".revisionpolicy", s.RevisionPolicy, "must be exact, minimum or any")
	}
	if s.PreviousPort != "" {
		if prev, _, err := ParsePreviousPort(s.PreviousPort); err != nil {
			add(key+".previousport", s.PreviousPort, err.Error())
		} else if prev >= i {
			add(key+".previousport", s.PreviousPort, fmt.Sprintf("must name a slave before this one (ring position below %d)", i))
		}
	}
	for _, b := range []struct {
		key  string
		bits int
	}{{key + ".outputbits", s.OutputBits}, {key + ".inputbits", s.InputBits}} {
		if b.bits < -1 || b.bits > MaxProcessDataBits {
			add(b.key, b.bits, fmt.Sprintf("must be -1 (not checked) or between 0 and %d", MaxProcessDataBits))
		}
	}
}

// startupSDOProblems checks one startup SDO download, key naming it
// (bus.slaves[i].sdos[j]).
func startupSDOProblems(p *problems, k string, sdo StartupSDO) {
	add := p.add
	if !slices.Contains(Transitions(), sdo.Transition) {
		add(k+".transition", sdo.Transition, "must be one of "+strings.Join(Transitions(), ", "))
	}
	if _, _, err := ParseObject(sdo.Object); err != nil {
		add(k+".object", sdo.Object, err.Error())
	}
	if b, err := ParseHex(sdo.Data); err != nil || len(b) == 0 {
		add(k+".data", sdo.Data, "must be the bytes written, in hex, two digits each, e.g. \"01000016\"")
	}
	if sdo.Timeout < 0 || time.Duration(sdo.Timeout) > MaxStateTimeout {
		add(k+".timeout", time.Duration(sdo.Timeout), "must be between 0 (bus.statetimeout) and "+FormatDuration(MaxStateTimeout))
	}
}

// initCmdProblems checks one startup register command, key naming it
// (bus.slaves[i].initcmds[j]).
func initCmdProblems(p *problems, k string, ic InitCmd) {
	add := p.add
	if !slices.Contains(Transitions(), ic.Transition) {
		add(k+".transition", ic.Transition, "must be one of "+strings.Join(Transitions(), ", "))
	}
	if !slices.Contains(initCmdNames, ic.Cmd) {
		add(k+".cmd", ic.Cmd, "must be FPRD, FPWR or FPRW")
	}
	data, err := ParseHex(ic.Data)
	if err != nil || len(data) == 0 {
		add(k+".data", ic.Data, "must be the bytes written or read, in hex, two digits each, e.g. \"0000\"")
	}
	if ic.WKC < 0 || ic.WKC > 3 {
		add(k+".wkc", ic.WKC, "must be 0 (not checked) to 3")
	}
	if ic.Retries < 0 || ic.Retries > MaxInitCmdRetries {
		add(k+".retries", ic.Retries, fmt.Sprintf("must be between 0 and %d", MaxInitCmdRetries))
	}
	if ic.Timeout < 0 || time.Duration(ic.Timeout) > MaxStateTimeout {
		add(k+".timeout", time.Duration(ic.Timeout), "must be between 0 (bus.statetimeout) and "+FormatDuration(MaxStateTimeout))
	}
	initCmdValidateProblems(p, k, ic, data)
}

// initCmdValidateProblems checks an init command's validate and
// validatemask against each other and against its data.
func initCmdValidateProblems(p *problems, k string, ic InitCmd, data []byte) {
	v, errV := ParseHex(ic.Validate)
	m, errM := ParseHex(ic.ValidateMask)
	switch {
	case errV != nil:
		p.add(k+".validate", ic.Validate, errV.Error())
	case errM != nil:
		p.add(k+".validatemask", ic.ValidateMask, errM.Error())
	case len(v) > len(data):
		p.add(k+".validate", ic.Validate, fmt.Sprintf("must be at most as long as data (%d bytes)", len(data)))
	case len(m) > 0 && len(m) != len(v):
		p.add(k+".validatemask", ic.ValidateMask, fmt.Sprintf("must be as long as validate (%d bytes)", len(v)))
	}
}
