package replay

import (
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// TestUndefinedBytesAreNotScored: the EL3004's send mailbox reads in the
// ethercrab capture hold the buffer's stale bytes past the CoE reply;
// they are counted apart, and the capture's defined bytes all match.
func TestUndefinedBytesAreNotScored(t *testing.T) {
	for _, e := range manifest(t) {
		if !strings.Contains(e.Capture, "ek1914-el3004") {
			continue
		}
		r := replayEntry(t, e)
		if r.Undefined == 0 {
			t.Errorf("no undefined bytes, want those past the mailbox messages")
		}
		if r.Same != r.Datagrams {
			t.Errorf("%d of %d identical, want all (groups %v)", r.Same, r.Datagrams, r.Groups)
		}
		return
	}
	t.Fatal("no EK1914+EL3004 capture in the manifest")
}

// TestDefinedBytesStayScored: a difference in a defined byte (the
// mailbox header's length) still makes the datagram differ, and an
// undefined byte is reported at the first defined difference.
func TestDefinedBytesStayScored(t *testing.T) {
	mk := func(data ...byte) []wire.Datagram {
		return []wire.Datagram{{Command: wire.FPRD, Address: wire.PhysicalAddress(0x1001, 0x1080), Data: data, WKC: 1}}
	}
	undef := [][]bool{{false, false, false, true, true}}
	ex := &Exchange{}
	var r Result
	r.examples = 1
	r.compare(0, ex, mk(4, 0, 9, 1, 2), mk(4, 0, 9, 7, 7), undef)
	if r.Same != 1 || r.Undefined != 2 {
		t.Errorf("undefined bytes differ: same %d, undefined %d; want 1 and 2", r.Same, r.Undefined)
	}
	r.compare(1, ex, mk(4, 0, 9, 1, 2), mk(5, 0, 9, 1, 2), undef)
	if r.Same != 1 || len(r.Groups) != 1 || r.Groups[0].Examples[0].Offset != 0 {
		t.Errorf("header differs: same %d, groups %+v; want a difference at byte 0", r.Same, r.Groups)
	}
}
