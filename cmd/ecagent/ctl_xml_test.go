package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esi"
)

// TestXMLReadsBackAsESI: the description `ecagent xml` makes of a slave is
// an ESI file the project's own reader takes, with the slave's identity,
// its PDOs as mapped and its dictionary, and says it is simulated.
func TestXMLReadsBackAsESI(t *testing.T) {
	code, out, errOut := runCLI(t, context.Background(), nil, "xml", "--sim", "-p", "5")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "simulated segment") {
		t.Errorf("no word of the simulated segment:\n%s", out)
	}
	f, err := esi.Read(strings.NewReader(out), "xml", esi.Options{})
	if err != nil {
		t.Fatalf("the ESI reader refuses it: %v\n%s", err, out)
	}
	if f.Vendor.ID != 2 || len(f.Devices) != 1 {
		t.Fatalf("vendor %#x, %d devices", f.Vendor.ID, len(f.Devices))
	}
	d := f.Devices[0]
	if d.Type != "EL4132" || d.ProductCode != 0x10243052 || d.RevisionNo != 0x00140000 || len(d.RxPDOs) != 2 ||
		d.RxPDOs[0].Index != 0x1600 || d.Mailbox == nil {
		t.Errorf("device %+v", d)
	}
	if dict := d.Dictionary(); dict == nil || len(dict.Objects) < 10 {
		t.Errorf("dictionary %+v", dict)
	}
}
