package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/sim/replay"
)

var updateSimVerify = flag.Bool("update-simverify", false, "rewrite the sim verify golden files in testdata/simverify")

const realCaptures = "../../testdata/real-hw/captures"

// runVerify runs `ecagent sim verify args...` in-process.
func runVerify(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := &env{stdout: &out, stderr: &errOut}
	code = dispatch(context.Background(), e, append([]string{"sim", "verify"}, args...))
	return code, out.String(), errOut.String()
}

func TestSimVerifyHelpFitsAScreen(t *testing.T) {
	var out bytes.Buffer
	var fs *pflag.FlagSet
	e := &env{stdout: &out, stderr: &out, flagSets: func(f *pflag.FlagSet) { fs = f }}
	if code := dispatch(context.Background(), e, []string{"sim", "verify", "--help"}); code != exitOK {
		t.Fatalf("sim verify --help: exit %d: %s", code, out.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) > 40 {
		t.Errorf("%d lines, want at most 40", len(lines))
	}
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > helpWidth {
			t.Errorf("line %d is %d columns wide, want at most %d: %q", i+1, n, helpWidth, l)
		}
	}
	for _, want := range []string{"Usage: ecagent sim verify", "Example", "--min", "--json", "--devices"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	for _, m := range flagToken.FindAllStringSubmatch(out.String(), -1) {
		if fs.Lookup(m[1]) == nil {
			t.Errorf("help names --%s, which sim verify does not accept", m[1])
		}
	}
}

func verifyManifest(t *testing.T) []replay.Entry {
	t.Helper()
	entries, err := replay.ReadManifest(filepath.Join(realCaptures, "devices.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no captures in devices.txt")
	}
	return entries
}

// TestSimVerifyEveryCapture runs sim verify on every real capture with
// --min 99 and checks its text and JSON against golden files.
func TestSimVerifyEveryCapture(t *testing.T) {
	for _, e := range verifyManifest(t) {
		name := strings.TrimSuffix(filepath.Base(e.Capture), filepath.Ext(e.Capture))
		t.Run(name, func(t *testing.T) {
			args := []string{e.Capture, "--devices", strings.Join(e.Devices, ","), "--min", "99"}
			code, out, errOut := runVerify(t, args...)
			t.Logf("%s", strings.SplitN(out, "\n", 4)[2])
			if code != exitOK {
				t.Fatalf("exit %d, want 0: %s\n%s", code, errOut, out)
			}
			// Golden files hold the output with the SII paths as the
			// manifest names them, independent of the directory.
			out = strings.ReplaceAll(out, realCaptures+"/", "")
			golden(t, filepath.Join("testdata", "simverify", name+".txt"), out)

			code, js, errOut := runVerify(t, append(args, "--json")...)
			if code != exitOK {
				t.Fatalf("--json: exit %d: %s", code, errOut)
			}
			var rep verifyReport
			if err := json.Unmarshal([]byte(js), &rep); err != nil {
				t.Fatalf("--json output does not parse: %v\n%s", err, js)
			}
			if rep.Datagrams == 0 || rep.Score < 99 || rep.Capture != filepath.Base(e.Capture) {
				t.Errorf("--json: %+v, want the capture's datagrams scored ≥ 99%%", rep)
			}
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *updateSimVerify {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-simverify to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update-simverify after checking):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestSimVerifyFailsBelowMin: a score under --min exits non-zero and says
// why; a wrong device list scores low.
func TestSimVerifyFailsBelowMin(t *testing.T) {
	capture := filepath.Join(realCaptures, "ethercrab-ek1914-el3004-mailbox.pcapng")
	code, out, errOut := runVerify(t, capture, "--devices", "EK1100,EL2004", "--min", "99")
	if code != exitFailure {
		t.Fatalf("wrong devices, --min 99: exit %d, want %d\n%s", code, exitFailure, out)
	}
	if !strings.Contains(errOut, "below --min 99%") {
		t.Errorf("stderr %q does not say the score is below --min", errOut)
	}
	if !strings.Contains(out, "DIFFERS IN") {
		t.Errorf("no mismatch table in:\n%s", out)
	}
}

func TestSimVerifyUsageErrors(t *testing.T) {
	capture := filepath.Join(realCaptures, "ethercrab-detect-ek1100-el1004.pcapng")
	for _, args := range [][]string{
		{capture},                              // no --devices
		{"--devices", "EK1100"},                // no capture
		{capture, "x", "--devices", "EK1100"},  // two captures
		{capture, "--devices", "NOSUCHDEVICE"}, // unknown model
		{capture, "--devices", "EK1100", "--preset-address", "0x1001", "--preset-state", "OP"},
	} {
		if code, _, _ := runVerify(t, args...); code != exitUsage {
			t.Errorf("sim verify %q: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, out, errOut := runVerify(t, capture, "--devices", ""); code != exitOK || !strings.Contains(out, "of 1 datagrams") {
		t.Errorf("--devices \"\" (no devices): exit %d: %s%s", code, out, errOut)
	}
	if code, _, _ := runVerify(t, "no-such.pcapng", "--devices", "EK1100"); code != exitFailure {
		t.Errorf("missing capture: exit %d, want %d", code, exitFailure)
	}
}

// TestSimVerifySameSeedSameJSON: the devices' times are drawn from their
// spreads with the seed the output names; the same seed gives byte-
// identical JSON, and the seeds show the spread.
func TestSimVerifySameSeedSameJSON(t *testing.T) {
	capture := filepath.Join(realCaptures, "ethercrab-ek1914-el3004-mailbox.pcapng")
	outs := map[string]bool{}
	for _, seed := range []string{"5", "5", "6", "7", "8"} {
		code, js, errOut := runVerify(t, capture, "--devices", "EK1914,EL3004", "--seed", seed, "--json")
		if code != exitOK {
			t.Fatalf("--seed %s: exit %d: %s", seed, code, errOut)
		}
		var rep verifyReport
		if err := json.Unmarshal([]byte(js), &rep); err != nil || fmt.Sprint(rep.Seed) != seed {
			t.Fatalf("--seed %s: seed %d in the output (%v)", seed, rep.Seed, err)
		}
		if seed == "5" && len(outs) == 1 && !outs[js] {
			t.Errorf("--seed 5 twice: the JSON differs")
		}
		outs[js] = true
	}
	if len(outs) < 2 {
		t.Errorf("four seeds gave the same result: no spread")
	}
}

// TestSimVerifySaysWhichProfile: a device of a revision without a profile
// is simulated with the nearest revision's, and the output says so.
func TestSimVerifySaysWhichProfile(t *testing.T) {
	capture := filepath.Join(realCaptures, "ethercrab-ek1914-el3004-mailbox.pcapng")
	code, out, errOut := runVerify(t, capture, "--devices", "EK1914,EL3004@0x00130000")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "EL3004 revision 0x00130000: no profile, that of revision 0x00150000 instead") {
		t.Errorf("no note of the profile used in:\n%s", out)
	}
}

// TestSimVerifyESIDevicesScoreAsBuiltIn: with --esi, every built-in model
// of a shipped capture's devices is taken from its ESI description in
// testdata/esi/profiles (written from the profiles, see the README
// there), the profile table giving what ESI does not carry (timings, chip
// registers, the real unit's EEPROM layout); the result is the built-in
// models' on every capture, datagram for datagram.
func TestSimVerifyESIDevicesScoreAsBuiltIn(t *testing.T) {
	const esiDir = "../../testdata/esi/profiles"
	for _, e := range verifyManifest(t) {
		name := strings.TrimSuffix(filepath.Base(e.Capture), filepath.Ext(e.Capture))
		t.Run(name, func(t *testing.T) {
			args := []string{e.Capture, "--devices", strings.Join(e.Devices, ","), "--json", "--examples", "100"}
			var reps [2]verifyReport
			for i, extra := range [][]string{nil, {"--esi", esiDir}} {
				code, js, errOut := runVerify(t, append(args, extra...)...)
				if code != exitOK {
					t.Fatalf("%q: exit %d: %s", extra, code, errOut)
				}
				if err := json.Unmarshal([]byte(js), &reps[i]); err != nil {
					t.Fatal(err)
				}
			}
			built, fromESI := reps[0], reps[1]
			for _, d := range e.Devices {
				if strings.HasSuffix(d, ".bin") {
					continue // a real unit's EEPROM dump: no model to take from ESI
				}
				want := d + ": from its ESI description"
				if !slices.ContainsFunc(fromESI.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
					t.Errorf("no note %q in %q: the device was not taken from its ESI", want, fromESI.Notes)
				}
			}
			t.Logf("built-in %.2f%% (%d of %d), from ESI %.2f%% (%d of %d)", built.Score, built.Same, built.Datagrams,
				fromESI.Score, fromESI.Same, fromESI.Datagrams)
			fromESI.Notes, built.Notes = nil, nil
			a, _ := json.Marshal(built)
			b, _ := json.Marshal(fromESI)
			if string(a) != string(b) {
				t.Errorf("the devices from ESI answer otherwise than the built-in models:\nbuilt-in %s\nfrom ESI %s", a, b)
			}
		})
	}
}

// TestSimVerifyESIWithoutTheDevice: a model the ESI directory does not
// describe stays the built-in one, and the output says so.
func TestSimVerifyESIWithoutTheDevice(t *testing.T) {
	capture := filepath.Join(realCaptures, "ethercrab-ek1914-el3004-mailbox.pcapng")
	code, out, errOut := runVerify(t, capture, "--devices", "EK1914,EL3004@0x00130000", "--esi", "../../testdata/esi/profiles")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"EK1914: from its ESI description, ek1914.xml",
		"EL3004@0x00130000: no ESI description of revision 0x00130000 in ../../testdata/esi/profiles, the built-in model"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
