package replay

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/internal/pcapng"
	"github.com/ecagent/ecagent/sim"
)

const captures = "../../testdata/real-hw/captures"

// minScore is the share of datagrams every real capture must be answered
// identically (WKC and data, time registers on WKC only).
const minScore = 99.0

func manifest(t *testing.T) []Entry {
	t.Helper()
	entries, err := ReadManifest(filepath.Join(captures, "devices.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestManifestListsEveryCapture(t *testing.T) {
	var listed []string
	for _, e := range manifest(t) {
		listed = append(listed, filepath.Base(e.Capture))
	}
	files, err := os.ReadDir(captures)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if n := f.Name(); (strings.HasSuffix(n, ".pcapng") || strings.HasSuffix(n, ".pcap")) && !slices.Contains(listed, n) {
			t.Errorf("%s is not in devices.txt: no replay test runs it", n)
		}
	}
}

// read reads a capture file and pairs its frames.
func read(t *testing.T, path string) *Capture {
	t.Helper()
	pkts, err := pcapng.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	frames := make([]Frame, len(pkts))
	for i, p := range pkts {
		frames[i] = Frame{Time: p.Time, Data: p.Data}
	}
	return FromFrames(frames)
}

func replayEntry(t *testing.T, e Entry) *Result {
	t.Helper()
	c := read(t, e.Capture)
	devs, err := sim.ParseDevices(e.Devices)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(c, devs, Options{Examples: 2})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReplayEveryCapture(t *testing.T) {
	for _, e := range manifest(t) {
		name := strings.TrimSuffix(filepath.Base(e.Capture), ".pcapng")
		t.Run(name, func(t *testing.T) {
			r := replayEntry(t, e)
			t.Logf("%s: fidelity %.1f%% (WKC %.1f%%) of %d datagrams, %d unanswered, %d requests lost, %d stray answers",
				name, r.Score(), r.WKCScore(), r.Datagrams, r.Unanswered, r.Lost, r.Strays)
			for _, g := range r.Groups {
				x := g.Examples[0]
				t.Logf("  %-12s %4d differ (%d WKC), e.g. at %.3f ms adp=%#04x wkc real=%d sim=%d data real=% x sim=% x",
					g.Key(), g.Count, g.WKC, float64(x.Time)/1e6, x.ADP, x.RealWKC, x.SimWKC, cut(x.Real), cut(x.Sim))
			}
			if r.Score() < minScore {
				t.Errorf("fidelity %.1f%%, want ≥ %.0f%%", r.Score(), minScore)
			}
		})
	}
}

func cut(b []byte) []byte { return b[:min(len(b), 16)] }

// TestReplayIsDeterministic replays each capture twice and wants the same
// result: the virtual clock, not the host, times every behaviour.
func TestReplayIsDeterministic(t *testing.T) {
	for _, e := range manifest(t) {
		a, b := replayEntry(t, e), replayEntry(t, e)
		if a.Same != b.Same || a.SameWKC != b.SameWKC || a.Datagrams != b.Datagrams || len(a.Groups) != len(b.Groups) {
			t.Errorf("%s: two replays differ: %d/%d vs %d/%d same", e.Capture, a.Same, a.Datagrams, b.Same, b.Datagrams)
		}
	}
}

// TestVLANTaggedCapture: a capture whose frames carry a VLAN tag replays
// as the untagged one.
func TestVLANTaggedCapture(t *testing.T) {
	e := manifest(t)[0]
	pkts, err := pcapng.ReadFile(e.Capture)
	if err != nil {
		t.Fatal(err)
	}
	var plain, tagged []Frame
	for _, p := range pkts {
		plain = append(plain, Frame{Time: p.Time, Data: p.Data})
		if len(p.Data) < 14 {
			continue
		}
		b := append([]byte(nil), p.Data[:12]...)
		b = append(b, 0x81, 0x00, 0x00, 0x05)
		tagged = append(tagged, Frame{Time: p.Time, Data: append(b, p.Data[12:]...)})
	}
	run := func(frames []Frame) *Result {
		devs, err := sim.ParseDevices(e.Devices)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(FromFrames(frames), devs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := run(plain), run(tagged)
	if a.Datagrams == 0 || a.Datagrams != b.Datagrams || a.Same != b.Same {
		t.Errorf("tagged %d/%d identical, untagged %d/%d", b.Same, b.Datagrams, a.Same, a.Datagrams)
	}
}
