package eni

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// fuzzSeeds are small files in every shape the reader takes, so that the
// fuzzer starts from each path and stays fast.
func fuzzSeeds(tb testing.TB) [][]byte {
	seeds := [][]byte{
		[]byte(eniOf(slaveOf("T1", 1001, 0, `<PreviousPort Selected="1"><Port>B</Port><PhysAddr>1000</PhysAddr></PreviousPort>`+
			`<DC><PotentialReferenceClock>1</PotentialReferenceClock><CycleTime0>1000000</CycleTime0><CycleTime1>-5</CycleTime1><ShiftTime>250000</ShiftTime></DC>`), "")),
		[]byte(eniOf(slaveOf("T2", 1002, 65535, `<ProcessData><Send Sm2="1"><BitStart>208</BitStart><BitLength>4</BitLength></Send>`+
			`<Sm2><Type>Outputs</Type><DefaultSize>1</DefaultSize><StartAddress>#x0f00</StartAddress><ControlByte>#x44</ControlByte><Enable>1</Enable><Pdo>#x1600</Pdo></Sm2>`+
			`<RxPdo Fixed="1" Sm="2"><Index>#x1600</Index><Name>C</Name><Exclude>#x1601</Exclude><Entry><Index>#x7000</Index><SubIndex>1</SubIndex><BitLen>1</BitLen><Name>O</Name><DataType>BOOL</DataType></Entry>`+
			`<Entry><Index>0</Index><BitLen>3</BitLen></Entry></RxPdo></ProcessData>`+
			`<InitCmds><InitCmd><Transition>PS</Transition><Transition>IP</Transition><Comment>c</Comment><Requires>cycle</Requires><Cmd>4</Cmd><Adp>1002</Adp><Ado>304</Ado><Data>0000</Data>`+
			`<Cnt>1</Cnt><Retries>3</Retries><Validate Type="EQ"><Data>0400</Data><DataMask>1f00</DataMask><Timeout>5000</Timeout></Validate></InitCmd></InitCmds>`), "")),
		[]byte(eniOf(slaveOf("T6", 1006, 65531, `<Mailbox DataLinkLayer="true"><Send><Start>4096</Start><Length>128</Length></Send><Recv><Start>4224</Start><Length>128</Length><PollTime>10</PollTime></Recv>`+
			`<BootStrap><Send><Start>1</Start><Length>2</Length></Send><Recv><Start>3</Start><Length>4</Length></Recv></BootStrap><Protocol>CoE</Protocol>`+
			`<CoE><InitCmds><InitCmd CompleteAccess="1" Fixed="1"><Transition>PS</Transition><Timeout>0</Timeout><Ccs>1</Ccs><Index>#x1c12</Index><SubIndex>0</SubIndex><Data>01000016</Data><Disabled>0</Disabled></InitCmd></InitCmds>`+
			`<Profile><ChannelInfo><ProfileNo>402</ProfileNo></ChannelInfo></Profile></CoE><EoE/></Mailbox>`),
			`<Cyclic><CycleTime>1000</CycleTime><Frame><Cmd><State>OP</State><Cmd>12</Cmd><Addr>#x10000</Addr><DataLength>4</DataLength><Cnt>3</Cnt><InputOffs>26</InputOffs><OutputOffs>26</OutputOffs></Cmd>`+
				`<Cmd><State>PREOP</State><Cmd>7</Cmd><Adp>0</Adp><Ado>304</Ado><Data>0000</Data></Cmd></Frame></Cyclic>`+
				`<ProcessImage><Inputs><ByteSize>32</ByteSize><Variable><Name>a.b</Name><DataType>INT</DataType><BitSize>16</BitSize><BitOffs>208</BitOffs></Variable></Inputs><Outputs><ByteSize>0</ByteSize></Outputs></ProcessImage>`)),
		[]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><EtherCATConfig><Config><Master><Info><Name>` + "\xe4" + `</Name><Destination>ffffffffffff</Destination><EtherType>a488</EtherType></Info>` +
			`<MailboxStates><StartAddr>#x09000000</StartAddr><Count>1</Count></MailboxStates><InitCmds><InitCmd><Transition>IP</Transition><BeforeSlave>true</BeforeSlave><Cmd>8</Cmd><Ado>#x600</Ado><DataLength>16</DataLength></InitCmd></InitCmds></Master></Config></EtherCATConfig>`),
	}
	for _, p := range testFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// FuzzENI checks that Read never panics, that an error always comes with
// no Config and says where it is (an *Error), and that what Read takes
// holds together: positions and addresses unique, variables inside
// their images.
func FuzzENI(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	opt := Options{MaxFileBytes: 1 << 20, MaxElements: 1 << 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Read(bytes.NewReader(b), "fuzz.xml", opt)
		if err != nil {
			if c != nil {
				t.Fatalf("a Config came with %v", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error without a place: %v", err)
			}
			return
		}
		if c == nil {
			t.Fatal("no Config and no error")
		}
		_ = summary(c)
		seen := map[int]bool{}
		for _, s := range c.Slaves {
			if p, ok := s.Info.Position(); ok {
				if seen[p] {
					t.Fatalf("two slaves at position %d", p)
				}
				seen[p] = true
			}
		}
		if pi := c.ProcessImage; pi != nil {
			for _, v := range pi.Inputs.Variables {
				if uint64(v.BitOffs)+uint64(v.BitSize) > 8*uint64(pi.Inputs.ByteSize) {
					t.Fatalf("variable %q beyond the inputs", v.Name)
				}
			}
		}
	})
}
