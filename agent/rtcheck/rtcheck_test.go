package rtcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// fixtureNIC is a NICInfo with fixed answers; errs maps a method name
// ("Driver", "Coalescing", "Features", "Rings") to the error it returns.
type fixtureNIC struct {
	driver     string
	coalescing Coalescing
	features   Features
	rings      Rings
	errs       map[string]error
}

var _ NICInfo = fixtureNIC{}

func (n fixtureNIC) Driver(string) (string, error) { return n.driver, n.errs["Driver"] }
func (n fixtureNIC) Coalescing(string) (Coalescing, error) {
	return n.coalescing, n.errs["Coalescing"]
}
func (n fixtureNIC) Features(string) (Features, error) { return n.features, n.errs["Features"] }
func (n fixtureNIC) Rings(string) (Rings, error)       { return n.rings, n.errs["Rings"] }

// tunedNIC is an igb NIC set up as the BACKGROUND's stage 3 says.
func tunedNIC() fixtureNIC {
	return fixtureNIC{
		driver:     "igb",
		coalescing: Coalescing{RxFrames: 1, TxFrames: 1},
		features: Features{
			"tx-scatter-gather":       {},
			"tx-tcp-segmentation":     {},
			"tx-tcp6-segmentation":    {},
			"tx-generic-segmentation": {},
			"rx-gro":                  {},
			"rx-lro":                  {Fixed: true},
			"rx-vlan-hw-parse":        {},
			"tx-vlan-hw-insert":       {},
			"rx-checksum":             {Active: true},
		},
		rings: Rings{RxPending: 128, TxPending: 128, RxMax: 4096, TxMax: 4096},
	}
}

// stockNIC is the same NIC as it comes out of the box.
func stockNIC() fixtureNIC {
	return fixtureNIC{
		driver:     "igb",
		coalescing: Coalescing{RxUsecs: 3, TxUsecs: 3, AdaptiveRx: true},
		features: Features{
			"tx-scatter-gather":       {Active: true},
			"tx-tcp-segmentation":     {Active: true},
			"tx-tcp6-segmentation":    {Active: true},
			"tx-generic-segmentation": {Active: true},
			"rx-gro":                  {Active: true},
			"rx-lro":                  {Fixed: true},
			"rx-vlan-hw-parse":        {Active: true},
			"tx-vlan-hw-insert":       {Active: true},
		},
		rings: Rings{RxPending: 256, TxPending: 4096, RxMax: 4096, TxMax: 4096},
	}
}

// fixtureOptions points every root into a fixture tree and configures the
// cycle as the fixtures expect: core 3, interface eth1, priority 80.
func fixtureOptions(root string, nic NICInfo) Options {
	return Options{
		ProcRoot:  filepath.Join(root, "proc"),
		SysRoot:   filepath.Join(root, "sys"),
		DevRoot:   filepath.Join(root, "dev"),
		RunRoot:   filepath.Join(root, "run"),
		CycleCore: 3,
		Interface: "eth1",
		Priority:  80,
		NIC:       nic,
		XDP:       fixtureXDP{f: XDPFeatures{Redirect: true, ZeroCopy: true}},
	}
}

// fixtureXDP is an XDPProber with a fixed answer.
type fixtureXDP struct {
	f   XDPFeatures
	err error
}

func (x fixtureXDP) XDPFeatures(string) (XDPFeatures, error) { return x.f, x.err }

func TestFixtureTrees(t *testing.T) {
	tests := []struct {
		root string
		nic  NICInfo
		want map[string]Status
	}{
		{"testdata/tuned", tunedNIC(), map[string]Status{
			"preempt_rt": Pass, "isolcpus": Pass, "nohz_full": Pass, "rcu_nocbs": Pass,
			"cpufreq_governor": Pass, "cstates": Pass, "irq_affinity": Pass, "clocksource": Pass,
			"rt_throttling": Pass, "sched_fifo": Pass, "mlock": Pass, "dma_latency": Pass, "swap": Pass,
			"nic_link": Pass, "nic_coalescing": Pass, "nic_offloads": Pass, "nic_rings": Pass, "nic_xdp": Pass,
			"nic_networkmanager": Pass,
		}},
		{"testdata/stock", stockNIC(), map[string]Status{
			"preempt_rt": Fail, "isolcpus": Fail, "nohz_full": Fail, "rcu_nocbs": Fail,
			"cpufreq_governor": Warn, "cstates": Warn, "irq_affinity": Fail, "clocksource": Warn,
			"rt_throttling": Warn, "sched_fifo": Fail, "mlock": Fail, "dma_latency": Warn, "swap": Warn,
			"nic_link": Fail, "nic_coalescing": Warn, "nic_offloads": Warn, "nic_rings": Warn, "nic_xdp": Pass,
			"nic_networkmanager": Warn,
		}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.root), func(t *testing.T) {
			results := Run(context.Background(), fixtureOptions(tt.root, tt.nic))
			if len(results) != len(tt.want) {
				t.Fatalf("got %d results, want %d", len(results), len(tt.want))
			}
			for _, r := range results {
				want, ok := tt.want[r.ID]
				if !ok {
					t.Errorf("unexpected check %q", r.ID)
					continue
				}
				if r.Status != want {
					t.Errorf("%s: status %v, want %v (found: %s)", r.ID, r.Status, want, r.Found)
				}
				if (r.Status == Warn || r.Status == Fail) && r.Fix == "" {
					t.Errorf("%s: %v without a fix", r.ID, r.Status)
				}
				if r.Status == Pass && r.Fix != "" {
					t.Errorf("%s: pass with a fix %q", r.ID, r.Fix)
				}
			}
		})
	}
}

func TestReportGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		nic  NICInfo
	}{{"tuned", tunedNIC()}, {"stock", stockNIC()}} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Report(&buf, Run(context.Background(), fixtureOptions(filepath.Join("testdata", tt.name), tt.nic))); err != nil {
				t.Fatal(err)
			}
			testsupport.Golden(t, filepath.Join("testdata", "report-"+tt.name+".golden"), buf.Bytes())
		})
	}
}

func TestReportAlignsColumns(t *testing.T) {
	results := []Result{
		{ID: "a", Status: Pass, Found: "fine"},
		{ID: "longer_id", Status: Fail, Found: "broken", Fix: "do this"},
		{ID: "skipped", Status: Skip, Found: "n/a", Fix: "not shown"},
	}
	var buf bytes.Buffer
	if err := Report(&buf, results); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"STATUS  CHECK      FOUND\n" +
		"PASS    a          fine\n" +
		"FAIL    longer_id  broken\n" +
		"                   fix: do this\n" +
		"SKIP    skipped    n/a\n" +
		"3 checks: 1 pass, 0 warn, 1 fail, 1 skip\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestRealHost runs every check against this machine: it cannot know the
// verdicts, only that each check gives a valid one and says what it found.
func TestRealHost(t *testing.T) {
	opts := DefaultOptions()
	opts.CycleCore = runtime.NumCPU() - 1
	opts.Interface = "lo"
	if iface := os.Getenv("ECAGENT_RTCHECK_IF"); iface != "" {
		opts.Interface = iface
	}
	results := Run(context.Background(), opts)
	ids := IDs()
	if len(results) != len(ids) {
		t.Fatalf("got %d results, want %d", len(results), len(ids))
	}
	for i, r := range results {
		if r.ID != ids[i] {
			t.Errorf("result %d is %q, want %q", i, r.ID, ids[i])
		}
		if !r.Status.valid() {
			t.Errorf("%s: invalid status %d", r.ID, r.Status)
		}
		if r.Found == "" || strings.HasPrefix(r.Found, "internal error") {
			t.Errorf("%s: found %q", r.ID, r.Found)
		}
		t.Logf("%-4v %-18s %s", r.Status, r.ID, r.Found)
	}
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, r := range Run(ctx, fixtureOptions("testdata/tuned", tunedNIC())) {
		if r.Status != Skip || !strings.Contains(r.Found, "canceled") {
			t.Errorf("%s: %v %q, want skip saying canceled", r.ID, r.Status, r.Found)
		}
	}
}

func TestIDsAreStableSnakeCase(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	seen := map[string]bool{}
	for _, c := range registry() {
		if !snake.MatchString(c.id) {
			t.Errorf("ID %q is not snake_case", c.id)
		}
		if seen[c.id] {
			t.Errorf("ID %q registered twice", c.id)
		}
		seen[c.id] = true
		if c.title == "" {
			t.Errorf("%s has no title", c.id)
		}
	}
}

func TestWorstAndExitCode(t *testing.T) {
	tests := []struct {
		statuses []Status
		want     Status
		exit     int
	}{
		{nil, Skip, 0},
		{[]Status{Skip, Skip}, Skip, 0},
		{[]Status{Skip, Pass}, Pass, 0},
		{[]Status{Pass, Warn, Skip}, Warn, 1},
		{[]Status{Fail, Warn, Pass}, Fail, 2},
		{[]Status{Warn, Fail}, Fail, 2},
	}
	for _, tt := range tests {
		var results []Result
		for _, s := range tt.statuses {
			results = append(results, Result{Status: s})
		}
		got := Worst(results)
		if got != tt.want || got.ExitCode() != tt.exit {
			t.Errorf("Worst(%v) = %v (exit %d), want %v (exit %d)", tt.statuses, got, got.ExitCode(), tt.want, tt.exit)
		}
	}
}

func TestResultJSON(t *testing.T) {
	in := Result{ID: "swap", Title: "No active swap", Status: Warn, Found: "1 active", Fix: "sudo swapoff -a"}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"swap","title":"No active swap","status":"warn","found":"1 active","fix":"sudo swapoff -a"}`
	if string(data) != want {
		t.Errorf("got %s, want %s", data, want)
	}
	var out Result
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}
	if _, err := json.Marshal(Result{}); err == nil {
		t.Error("marshalling the invalid zero status succeeded")
	}
	if err := json.Unmarshal([]byte(`{"status":"great"}`), &out); err == nil {
		t.Error("unmarshalling an unknown status succeeded")
	}
}

// TestStatusNames pins every name: String is generated (stringer).
func TestStatusNames(t *testing.T) {
	want := "Status(0) pass warn fail skip Status(5) Status(-1)"
	var got []string
	for _, s := range []Status{0, Pass, Warn, Fail, Skip, 5, -1} {
		got = append(got, s.String())
	}
	if g := strings.Join(got, " "); g != want {
		t.Errorf("names %q, want %q", g, want)
	}
}
