package dashboards

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// panelDoc is what the threshold tests read of a panel.
type panelDoc struct {
	Title       string     `json:"title"`
	Type        string     `json:"type"`
	Collapsed   bool       `json:"collapsed"`
	Panels      []panelDoc `json:"panels"`
	FieldConfig struct {
		Defaults struct {
			Unit       string `json:"unit"`
			Thresholds *struct {
				Steps []struct {
					Value *float64 `json:"value"`
					Color string   `json:"color"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
		Overrides []struct {
			Matcher struct {
				Options any `json:"options"`
			} `json:"matcher"`
			Properties []struct {
				ID    string          `json:"id"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// panels lists a dashboard's panels in layout order, those of collapsed
// rows after their row, with the row each is in.
func panels(t *testing.T, b []byte) (out []panelDoc, rowOf map[string]panelDoc) {
	t.Helper()
	var d struct {
		Panels []panelDoc `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	rowOf = map[string]panelDoc{}
	var row panelDoc
	for _, p := range d.Panels {
		if p.Type == "row" {
			row = p
			for _, c := range p.Panels {
				out = append(out, c)
				rowOf[c.Title] = p
			}
			continue
		}
		out = append(out, p)
		rowOf[p.Title] = row
	}
	return out, rowOf
}

// timingFamilies are the measured timings: a panel that reads one of them
// (or a series recorded from one) shows a latency or a jitter.
var timingFamilies = []string{"cycle_jitter", "wakeup_latency", "job_duration", "frame_rtt", "cycle_period", "dc_time_difference", "dc_controller_error"}

// latencyPanel reports whether a panel shows a latency or a jitter.
func latencyPanel(t *testing.T, p panelDoc) bool {
	for _, tg := range p.Targets {
		names, err := SelectedMetrics(tg.Expr)
		if err != nil {
			t.Fatalf("panel %q: %v", p.Title, err)
		}
		for _, n := range names {
			for _, f := range timingFamilies {
				if strings.Contains(n, f) {
					return true
				}
			}
		}
	}
	return false
}

// TestLatencyPanelsHaveThresholds requires every panel that shows a
// latency or a jitter to carry green, orange and red thresholds at rising
// values, as a share of the cycle period (unit percentunit, or a multiple
// of the period) — except the distributed-clock time difference, which
// EtherCAT bounds in absolute time (1 µs) whatever the cycle. Heatmaps
// show a distribution and have no thresholds; they are left out.
func TestLatencyPanelsHaveThresholds(t *testing.T) {
	n := 0
	for file, b := range committed(t) {
		ps, _ := panels(t, b)
		for _, p := range ps {
			if p.Type == "heatmap" || p.Type == "row" || !latencyPanel(t, p) {
				continue
			}
			if p.Type == "table" {
				continue // tables colour their columns: TestFleetColoursDiffer
			}
			n++
			th := p.FieldConfig.Defaults.Thresholds
			if th == nil || len(th.Steps) != 3 {
				t.Errorf("%s: latency panel %q has no green/orange/red thresholds", file, p.Title)
				continue
			}
			checkSteps(t, file, p.Title, th.Steps[0].Color, th.Steps[1].Color, th.Steps[2].Color, th.Steps[1].Value, th.Steps[2].Value)
			absolute := strings.Contains(p.Title, "DC") && strings.Contains(p.Title, "difference")
			switch u := p.FieldConfig.Defaults.Unit; {
			case absolute && u == unitSeconds:
			case !absolute && (u == unitRatio || (u == "none" && (strings.Contains(p.Title, "multiple of the target") || strings.Contains(p.Title, "relative to")))):
			default:
				t.Errorf("%s: latency panel %q in unit %q, want a share of the cycle period (%s)", file, p.Title, u, unitRatio)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d latency panels found; the test no longer finds them", n)
	}
}

// checkSteps requires green, orange, red at strictly rising values.
func checkSteps(t *testing.T, file, where, c0, c1, c2 string, v1, v2 *float64) {
	t.Helper()
	if c0 != "green" && c0 != "transparent" || c1 != "orange" || c2 != "red" {
		t.Errorf("%s: %s: colours %s, %s, %s, want green (or none), orange, red", file, where, c0, c1, c2)
	}
	if v1 == nil || v2 == nil || !(*v1 < *v2) {
		t.Errorf("%s: %s: orange at %v and red at %v: red must start above orange, or the two are one colour", file, where, deref(v1), deref(v2))
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// TestFleetColoursDiffer requires every coloured figure of the fleet
// overview — stat panels, bar gauges, time series, table columns — to
// have distinct green, orange and red steps: orange = red makes a
// warning look like an outage.
func TestFleetColoursDiffer(t *testing.T) {
	b := committed(t)["ecagent-fleet-overview.json"]
	ps, _ := panels(t, b)
	coloured := 0
	for _, p := range ps {
		if th := p.FieldConfig.Defaults.Thresholds; th != nil && len(th.Steps) > 1 {
			coloured++
			if len(th.Steps) != 3 {
				t.Errorf("panel %q: %d threshold steps, want green, orange, red", p.Title, len(th.Steps))
				continue
			}
			checkSteps(t, "fleet", "panel "+p.Title, th.Steps[0].Color, th.Steps[1].Color, th.Steps[2].Color, th.Steps[1].Value, th.Steps[2].Value)
		}
		for _, o := range p.FieldConfig.Overrides {
			for _, prop := range o.Properties {
				if prop.ID != "thresholds" {
					continue
				}
				coloured++
				var th struct {
					Steps []struct {
						Value *float64 `json:"value"`
						Color string   `json:"color"`
					} `json:"steps"`
				}
				if err := json.Unmarshal(prop.Value, &th); err != nil || len(th.Steps) != 3 {
					t.Errorf("panel %q, column %v: thresholds %s", p.Title, o.Matcher.Options, prop.Value)
					continue
				}
				checkSteps(t, "fleet", "panel "+p.Title+", column "+asString(o.Matcher.Options),
					th.Steps[0].Color, th.Steps[1].Color, th.Steps[2].Color, th.Steps[1].Value, th.Steps[2].Value)
			}
		}
	}
	if coloured < 20 {
		t.Errorf("only %d coloured figures on the fleet overview", coloured)
	}
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// TestStockPrometheusFirst requires the panels that read native
// histograms only to sit in collapsed rows (opt-in), and every visible
// heatmap to read classic buckets, which every Prometheus stores.
func TestStockPrometheusFirst(t *testing.T) {
	for file, b := range committed(t) {
		ps, rowOf := panels(t, b)
		for _, p := range ps {
			if p.Type != "heatmap" {
				continue
			}
			classic := len(p.Targets) > 0 && strings.Contains(p.Targets[0].Expr, "_bucket")
			row := rowOf[p.Title]
			switch {
			case classic && row.Collapsed:
				t.Errorf("%s: classic heatmap %q is in the collapsed row %q; stock Prometheus users would not see it", file, p.Title, row.Title)
			case !classic && !row.Collapsed:
				t.Errorf("%s: native heatmap %q is open (row %q); native histograms are opt-in", file, p.Title, row.Title)
			}
		}
	}
}

// TestFleetReadsRecordings requires the fleet overview's panels to read
// no histogram buckets and no per-slave or per-check series of their own:
// over 1 000 hosts those come from the recording rules (per host, line or
// site), so a refresh reads a few series per host, not every slave's.
func TestFleetReadsRecordings(t *testing.T) {
	b := committed(t)["ecagent-fleet-overview.json"]
	ps, _ := panels(t, b)
	for _, p := range ps {
		for _, tg := range p.Targets {
			names, err := SelectedMetrics(tg.Expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if slices.Contains([]string{"_bucket"}, n[max(0, len(n)-7):]) || strings.HasSuffix(n, "_seconds") && strings.HasPrefix(n, "ecagent_") && n != "ecagent_cycle_target_seconds" {
					t.Errorf("panel %q reads %s directly; the fleet overview reads the recorded series", p.Title, n)
				}
				for _, perItem := range []string{"ecagent_slave_", "ecagent_drive_", "ecagent_rt_check", "ecagent_port_", "ecagent_esc_"} {
					if strings.HasPrefix(n, perItem) {
						t.Errorf("panel %q reads %s (a series per slave or check) directly; the fleet overview reads its per-host recording", p.Title, n)
					}
				}
			}
		}
	}
}
