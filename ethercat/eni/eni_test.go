package eni

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// testFiles are the ENI files of testdata, written for these tests in the
// shapes TwinCAT and EC-Engineer export.
var testFiles = []string{"testdata/default-segment.xml", "testdata/servo-demo.xml"}

func readTestFile(t *testing.T, path string) *Config {
	t.Helper()
	c, err := ReadFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGolden renders every test file whole; go test -update rewrites
// testdata/golden after a deliberate change.
func TestGolden(t *testing.T) {
	for _, path := range testFiles {
		t.Run(filepath.Base(path), func(t *testing.T) {
			c := readTestFile(t, path)
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(filepath.Base(path), ".xml")+".txt")
			testsupport.Golden(t, golden, []byte(summary(c)))
		})
	}
}

// TestDefaultSegment checks the slaves of the default segment's ENI
// against the simulated segment's devices.
func TestDefaultSegment(t *testing.T) {
	c := readTestFile(t, "testdata/default-segment.xml")
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %v", c.Warnings)
	}
	m := c.Master
	if m.EtherType != 0x88A4 || m.Source.String() != "00:01:02:03:04:05" || m.MailboxStates.StartAddr != 0x09000000 ||
		len(m.InitCmds) != 4 || !m.InitCmds[0].BeforeSlave || m.InitCmds[2].Cmd != BWR || len(m.InitCmds[2].Data) != 256 {
		t.Errorf("master %+v", m)
	}
	tests := []struct {
		name              string
		product, revision uint32
		phys              uint16
		position          int
		send, recv        uint32 // bits of process data
		pdos              int
	}{
		{"Term 1 (EK1100)", 0x044C2C52, 0x00120000, 1001, 0, 0, 0, 0},
		{"Term 2 (EL2004)", 0x07D43052, 0x00100000, 1002, 1, 4, 0, 4},
		{"Term 3 (EL2004)", 0x07D43052, 0x00100000, 1003, 2, 4, 0, 4},
		{"Term 4 (EL1014)", 0x03F63052, 0x00130000, 1004, 3, 0, 4, 4},
		{"Term 5 (EL1014)", 0x03F63052, 0x00130000, 1005, 4, 0, 4, 4},
		{"Term 6 (EL4132)", 0x10243052, 0x00140000, 1006, 5, 32, 0, 2},
		{"Term 7 (EK1110)", 0x04562C52, 0x00110000, 1007, 6, 0, 0, 0},
	}
	if len(c.Slaves) != len(tests) {
		t.Fatalf("%d slaves", len(c.Slaves))
	}
	for i, tt := range tests {
		s := c.Slaves[i]
		pos, _ := s.Info.Position()
		if s.Info.Name != tt.name || s.Info.VendorID != 2 || s.Info.ProductCode != tt.product || s.Info.RevisionNo != tt.revision ||
			*s.Info.PhysAddr != tt.phys || pos != tt.position {
			t.Errorf("slave %d: %+v (position %d)", i, s.Info, pos)
		}
		var send, recv uint32
		var pdos int
		if pd := s.ProcessData; pd != nil {
			for _, r := range pd.Send {
				send += r.BitLength
			}
			for _, r := range pd.Recv {
				recv += r.BitLength
			}
			pdos = len(pd.RxPDOs) + len(pd.TxPDOs)
		}
		if send != tt.send || recv != tt.recv || pdos != tt.pdos {
			t.Errorf("%s: send %d recv %d bits, %d PDOs; want %d, %d, %d", tt.name, send, recv, pdos, tt.send, tt.recv, tt.pdos)
		}
		if i > 0 && (len(s.PreviousPorts) != 1 || s.PreviousPorts[0].Port != "B" || *s.PreviousPorts[0].PhysAddr != tt.phys-1) {
			t.Errorf("%s: previous port %+v", tt.name, s.PreviousPorts)
		}
	}
}

// TestDefaultSegmentEL4132 checks the mailbox slave: its SMs, its CoE
// startup SDOs in file order, its register init commands with Validate.
func TestDefaultSegmentEL4132(t *testing.T) {
	s := readTestFile(t, "testdata/default-segment.xml").Slaves[5]
	pd := s.ProcessData
	if len(pd.SyncManagers) != 2 || pd.SyncManagers[0].No != 2 || pd.SyncManagers[0].StartAddress != 0x1100 ||
		!slices.Equal(pd.SyncManagers[0].PDOs, []uint16{0x1600, 0x1601}) || pd.SyncManagers[1].Enable || *pd.SyncManagers[0].DefaultSize != 4 {
		t.Errorf("sync managers %+v", pd.SyncManagers)
	}
	if e := pd.RxPDOs[1].Entries[0]; e.Index != 0x7010 || e.SubIndex != 1 || e.BitLen != 16 || e.DataType != "INT" || pd.RxPDOs[1].SyncManager != 2 {
		t.Errorf("second RxPDO %+v", pd.RxPDOs[1])
	}
	mb := s.Mailbox
	if mb.Send != (MailboxArea{0x1000, 128}) || mb.Recv != (MailboxArea{0x1080, 128}) || mb.PollTime != nil || *mb.StatusBitAddr != 0 ||
		!slices.Equal(mb.Protocols, []string{"CoE", "FoE"}) {
		t.Errorf("mailbox %+v", mb)
	}
	var sdos []string
	for _, c := range mb.CoE.InitCmds {
		if !c.Download() || c.Transitions[0] != "PS" {
			t.Errorf("init cmd %+v", c)
		}
		sdos = append(sdos, fmt.Sprintf("%04x %02x %x", c.Index, c.SubIndex, c.Data))
	}
	want := []string{"1c12 00 00", "1c12 01 0016", "1c12 02 0116", "1c12 00 02", "1c13 00 00"}
	if !slices.Equal(sdos, want) {
		t.Errorf("SDOs %q, want %q", sdos, want)
	}
	var safeop *InitCmd
	for i, c := range s.InitCmds {
		if c.Comment == "check device state for SAFEOP" {
			safeop = &s.InitCmds[i]
		}
	}
	if safeop == nil || safeop.Cmd != FPRD || safeop.Address != (Address{Adp: 1006, Ado: 0x130}) || safeop.Requires != "cycle" ||
		safeop.Validate == nil || !bytes.Equal(safeop.Validate.Data, []byte{4, 0}) || !bytes.Equal(safeop.Validate.DataMask, []byte{0x1F, 0}) ||
		safeop.Validate.Timeout != 10000 || safeop.Validate.Type != "EQ" || *safeop.Cnt != 1 || safeop.Retries != 3 {
		t.Errorf("SAFEOP check %+v", safeop)
	}
}

// TestDefaultSegmentCyclicAndImage checks the frame and the variables
// the MQTT signal names will come from.
func TestDefaultSegmentCyclicAndImage(t *testing.T) {
	c := readTestFile(t, "testdata/default-segment.xml")
	if len(c.Cyclic) != 1 || *c.Cyclic[0].CycleTime != 1000 || len(c.Cyclic[0].Frames[0].Cmds) != 3 {
		t.Fatalf("cyclic %+v", c.Cyclic)
	}
	out, in, al := c.Cyclic[0].Frames[0].Cmds[0], c.Cyclic[0].Frames[0].Cmds[1], c.Cyclic[0].Frames[0].Cmds[2]
	if out.Cmd != LWR || out.Address != (Address{Logical: true, Addr: 0x01000000}) || out.DataLength != 5 || *out.Cnt != 3 ||
		*out.OutputOffs != 26 || out.InputOffs != nil || !slices.Equal(out.States, []string{"SAFEOP", "OP"}) {
		t.Errorf("outputs cmd %+v", out)
	}
	if in.Cmd != LRD || *in.InputOffs != 43 || al.Cmd != BRD || al.Address.Ado != 0x130 || *al.Cnt != 7 || len(al.States) != 3 {
		t.Errorf("inputs %+v, AL status %+v", in, al)
	}
	pi := c.ProcessImage
	if pi.Inputs.ByteSize != 58 || len(pi.Inputs.Variables) != 9 || pi.Outputs.ByteSize != 31 || len(pi.Outputs.Variables) != 10 {
		t.Fatalf("image %+v", pi)
	}
	v := pi.Outputs.Variables[9]
	if v.Name != "Term 6 (EL4132).AO Outputs Channel 2.Analog output" || v.DataType != "INT" || v.BitSize != 16 || v.BitOffs != 26*8+8+16 {
		t.Errorf("last output %+v", v)
	}
	// The variables lie where the slaves' Send and Recv put their bits.
	if s := c.Slaves[3].ProcessData.Recv[0]; pi.Inputs.Variables[0].BitOffs != s.BitStart {
		t.Errorf("Term 4's first input at bit %d, its Recv starts at %d", pi.Inputs.Variables[0].BitOffs, s.BitStart)
	}
}

// TestServoDemo checks the drive demo: DC, the drive's PDOs, the CoE
// profile and startup SDOs, the FRMW of the cyclic frame.
func TestServoDemo(t *testing.T) {
	c := readTestFile(t, "testdata/servo-demo.xml")
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %v", c.Warnings)
	}
	ek, akd := c.Slaves[0], c.Slaves[1]
	if !ek.DC.ReferenceClock || !akd.DC.PotentialReferenceClock || akd.DC.ReferenceClock || *akd.DC.CycleTime0 != 1000000 ||
		*akd.DC.ShiftTime != 250000 || akd.DC.CycleTime1 != nil {
		t.Errorf("DC %+v %+v", ek.DC, akd.DC)
	}
	if akd.Info.VendorID != 0x6A || akd.Info.ProductCode != 0x414B44 || akd.Info.RevisionNo != 2 || akd.Info.ProductRevision != "AKD-P00606-NBCC-E000" {
		t.Errorf("identity %+v", akd.Info)
	}
	pd := akd.ProcessData
	if len(pd.RxPDOs) != 2 || pd.RxPDOs[0].SyncManager != 2 || pd.RxPDOs[1].SyncManager != NoSyncManager || !pd.RxPDOs[1].Fixed ||
		!slices.Equal(pd.RxPDOs[1].Exclude, []uint16{0x1600}) || !pd.RxPDOs[0].Entries[2].Padding() {
		t.Errorf("RxPDOs %+v", pd.RxPDOs)
	}
	if sm := pd.SyncManagers[1]; sm.No != 3 || sm.Type != "Inputs" || sm.StartAddress != 0x1140 || sm.ControlByte != 0x20 || !sm.Enable || *sm.DefaultSize != 16 {
		t.Errorf("SM3 %+v", sm)
	}
	mb := akd.Mailbox
	if *mb.PollTime != 10 || mb.Send.Length != 0x400 || mb.CoE.Profile.Channels[0] != 402 || !mb.CoE.InitCmds[0].CompleteAccess ||
		!bytes.Equal(mb.CoE.InitCmds[0].Data, []byte{1, 0, 0, 0x16}) || mb.CoE.InitCmds[4].Index != 0x6060 || mb.CoE.InitCmds[4].Timeout != 500 {
		t.Errorf("mailbox %+v, CoE %+v", mb, mb.CoE)
	}
	frmw := c.Cyclic[0].Frames[0].Cmds[1]
	if frmw.Cmd != FRMW || frmw.Address != (Address{Adp: 1001, Ado: 0x910}) || frmw.DataLength != 8 {
		t.Errorf("FRMW %+v", frmw)
	}
	names := map[string]uint32{}
	for _, v := range c.ProcessImage.Inputs.Variables {
		names[v.Name] = v.BitOffs
	}
	if names["Drive 1 (AKD).Inputs.Statusword"] != pd.Recv[0].BitStart || names["Drive 1 (AKD).Inputs.Error code"] != pd.Recv[0].BitStart+112 {
		t.Errorf("input variables %v", names)
	}
}

func TestPosition(t *testing.T) {
	for _, tt := range []struct {
		addr uint16
		pos  int
	}{{0, 0}, {0xFFFF, 1}, {0xFFFE, 2}, {0xFF00, 256}} {
		a := tt.addr
		if p, ok := (SlaveInfo{AutoIncAddr: &a}).Position(); !ok || p != tt.pos {
			t.Errorf("AutoIncAddr %#x: position %d", tt.addr, p)
		}
	}
	if _, ok := (SlaveInfo{}).Position(); ok {
		t.Error("a position without AutoIncAddr")
	}
}

// eniOf is a minimal ENI around slaves (Slave elements) and rest (more
// Config children).
func eniOf(slaves, rest string) string {
	return `<EtherCATConfig><Config><Master><Info><Name>M</Name></Info></Master>` + slaves + rest + `</Config></EtherCATConfig>`
}

// slaveOf is a slave element with the identity given and more inside.
func slaveOf(name string, phys, autoinc int, more string) string {
	return `<Slave><Info><Name>` + name + `</Name><PhysAddr>` + itoa(phys) + `</PhysAddr><AutoIncAddr>` + itoa(autoinc) +
		`</AutoIncAddr><VendorId>2</VendorId><ProductCode>#x07d43052</ProductCode><RevisionNo>#x00100000</RevisionNo></Info>` + more + `</Slave>`
}

func itoa(i int) string { return fmt.Sprint(i) }

// TestReadRefuses checks that bad files are refused with an error that
// says where and what, and no Config.
func TestReadRefuses(t *testing.T) {
	initCmd := func(body string) string {
		return eniOf(slaveOf("T2", 1002, 65535, `<InitCmds><InitCmd><Transition>PS</Transition>`+body+`</InitCmd></InitCmds>`), "")
	}
	coeCmd := func(body string) string {
		return eniOf(slaveOf("T6", 1006, 65531, `<Mailbox><Send><Start>4096</Start><Length>128</Length></Send><Recv><Start>4224</Start><Length>128</Length></Recv>`+
			`<CoE><InitCmds><InitCmd>`+body+`</InitCmd></InitCmds></CoE></Mailbox>`), "")
	}
	tests := []struct {
		name, doc string
		kind      error
		want      string
	}{
		{"bad vendor id", eniOf("\n<Slave>\n<Info><Name>Term 2</Name><VendorId>2x</VendorId><ProductCode>1</ProductCode><RevisionNo>1</RevisionNo></Info></Slave>", ""),
			ErrValue, `x.xml:3:36: EtherCATConfig/Config/Slave(Term 2)/Info/VendorId: value "2x": not a number`},
		{"no product code", eniOf(`<Slave><Info><Name>T</Name><VendorId>2</VendorId><RevisionNo>1</RevisionNo></Info></Slave>`, ""), ErrMissing,
			"Slave(T)/Info: required <ProductCode> missing"},
		{"no info", eniOf(`<Slave/>`, ""), ErrMissing, "Slave: required <Info> missing"},
		{"same address twice", eniOf(slaveOf("A", 1001, 0, "")+slaveOf("B", 1001, 65535, ""), ""), ErrValue,
			`Slave[2](B)/Info/PhysAddr: value "1001": PhysAddr 1001 is also slave 1's (A)`},
		{"same position twice", eniOf(slaveOf("A", 1001, 0, "")+slaveOf("B", 1002, 0, ""), ""), ErrValue, "ring position 0, also slave 1's (A)"},
		{"logical command with a register", initCmd(`<Cmd>12</Cmd><Adp>1</Adp><Ado>2</Ado><Addr>0</Addr><DataLength>1</DataLength>`), ErrValue,
			"LRW is a logical command: it is addressed by <Addr>"},
		{"register command with an Addr", initCmd(`<Cmd>5</Cmd><Adp>1</Adp><Ado>2</Ado><Addr>0</Addr><DataLength>1</DataLength>`), ErrValue,
			"<Addr> is for the logical commands"},
		{"FPWR without Adp", initCmd(`<Cmd>5</Cmd><Ado>2</Ado><DataLength>1</DataLength>`), ErrMissing, "required <Adp> missing: FPWR addresses one slave"},
		{"unknown command", initCmd(`<Cmd>15</Cmd><Adp>1</Adp><Ado>2</Ado><DataLength>1</DataLength>`), ErrValue, "a command from 0 (NOP) to 14 (FRMW)"},
		{"data and length", initCmd(`<Cmd>5</Cmd><Adp>1</Adp><Ado>2</Ado><Data>00</Data><DataLength>1</DataLength>`), ErrValue, "exclusive"},
		{"no data", initCmd(`<Cmd>5</Cmd><Adp>1</Adp><Ado>2</Ado>`), ErrMissing, "<Data> or <DataLength> missing"},
		{"datagram too long", initCmd(`<Cmd>8</Cmd><Ado>2</Ado><DataLength>1500</DataLength>`), ErrValue, "at most 1486 bytes"},
		{"validate mask size", initCmd(`<Cmd>4</Cmd><Adp>1</Adp><Ado>304</Ado><Data>0000</Data><Validate><Data>0400</Data><DataMask>1f</DataMask><Timeout>1</Timeout></Validate>`),
			ErrValue, "the mask has 1 bytes, the data 2"},
		{"validate without timeout", initCmd(`<Cmd>4</Cmd><Adp>1</Adp><Ado>304</Ado><Data>0000</Data><Validate><Data>0400</Data></Validate>`),
			ErrMissing, "Validate: required <Timeout> missing"},
		{"bad requires", initCmd(`<Requires>now</Requires><Cmd>4</Cmd><Adp>1</Adp><Ado>304</Ado><Data>0000</Data>`), ErrValue, "allowed: frame, cycle"},
		{"bad transition", eniOf(slaveOf("T", 1, 0, `<InitCmds><InitCmd><Transition>PO</Transition><Cmd>0</Cmd><Ado>0</Ado><DataLength>0</DataLength></InitCmd></InitCmds>`), ""),
			ErrValue, `Transition: value "PO": allowed: IP, PI, PS`},
		{"sdo ccs", coeCmd(`<Transition>PS</Transition><Timeout>0</Timeout><Ccs>3</Ccs><Index>1</Index><SubIndex>0</SubIndex><Data>00</Data>`), ErrValue,
			"allowed: 1 (SDO download, a write) or 2 (upload, a read)"},
		{"sdo download without data", coeCmd(`<Transition>PS</Transition><Timeout>0</Timeout><Ccs>1</Ccs><Index>#x1c12</Index><SubIndex>0</SubIndex>`), ErrMissing,
			"Slave(T6)/Mailbox/CoE/InitCmds/InitCmd: required <Data> missing: an SDO download"},
		{"sdo without timeout", coeCmd(`<Transition>PS</Transition><Ccs>1</Ccs><Index>1</Index><SubIndex>0</SubIndex><Data>00</Data>`), ErrMissing, "<Timeout> missing"},
		{"sm type", eniOf(slaveOf("T", 1, 0, `<ProcessData><Sm2><Type>Output</Type><StartAddress>0</StartAddress><ControlByte>0</ControlByte><Enable>1</Enable></Sm2></ProcessData>`), ""),
			ErrValue, `Sm2/Type: value "Output": allowed: Outputs, Inputs, MBoxOut, MBoxIn`},
		{"previous port", eniOf(slaveOf("T", 1, 0, `<PreviousPort><Port>E</Port></PreviousPort>`), ""), ErrValue, "allowed: A, B, C, D"},
		{"cyclic state", eniOf("", `<Cyclic><Frame><Cmd><State>RUN</State><Cmd>7</Cmd><Ado>304</Ado><DataLength>2</DataLength></Cmd></Frame></Cyclic>`), ErrValue,
			"allowed: INIT, PREOP, SAFEOP, OP, BOOT"},
		{"variable beyond its image", eniOf("", `<ProcessImage><Outputs><ByteSize>2</ByteSize><Variable><Name>x</Name><BitSize>16</BitSize><BitOffs>8</BitOffs></Variable></Outputs></ProcessImage>`),
			ErrValue, `variable "x" (bits 8 to 23) lies beyond the Outputs image of 2 bytes`},
		{"ethertype", `<EtherCATConfig><Config><Master><Info><EtherType>0800</EtherType></Info></Master></Config></EtherCATConfig>`, ErrValue, "88a4"},
		{"mac", `<EtherCATConfig><Config><Master><Info><Source>0102</Source></Info></Master></Config></EtherCATConfig>`, ErrValue, "6 bytes"},
		{"no master", `<EtherCATConfig><Config/></EtherCATConfig>`, ErrMissing, "required <Master> missing"},
		{"no config", `<EtherCATConfig/>`, ErrMissing, "required <Config> missing"},
		{"an ESI", `<EtherCATInfo/>`, ErrRoot, "this file kind has <EtherCATConfig>"},
		{"malformed", "<EtherCATConfig><Config>\n<Slave><Info></Slave>", ErrSyntax, "x.xml:2:"},
		{"external entity", `<!DOCTYPE EtherCATConfig [<!ENTITY x SYSTEM "file:///etc/shadow">]><EtherCATConfig>&x;</EtherCATConfig>`, ErrDoctype, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Read(strings.NewReader(tt.doc), "x.xml", Options{})
			if c != nil {
				t.Error("a Config came with the error")
			}
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %v with %q", err, tt.kind, tt.want)
			}
		})
	}
}

// TestWarnings checks that what is not read is listed once per path, with
// the reason and a count.
func TestWarnings(t *testing.T) {
	slave := slaveOf("T", 1, 0, `<HotConnect><GroupMemberCnt>1</GroupMemberCnt></HotConnect>`+
		`<Mailbox><Send><Start>1</Start><Length>1</Length></Send><Recv><Start>2</Start><Length>1</Length></Recv>`+
		`<EoE><InitCmds><InitCmd><Transition>PS</Transition><Data>01</Data></InitCmd></InitCmds></EoE></Mailbox><Futuristic a="1"/>`)
	cyc := `<Cyclic><Priority>1</Priority><Frame><Cmd><State>OP</State><Cmd>12</Cmd><Addr>0</Addr><DataLength>1</DataLength>` +
		`<CopyInfos><CopyInfo><SrcBitOffs>0</SrcBitOffs></CopyInfo></CopyInfos></Cmd>` +
		`<Cmd><State>OP</State><Cmd>12</Cmd><Addr>0</Addr><DataLength>1</DataLength><CopyInfos/></Cmd></Frame></Cyclic>`
	c, err := Read(strings.NewReader(eniOf(slave, cyc)), "w.xml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, w := range c.Warnings {
		got[w.Path] = w.Reason + " ×" + itoa(w.Count)
	}
	want := map[string]string{
		"EtherCATConfig/Config/Slave/HotConnect":           "ignored: hot-connect groups are not supported ×1",
		"EtherCATConfig/Config/Slave/Mailbox/EoE":          "ignored: EoE settings and init commands are not supported; only CoE init commands are run ×1",
		"EtherCATConfig/Config/Slave/Futuristic":           "ignored: not read by ecagent ×1",
		"EtherCATConfig/Config/Cyclic/Priority":            "ignored: the application schedules its cycle ×1",
		"EtherCATConfig/Config/Cyclic/Frame/Cmd/CopyInfos": "ignored: slave-to-slave copies (CopyInfos) are not supported: no input is copied to an output ×2",
	}
	if len(got) != len(want) {
		t.Errorf("warnings %v", c.Warnings)
	}
	for p, r := range want {
		if got[p] != r {
			t.Errorf("%s: %q, want %q", p, got[p], r)
		}
	}
}

// TestSOEMShape reads an ENI in the shape of SOEM's ENI sample: 0x hex,
// <Receive> for <Recv>, no process image.
func TestSOEMShape(t *testing.T) {
	doc := `<?xml version="1.0"?>
<EtherCATConfig Version="1.3"><Config><Master><Info><Name><![CDATA[master]]></Name><Destination>ffffffffffff</Destination><Source>010101010101</Source></Info></Master>
<Slave><Info><Name><![CDATA[A]]></Name><VendorId>1</VendorId><ProductCode>0x1234</ProductCode><RevisionNo>0</RevisionNo><SerialNo>0</SerialNo></Info>
<Mailbox><Send><Start>0x1000</Start><Length>128</Length></Send><Receive><Start>0x1100</Start><Length>128</Length><PollTime>5</PollTime></Receive>
<Protocol>CoE</Protocol><CoE><InitCmds><InitCmd CompleteAccess="1"><Comment><![CDATA[SM2 PDO assignment]]></Comment><Transition>PS</Transition>
<Timeout>3</Timeout><Ccs>2</Ccs><Index>0x1c12</Index><SubIndex>0</SubIndex><Data>0300011607161c16</Data></InitCmd></InitCmds></CoE></Mailbox></Slave>
</Config></EtherCATConfig>`
	c, err := Read(strings.NewReader(doc), "soem.xml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Slaves[0]
	if s.Info.ProductCode != 0x1234 || s.Info.PhysAddr != nil || s.Info.AutoIncAddr != nil || s.Mailbox.Recv.Start != 0x1100 || *s.Mailbox.PollTime != 5 {
		t.Errorf("slave %+v mailbox %+v", s.Info, s.Mailbox)
	}
	ic := s.Mailbox.CoE.InitCmds[0]
	if ic.Index != 0x1C12 || !ic.CompleteAccess || ic.Download() || len(ic.Data) != 8 {
		t.Errorf("init cmd %+v", ic)
	}
}

// TestReadLimits checks the options bound what is read.
func TestReadLimits(t *testing.T) {
	doc := eniOf(slaveOf("T", 1, 0, strings.Repeat(`<PreviousPort><Port>A</Port></PreviousPort>`, 50)), "")
	for _, tt := range []struct {
		opt  Options
		kind error
	}{
		{Options{MaxFileBytes: 100}, ErrTooLarge},
		{Options{MaxElements: 50}, ErrTooManyElements},
		{Options{MaxPartElements: 50}, ErrTooManyElements},
		{Options{MaxDepth: 3}, ErrTooDeep},
	} {
		if _, err := Read(strings.NewReader(doc), "x.xml", tt.opt); !errors.Is(err, tt.kind) {
			t.Errorf("%+v: err = %v, want %v", tt.opt, err, tt.kind)
		}
	}
	if _, err := Read(strings.NewReader(doc), "x.xml", Options{}); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
