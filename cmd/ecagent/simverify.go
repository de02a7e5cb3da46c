package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/esi"
	"github.com/ecagent/ecagent/internal/pcapng"
	"github.com/ecagent/ecagent/sim"
	"github.com/ecagent/ecagent/sim/replay"
)

func simVerifyHelp() help {
	return help{
		usage: "CAPTURE --devices LIST [--min PERCENT] [--json]",
		about: "Replay the requests of a real master in CAPTURE (pcapng or pcap, EtherType 0x88A4) against " +
			"simulated devices, on a clock driven by the capture's timestamps, and compare every answer " +
			"with the one the real devices gave: working counter and data (times at 0x0900-0x09FF on the " +
			"working counter only). Prints the share of identical datagrams and the differences grouped " +
			"by command and register. The result does not depend on the host's load.",
		notes: "Answers are paired with their requests by datagram index and frame order, so captures of " +
			"masters with several frames in flight score right. A capture that starts after the master " +
			"configured the devices is detected and the segment preset to match; --preset-address overrides. " +
			"Device times are drawn from each device's measured spread with --seed (printed; the same seed " +
			"gives the same result). Bytes no model can know (a mailbox read past the message, reserved " +
			"registers) are counted apart, not scored. Exit status 1 when the score is below the --min bar. " +
			"With --esi, timings, chip registers and (where the ESI agrees) the real EEPROM layout stay the profiles'.",
		examples: []string{
			"ecagent sim verify line3.pcapng --devices EK1100,EL2004,EL1014,AKD --min 99",
			"ecagent sim verify run.pcapng --devices EK1100,el3004.bin --json | jq .groups",
			"ecagent sim verify run.pcapng --devices EK1914,EL3004 --esi esi/profiles",
		},
	}
}

// simVerifyCommand is `ecagent sim verify`.
func simVerifyCommand(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "sim verify", simVerifyHelp())
	devices := fs.StringSlice("devices", nil, "devices the capture was made with, in ring order: "+
		"built-in models or SII image paths (*.bin) (required)")
	minScore := fs.Float64("min", 0, "fail (exit status 1) below this `PERCENT` of identical datagrams")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	examples := fs.Int("examples", 1, "differing datagrams shown per group")
	presetAddr := fs.Uint16("preset-address", 0, "start with station addresses from this one on (0: detect)")
	presetState := fs.String("preset-state", "PREOP", "with --preset-address: INIT or PREOP")
	seed := fs.Uint64("seed", 1, "seed of the devices' time draws (the same seed, the same result)")
	esiDir := fs.String("esi", "", "take the built-in models of --devices from their ESI descriptions in `DIR` where it has them")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() != 1 {
		return usageError{errors.New("sim verify: want one CAPTURE file")}
	}
	if !fs.Changed("devices") {
		// --devices "" is a segment without devices (a capture of a
		// master finding none); no --devices at all is a mistake.
		return usageError{errors.New("sim verify: --devices is required (the devices the capture was made with)")}
	}
	opts := replay.Options{Examples: max(*examples, 1), Segment: []sim.Option{sim.WithSeed(*seed)}}
	if *presetAddr != 0 {
		st, ok := esc.ParseALState(strings.ToUpper(*presetState))
		if !ok || (st != esc.StateInit && st != esc.StatePreOp) {
			return usageError{fmt.Errorf("sim verify: --preset-state %q: want INIT or PREOP", *presetState)}
		}
		opts.Setup = &replay.Setup{FirstStation: *presetAddr, State: st}
	}
	path := fs.Arg(0)
	pkts, err := pcapng.ReadFile(path)
	if err != nil {
		return fmt.Errorf("sim verify: %w", err)
	}
	frames := make([]replay.Frame, len(pkts))
	for i, p := range pkts {
		frames[i] = replay.Frame{Time: p.Time, Data: p.Data}
	}
	c := replay.FromFrames(frames)
	devs, err := sim.ParseDevices(*devices)
	if err != nil {
		return usageError{fmt.Errorf("sim verify: --devices: %w", err)}
	}
	var notes []string
	if *esiDir != "" {
		if notes, err = devicesFromESI(*esiDir, *devices, devs); err != nil {
			return fmt.Errorf("sim verify: --esi: %w", err)
		}
	}
	for _, d := range devs {
		if n := d.ProfileNote(); n != "" {
			notes = append(notes, n)
		}
	}
	r, err := replay.Run(c, devs, opts)
	if err != nil {
		return fmt.Errorf("sim verify: %s: %w", path, err)
	}
	rep := newVerifyReport(filepath.Base(path), *devices, c, r)
	rep.Seed, rep.Notes = *seed, notes
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.writeText(e.stdout)
	}
	if err != nil {
		return fmt.Errorf("sim verify: %w", err)
	}
	if r.Score() < *minScore {
		return fmt.Errorf("sim verify: %s: %.2f%% of datagrams identical, below --min %g%%", path, r.Score(), *minScore)
	}
	return nil
}

// devicesFromESI replaces each device of devs that specs names as a
// built-in model by the device its description in the ESI catalogue dir
// gives, for the exact identity and revision of the model's profile (the
// profile table still gives what ESI does not carry: chip registers and
// timings). It returns one note per device saying where it came from.
func devicesFromESI(dir string, specs []string, devs []*sim.Device) ([]string, error) {
	cat, err := esi.LoadDir(dir, esi.Options{})
	if err != nil {
		return nil, err
	}
	var notes []string
	for i, spec := range specs {
		vendor, product, revision, ok := sim.ModelIdentity(spec)
		if !ok {
			continue
		}
		m, err := cat.Lookup(vendor, product, revision)
		if err != nil || !m.Exact {
			notes = append(notes, fmt.Sprintf("%s: no ESI description of revision %#08x in %s, the built-in model", spec, revision, dir))
			continue
		}
		d, err := sim.DeviceFromESI(m.File, m.Device)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		devs[i] = d
		notes = append(notes, fmt.Sprintf("%s: from its ESI description, %s", spec, filepath.Base(m.File.Name)))
	}
	return notes, nil
}

// verifyReport is what sim verify prints, as text or JSON.
type verifyReport struct {
	Capture    string        `json:"capture"`
	Devices    []string      `json:"devices"`
	Notes      []string      `json:"profile_notes,omitempty"` // devices without a profile of their revision
	Seed       uint64        `json:"seed"`
	Exchanges  int           `json:"exchanges"`
	Lost       int           `json:"lost_requests"`
	Strays     int           `json:"stray_answers"`
	Preset     string        `json:"preset,omitempty"`
	Datagrams  int           `json:"datagrams"`
	Same       int           `json:"identical"`
	Score      float64       `json:"score_percent"`
	WKCScore   float64       `json:"wkc_percent"`
	Unanswered int           `json:"unanswered"`
	Undefined  int           `json:"undefined_bytes"` // not scored: no model can know them
	Groups     []verifyGroup `json:"groups"`
}

// verifyGroup is one group of differing datagrams in a verifyReport.
type verifyGroup struct {
	Group    string          `json:"group"` // "FPRD 0x0502"
	Count    int             `json:"count"`
	WKC      int             `json:"wkc_differ"`
	Examples []verifyExample `json:"examples"`
}

// verifyExample is one differing datagram of a verifyGroup.
type verifyExample struct {
	TimeMS   float64 `json:"time_ms"` // since the capture's first frame
	Exchange int     `json:"exchange"`
	ADP      string  `json:"adp"`
	Length   int     `json:"length"`
	Offset   int     `json:"first_difference"` // byte offset in the data
	RealWKC  uint16  `json:"real_wkc"`
	SimWKC   uint16  `json:"sim_wkc"`
	Real     string  `json:"real"` // hex
	Sim      string  `json:"sim"`  // hex; "" when unanswered
}

func newVerifyReport(name string, devices []string, c *replay.Capture, r *replay.Result) verifyReport {
	rep := verifyReport{Capture: name, Devices: devices, Exchanges: len(c.Exchanges), Lost: r.Lost,
		Strays: r.Strays, Datagrams: r.Datagrams, Same: r.Same, Score: round2(r.Score()),
		WKCScore: round2(r.WKCScore()), Unanswered: r.Unanswered, Undefined: r.Undefined, Groups: []verifyGroup{}}
	if r.Setup != nil {
		rep.Preset = fmt.Sprintf("0x%04x %v", r.Setup.FirstStation, r.Setup.State)
	}
	for _, g := range r.Groups {
		vg := verifyGroup{Group: g.Key(), Count: g.Count, WKC: g.WKC}
		for _, m := range g.Examples {
			vg.Examples = append(vg.Examples, verifyExample{TimeMS: float64(m.Time/1000) / 1000,
				Exchange: m.Exchange, ADP: fmt.Sprintf("0x%04x", m.ADP), Length: m.Length, Offset: m.Offset,
				RealWKC: m.RealWKC, SimWKC: m.SimWKC, Real: hex.EncodeToString(m.Real), Sim: hex.EncodeToString(m.Sim)})
		}
		rep.Groups = append(rep.Groups, vg)
	}
	return rep
}

// round2 rounds a percentage to two decimals for the JSON report (--min
// compares the exact share).
func round2(p float64) float64 { return math.Round(p*100) / 100 }

func (rep *verifyReport) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "capture   %s: %d exchanges (requests without answer: %d, answers without request: %d)\n",
		rep.Capture, rep.Exchanges, rep.Lost, rep.Strays)
	fmt.Fprintf(&b, "devices   %s", strings.Join(rep.Devices, ","))
	if rep.Preset != "" {
		fmt.Fprintf(&b, " (preset: %s, the capture starts mid-session)", rep.Preset)
	}
	fmt.Fprintf(&b, ", seed %d\n", rep.Seed)
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "profile   %s\n", n)
	}
	fmt.Fprintf(&b, "fidelity  %.1f%% identical (WKC %.1f%%) of %d datagrams, %d unanswered; %d bytes undefined, not scored\n",
		rep.Score, rep.WKCScore, rep.Datagrams, rep.Unanswered, rep.Undefined)
	if len(rep.Groups) == 0 {
		b.WriteString("no differences\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DIFFERS IN\tCOUNT\tWKC\tAT ms\tADP\tFROM BYTE\tREAL (wkc data)\tSIMULATED")
	for _, g := range rep.Groups {
		for i, x := range g.Examples {
			name, count, wkc := g.Group, fmt.Sprint(g.Count), fmt.Sprint(g.WKC)
			if i > 0 {
				name, count, wkc = "", "", ""
			}
			sim := fmt.Sprintf("%d %s", x.SimWKC, window(x.Sim, x.Offset))
			if x.Sim == "" && x.SimWKC == 0 {
				sim = "(no answer)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%s\t%d\t%d %s\t%s\n", name, count, wkc, x.TimeMS, x.ADP,
				x.Offset, x.RealWKC, window(x.Real, x.Offset), sim)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// window shows up to 12 bytes of hex data from byte offset from on.
func window(h string, from int) string {
	lo := min(2*from, len(h))
	if len(h)-lo > 24 {
		return h[lo:lo+24] + "…"
	}
	return h[lo:]
}
