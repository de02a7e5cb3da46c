// Package capture reads the real masters' frame captures of
// testdata/real-hw/captures for tests: the ground truth the codecs and the
// simulator are checked against. Tests only (see package testsupport).
package capture

import (
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/pcapng"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// Packets returns the packets of the capture name (with or without its
// .pcapng ending) in testdata/real-hw/captures.
func Packets(tb testing.TB, name string) []pcapng.Packet {
	tb.Helper()
	if !strings.HasSuffix(name, ".pcapng") {
		name += ".pcapng"
	}
	pkts, err := pcapng.ReadFile(testsupport.RealHW(tb, "captures", name))
	if err != nil {
		tb.Fatal(err)
	}
	return pkts
}

// Datagrams returns every datagram of every EtherCAT frame of the capture
// name, in order; packets that are no EtherCAT frame are skipped. A
// datagram's Data points into its packet: clone it to keep it past a
// change.
func Datagrams(tb testing.TB, name string) []wire.Datagram {
	tb.Helper()
	var out []wire.Datagram
	for _, p := range Packets(tb, name) {
		var f wire.Frame
		if f.Decode(p.Data) != nil {
			continue
		}
		it := f.Datagrams()
		var d wire.Datagram
		for it.Next(&d) {
			out = append(out, d)
		}
	}
	return out
}
