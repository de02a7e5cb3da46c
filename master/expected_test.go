package master_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/sim"
)

// referenceExpected is the reference segment as an ENI describes it: the
// identities, each terminal behind port B of the one before.
func referenceExpected() []master.ExpectedSlave {
	ids := []struct {
		name              string
		product, revision uint32
	}{
		{"Term 1 (EK1100)", 0x044c2c52, 0x00120000}, {"Term 2 (EL2004)", 0x07d43052, 0x00100000},
		{"Term 3 (EL2004)", 0x07d43052, 0x00100000}, {"Term 4 (EL1014)", 0x03f63052, 0x00130000},
		{"Term 5 (EL1014)", 0x03f63052, 0x00130000}, {"Term 6 (EL4132)", 0x10243052, 0x00140000},
		{"Term 7 (EK1110)", 0x04562c52, 0x00110000},
	}
	out := make([]master.ExpectedSlave, len(ids))
	for i, id := range ids {
		out[i] = master.ExpectedSlave{Position: i, Name: id.name, VendorID: 2, ProductCode: id.product, Revision: id.revision,
			Previous: i - 1, OutputBits: -1, InputBits: -1}
		if i > 0 {
			out[i].PreviousPort = "B"
		}
	}
	return out
}

// TestExpectedTopology scans the reference segment against configurations
// that fit it and that do not: each difference is a *TopologyError naming
// the slave, the field, what was expected and what was found, and it
// counts as a segment not as configured.
func TestExpectedTopology(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func([]master.ExpectedSlave) []master.ExpectedSlave
		want []string // nil: the scan succeeds
	}{
		{"as configured", func(e []master.ExpectedSlave) []master.ExpectedSlave { return e }, nil},
		{"product code", func(e []master.ExpectedSlave) []master.ExpectedSlave {
			e[3].ProductCode = 0x03f73052
			return e
		}, []string{"slave 3 (Term 4 (EL1014)): product code: expected 0x03f73052, found 0x03f63052 (EL1014)"}},
		{"revision exact", func(e []master.ExpectedSlave) []master.ExpectedSlave {
			e[5].Revision = 0x00130000
			return e
		}, []string{"slave 5 (Term 6 (EL4132)): revision: expected 0x00130000 (exact), found 0x00140000"}},
		{"revision minimum, older configured", func(e []master.ExpectedSlave) []master.ExpectedSlave {
			e[5].Revision, e[5].RevisionPolicy = 0x00130000, master.RevisionMinimum
			return e
		}, nil},
		{"revision minimum, newer configured", func(e []master.ExpectedSlave) []master.ExpectedSlave {
			e[5].Revision, e[5].RevisionPolicy = 0x00150000, master.RevisionMinimum
			return e
		}, []string{"slave 5 (Term 6 (EL4132)): revision: expected 0x00150000 (minimum), found 0x00140000"}},
		{"revision any", func(e []master.ExpectedSlave) []master.ExpectedSlave {
			e[5].Revision, e[5].RevisionPolicy = 0x7, master.RevisionAny
			return e
		}, nil},
		{"alias", func(e []master.ExpectedSlave) []master.ExpectedSlave {
			e[2].Alias, e[2].CheckAlias = 12, true
			return e
		}, []string{"slave 2 (Term 3 (EL2004)): alias: expected 12, found 0"}},
		{"previous port", func(e []master.ExpectedSlave) []master.ExpectedSlave {
			e[4].PreviousPort, e[4].Previous = "D", 2
			return e
		}, []string{"slave 4 (Term 5 (EL1014)): previous port: expected port D of slave 2, found port B of slave 3"}},
		{"a slave missing", func(e []master.ExpectedSlave) []master.ExpectedSlave {
			return append(e, master.ExpectedSlave{Position: 7, Name: "Term 8 (EL1014)", VendorID: 2, ProductCode: 0x03f63052, OutputBits: -1, InputBits: -1})
		}, []string{"slave 7 (Term 8 (EL1014)): presence: expected vendor 0x00000002 product 0x03f63052 revision 0x00000000, found no slave (the segment has 7 slaves, the configuration 8)"}},
		{"an extra slave", func(e []master.ExpectedSlave) []master.ExpectedSlave { return e[:6] },
			[]string{"slave 6 (not configured): presence: expected no slave (the configuration has 6 slaves), found EK1110, vendor 0x00000002 product 0x04562c52 revision 0x00110000"}},
		{"two differences", func(e []master.ExpectedSlave) []master.ExpectedSlave {
			e[1].VendorID, e[6].ProductCode = 3, 1
			return e
		}, []string{"slave 1 (Term 2 (EL2004)): vendor: expected 0x00000003", "slave 6 (Term 7 (EK1110)): product code: expected 0x00000001"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, referenceSet, master.Config{Expected: tc.edit(referenceExpected()), ExpectedSlaves: 99})
			_, err := b.m.Scan(context.Background())
			if tc.want == nil {
				if err != nil {
					t.Fatalf("scan: %v", err)
				}
				return
			}
			var te *master.TopologyError
			if !errors.As(err, &te) {
				t.Fatalf("scan: %v, want a *TopologyError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("scan error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestStartupCommands brings the reference segment up with startup
// commands: a register write validated by reading it back, and SDOs at
// PS. A register command whose validation never matches fails bring-up
// with a *StartupError naming the slave, the command and the transition,
// after its timeout.
func TestStartupCommands(t *testing.T) {
	exp := referenceExpected()
	exp[1].Startup = []master.StartupCmd{{Transition: "IP", Comment: "watchdog", Cmd: wire.FPWR, Ado: 0x0420,
		Data: []byte{0xe8, 0x03}, WKC: 1, Retries: 2, ValidateData: []byte{0xe8, 0x03}, ValidateMask: []byte{0xff, 0xff}}}
	exp[5].Startup = []master.StartupCmd{
		{Transition: "PS", SDO: true, Index: 0x1c12, SubIndex: 0, Data: []byte{0}},
		{Transition: "PS", SDO: true, Index: 0x1c12, SubIndex: 1, Data: []byte{0x00, 0x16}},
		{Transition: "PS", SDO: true, Index: 0x1c12, SubIndex: 0, Data: []byte{1}},
	}
	exp[5].OutputBits, exp[5].InputBits = 16, 0
	b := newBench(t, referenceSet, master.Config{Expected: exp})
	bringUp(t, b)
	var reg [2]byte
	if err := b.m.Bus().FPRD(context.Background(), 0x1002, 0x0420, reg[:]); err != nil || reg != [2]byte{0xe8, 0x03} {
		t.Errorf("watchdog register of slave 1: % x (%v), want e8 03", reg, err)
	}
	if s := b.m.Slaves()[5]; s.OutputBits != 16 {
		t.Errorf("EL4132 with one RxPDO assigned by its startup SDOs: %d output bits, want 16", s.OutputBits)
	}

	exp = referenceExpected()
	exp[2].Startup = []master.StartupCmd{{Transition: "IP", Comment: "never so", Cmd: wire.FPRD, Ado: 0x0130,
		Data: []byte{0, 0}, Timeout: 50 * time.Millisecond, ValidateData: []byte{0x08}, ValidateMask: []byte{0x0f}}}
	b = newBench(t, referenceSet, master.Config{Expected: exp})
	err := b.m.BringUp(context.Background())
	var se *master.StartupError
	if !errors.As(err, &se) || se.Position != 2 || se.Transition != "IP" {
		t.Fatalf("bring-up: %v, want a *StartupError of slave 2 at IP", err)
	}
	if want := "slave 2 (Term 3 (EL2004)): startup command FPRD 0x0130 (never so) at IP"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	if st := b.m.Slaves()[2].State(); st != esc.StateInit {
		t.Errorf("slave 2 in %v, want INIT: the command runs before PREOP is requested", st)
	}
}

// TestReconnectChecksExpected reconnects a slave of a segment configured
// with Config.Expected: a replacement of a newer revision is taken under
// the revision policy minimum (bring-up's device had the older one) and
// gets the startup commands again; another model is refused with the
// field, expected and found.
func TestReconnectChecksExpected(t *testing.T) {
	exp := referenceExpected()[:2]
	exp = append(exp, master.ExpectedSlave{Position: 2, Name: "Term 3 (EL1014)", VendorID: 2, ProductCode: 0x03f63052,
		Revision: 0x00130000, PreviousPort: "B", Previous: 1, OutputBits: -1, InputBits: 4})
	exp[1].RevisionPolicy = master.RevisionMinimum
	exp[1].Startup = []master.StartupCmd{{Transition: "IP", Comment: "watchdog", Cmd: wire.FPWR, Ado: 0x0420, Data: []byte{0xe8, 0x03}, WKC: 1}}
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004", "EL1014"))
	m, l := linkedMaster(t, seg, master.Config{Expected: exp})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	img := seg.Devices()[1].SII()
	img[0x18], img[0x19], img[0x1A], img[0x1B] = 0x00, 0x00, 0x11, 0x00 // revision 0x00110000, word 0x0C
	newer, err := sim.DeviceFromSII(img, "EL2004")
	if err != nil {
		t.Fatal(err)
	}
	devs := newDevices(t, "EK1100", "EL1014")
	replaced := sim.NewSegment([]*sim.Device{devs[0], newer, devs[1]})
	if err := replaced.Preset(0x1001, esc.StateInit); err != nil {
		t.Fatal(err)
	}
	l.swap(replaced)
	if _, err := m.Reconnect(ctx, 1); err != nil {
		t.Fatalf("Reconnect of a newer revision under the policy minimum: %v", err)
	}
	if got := newer.Register(0x0420, 2); got[0] != 0xe8 || got[1] != 0x03 {
		t.Errorf("the replacement's watchdog register % x, want e8 03: its startup commands ran again", got)
	}

	other := sim.NewSegment(newDevices(t, "EK1100", "EL1014", "EL1014"))
	l.swap(other)
	_, err = m.Reconnect(ctx, 1)
	var mis *master.IdentityMismatchError
	if !errors.As(err, &mis) || mis.Topology == nil || mis.Topology.Field != "product code" {
		t.Fatalf("Reconnect of another model: %v, want an *IdentityMismatchError with the product code", err)
	}
	if want := "slave 1 (Term 2 (EL2004)): product code: expected 0x07d43052, found 0x03f63052"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
}

// TestExpectedProcessData brings the reference segment up with the
// EL4132 configured for both its RxPDOs (32 output bits) but startup SDOs
// that assign one: refused before the image is mapped, with both sizes
// and the PDOs the slave has.
func TestExpectedProcessData(t *testing.T) {
	exp := referenceExpected()
	exp[5].OutputBits, exp[5].InputBits = 32, 0
	exp[5].Startup = []master.StartupCmd{
		{Transition: "PS", SDO: true, Index: 0x1c12, SubIndex: 0, Data: []byte{0}},
		{Transition: "PS", SDO: true, Index: 0x1c12, SubIndex: 1, Data: []byte{0x00, 0x16}},
		{Transition: "PS", SDO: true, Index: 0x1c12, SubIndex: 0, Data: []byte{1}},
	}
	b := newBench(t, referenceSet, master.Config{Expected: exp})
	err := b.m.BringUp(context.Background())
	var te *master.TopologyError
	if !errors.As(err, &te) || te.Position != 5 || te.Field != "output bits" {
		t.Fatalf("bring-up: %v, want a *TopologyError of slave 5's output bits", err)
	}
	if want := "slave 5 (Term 6 (EL4132)): output bits: expected 32 (the configured PDO assignment), found 16 (PDOs 0x1600, from coe)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
}
