package replay

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/ecagent/ecagent/internal/pcapng"
	"github.com/ecagent/ecagent/sim"
)

// FuzzFromFrames feeds arbitrary frames, cut from a byte string at
// length prefixes, to the pairing and a replay: neither may panic, every
// exchange holds two EtherCAT frames, and each frame is used at most once.
func FuzzFromFrames(f *testing.F) {
	for _, name := range []string{"soem-sdinfo-ek1100-el1004.pcapng", "ethercrab-detect-ek1100-el1004.pcapng"} {
		pkts, err := pcapng.ReadFile(filepath.Join(captures, name))
		if err != nil {
			f.Fatal(err)
		}
		var seed []byte
		for _, p := range pkts[:min(len(pkts), 6)] {
			seed = binary.LittleEndian.AppendUint16(seed, uint16(len(p.Data)))
			seed = append(seed, p.Data...)
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var frames []Frame
		for at := int64(0); len(b) >= 2; at += 100_000 {
			n := min(int(binary.LittleEndian.Uint16(b)), len(b)-2)
			frames = append(frames, Frame{Time: at, Data: b[2 : 2+n]})
			b = b[2+n:]
		}
		c := FromFrames(frames)
		if 2*len(c.Exchanges)+c.Strays > len(frames) {
			t.Fatalf("%d exchanges and %d strays from %d frames", len(c.Exchanges), c.Strays, len(frames))
		}
		for i, ex := range c.Exchanges {
			if len(datagrams(ex.Request)) == 0 || len(datagrams(ex.Answer)) == 0 {
				t.Fatalf("exchange %d holds a frame without datagrams", i)
			}
		}
		devs, err := sim.ParseDevices([]string{"EK1100", "EL1004"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(c, devs, Options{})
		if err == nil && r.Same > r.Datagrams {
			t.Fatalf("%d identical of %d datagrams", r.Same, r.Datagrams)
		}
	})
}
