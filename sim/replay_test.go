package sim

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/pcapng"
)

// realHW holds the real-hardware captures and SII images; the replays of
// every capture on a virtual clock are in the replay subpackage.
const realHW = "../testdata/real-hw"

// capturePair is a request a real master sent and the answer real devices
// gave, as replay_fidelity.py pairs them: a frame with bit 1 of the first
// source MAC byte clear followed by one with it set.
type capturePair struct{ req, resp []byte }

func capturePairs(tb testing.TB, name string) []capturePair {
	tb.Helper()
	pkts, err := pcapng.ReadFile(filepath.Join(realHW, "captures", name+".pcapng"))
	if err != nil {
		tb.Fatal(err)
	}
	var frames [][]byte
	for _, p := range pkts {
		if len(p.Data) >= 16 && binary.BigEndian.Uint16(p.Data[12:]) == wire.EtherType {
			frames = append(frames, p.Data)
		}
	}
	var out []capturePair
	for i := 0; i < len(frames)-1; {
		a, b := frames[i], frames[i+1]
		if a[6]&0x02 == 0 && b[6]&0x02 != 0 {
			out = append(out, capturePair{a, b})
			i += 2
		} else {
			i++
		}
	}
	return out
}

// datagrams decodes a frame's datagrams (copies).
func datagrams(frame []byte) []wire.Datagram {
	var f wire.Frame
	if f.Decode(frame) != nil {
		return nil
	}
	var out []wire.Datagram
	it := f.Datagrams()
	var d wire.Datagram
	for it.Next(&d) {
		d.Data = append([]byte(nil), d.Data...)
		out = append(out, d)
	}
	return out
}
