package eniconfig

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/ethercat/eni"
)

const (
	defaultSegment = "../../ethercat/eni/testdata/default-segment.xml"
	servoDemo      = "../../ethercat/eni/testdata/servo-demo.xml"
)

// hasNote reports whether a note contains every part.
func hasNote(notes []string, parts ...string) bool {
	return slices.ContainsFunc(notes, func(n string) bool {
		for _, p := range parts {
			if !strings.Contains(n, p) {
				return false
			}
		}
		return true
	})
}

// TestConvertDefaultSegment converts the default segment's ENI: every
// slave with its identity and previous port, the EL4132's CoE init
// commands in file order, the variables' names for MQTT by object, and
// the register init commands ecagent does its own way listed in notes.
func TestConvertDefaultSegment(t *testing.T) {
	_, r, err := Read(defaultSegment)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Slaves) != 7 {
		t.Fatalf("%d slaves, want 7", len(r.Slaves))
	}
	want := []string{"0x00000002:0x044c2c52:0x00120000", "0x00000002:0x07d43052:0x00100000", "0x00000002:0x07d43052:0x00100000",
		"0x00000002:0x03f63052:0x00130000", "0x00000002:0x03f63052:0x00130000", "0x00000002:0x10243052:0x00140000",
		"0x00000002:0x04562c52:0x00110000"}
	for i, s := range r.Slaves {
		if s.Slave != i || s.Identity != want[i] || s.RevisionPolicy != "exact" {
			t.Errorf("slave %d: %+v, want identity %s", i, s, want[i])
		}
		if pp := map[bool]string{true: "", false: string(rune('0'+i-1)) + ":B"}[i == 0]; s.PreviousPort != pp {
			t.Errorf("slave %d: previous port %q, want %q", i, s.PreviousPort, pp)
		}
		if bits := [][2]int{{0, 0}, {4, 0}, {4, 0}, {0, 4}, {0, 4}, {32, 0}, {0, 0}}[i]; s.OutputBits != bits[0] || s.InputBits != bits[1] {
			t.Errorf("slave %d: %d output and %d input bits, want %v (the PDOs its SMs assign)", i, s.OutputBits, s.InputBits, bits)
		}
		if len(s.InitCmds) != 0 {
			t.Errorf("slave %d: register commands %+v: the file's are all on registers ecagent sets up itself", i, s.InitCmds)
		}
	}
	var objects []string
	for _, c := range r.Slaves[5].SDOs {
		objects = append(objects, c.Transition+" "+c.Object+"="+c.Data)
	}
	if got := strings.Join(objects, ", "); got != "PS 0x1c12:00=00, PS 0x1c12:01=0016, PS 0x1c12:02=0116, PS 0x1c12:00=02, PS 0x1c13:00=00" {
		t.Errorf("EL4132 SDOs: %s", got)
	}
	for _, rule := range []string{"3 name=Term_4_(EL1014)", "3/0x6000:01 name=Channel_1.Input type=bool",
		"5/0x7000:01 name=AO_Outputs_Channel_1.Analog_output type=int"} {
		if !slices.Contains(append(r.MQTTSlaves, r.MQTTSignals...), rule) {
			t.Errorf("no MQTT rule %q in %q %q", rule, r.MQTTSlaves, r.MQTTSignals)
		}
	}
	if r.Period != time.Millisecond || r.DCEnabled {
		t.Errorf("period %v, DC %v: want 1ms without DC", r.Period, r.DCEnabled)
	}
	for _, n := range [][]string{{"master init commands (4)", "not run"}, {"on AL control (35)"}, {"on FMMUs"},
		{"FoE", "Term 6 (EL4132)"}, {"process image variables (1 of 19)"}, {"cyclic frames (1)", "docs/eni-esi.md"}} {
		if !hasNote(r.Notes, n...) {
			t.Errorf("no note with %q in:\n%s", n, strings.Join(r.Notes, "\n"))
		}
	}
}

// TestConvertServoDemo converts the drive demo's ENI: DC with the drive's
// cycle and shift, the drive's startup SDOs with complete access and
// timeouts.
func TestConvertServoDemo(t *testing.T) {
	_, r, err := Read(servoDemo)
	if err != nil {
		t.Fatal(err)
	}
	if !r.DCEnabled || time.Duration(r.DC.Sync0Shift) != 250*time.Microsecond || r.Period != time.Millisecond {
		t.Errorf("DC %v shift %v period %v, want on, 250µs, 1ms", r.DCEnabled, r.DC.Sync0Shift, r.Period)
	}
	first := r.Slaves[1].SDOs[0]
	if first != (contract.StartupSDO{Transition: "PS", Object: "0x1c12:00", Data: "01000016", Complete: true, Timeout: contract.Duration(500 * time.Millisecond),
		Comment: "RxPDO assign"}) {
		t.Errorf("first SDO of the drive %+v", first)
	}
	if n := len(r.Slaves[1].SDOs); n != 5 {
		t.Errorf("%d SDOs of the drive, want 5", n)
	}
}

// TestConvertRegisterCommands converts register init commands: the
// slave's own on registers ecagent does not set up run (by transition,
// with the Validate, counter and retries), others are explained; an
// explicit identification by the alias register is checked.
func TestConvertRegisterCommands(t *testing.T) {
	const file = `<EtherCATConfig><Config><Master><Info><Name>M</Name></Info></Master>
<Slave><Info><Name>Box 1</Name><PhysAddr>1001</PhysAddr><AutoIncAddr>0</AutoIncAddr>
<Identification><Ado>#x0012</Ado><Value>7</Value></Identification>
<VendorId>2</VendorId><ProductCode>#x07d43052</ProductCode><RevisionNo>#x00100000</RevisionNo></Info>
<InitCmds>
 <InitCmd><Transition>IP</Transition><Transition>II</Transition><Comment>watchdog</Comment><Cmd>5</Cmd><Adp>1001</Adp><Ado>#x0420</Ado><Data>e803</Data><Cnt>1</Cnt><Retries>3</Retries>
  <Validate><Data>e803</Data><DataMask>ffff</DataMask><Timeout>100</Timeout></Validate></InitCmd>
 <InitCmd><Transition>PS</Transition><Comment>by position</Comment><Cmd>1</Cmd><Adp>0</Adp><Ado>#x0400</Ado><Data>0000</Data></InitCmd>
 <InitCmd><Transition>IP</Transition><Comment>state</Comment><Cmd>5</Cmd><Adp>1001</Adp><Ado>#x0120</Ado><Data>0200</Data></InitCmd>
 <InitCmd><Transition>IP</Transition><Comment>all</Comment><Cmd>8</Cmd><Adp>0</Adp><Ado>#x0200</Ado><Data>0400</Data></InitCmd>
</InitCmds></Slave>
</Config></EtherCATConfig>`
	c, err := eni.Read(strings.NewReader(file), "x.xml", eni.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Convert(c)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Slaves[0]
	if s.Alias != 7 {
		t.Errorf("alias %d, want 7 (Identification at 0x0012)", s.Alias)
	}
	want := []contract.InitCmd{
		{Transition: "IP", Cmd: "FPWR", Ado: 0x0420, Data: "e803", WKC: 1, Retries: 3, Timeout: contract.Duration(100 * time.Millisecond),
			Validate: "e803", ValidateMask: "ffff", Comment: "watchdog"},
		{Transition: "PS", Cmd: "FPRD", Ado: 0x0400, Data: "0000", Comment: "by position"},
	}
	if !slices.Equal(s.InitCmds, want) {
		t.Errorf("register commands\n got %+v\nwant %+v", s.InitCmds, want)
	}
	for _, n := range []string{"on AL control (1)", "not addressed to one slave (1)"} {
		if !hasNote(r.Notes, n) {
			t.Errorf("no note %q in:\n%s", n, strings.Join(r.Notes, "\n"))
		}
	}
	cfg := config.Default()
	if err := r.ApplyTo(&cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the configuration with the ENI applied: %v", err)
	}
	cfg.Bus.Slaves[0].Alias = 8
	if err := r.ApplyTo(&cfg); err == nil {
		t.Error("ApplyTo over a bus.slaves that differs: no error")
	}
}
