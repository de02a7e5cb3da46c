package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// apiResult is a Prometheus HTTP API answer.
type apiResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		} `json:"result"`
		Groups []struct {
			Rules []struct {
				Name   string `json:"name"`
				Type   string `json:"type"`
				Health string `json:"health"`
				Error  string `json:"lastError"`
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"data"`
}

var client = &http.Client{Timeout: 60 * time.Second}

func getAPI(u string) (apiResult, error) {
	var r apiResult
	resp, err := client.Get(u)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, fmt.Errorf("GET %s: %w", u, err)
	}
	if r.Status != "success" {
		return r, fmt.Errorf("GET %s: %s", u, r.Error)
	}
	return r, nil
}

// instant runs an instant query against the store.
func instant(api, q string) (apiResult, error) {
	return getAPI(api + "/api/v1/query?query=" + url.QueryEscape(q))
}

// scalar is the value of a query that returns one sample (ok false if it
// returns none).
func scalar(api, q string) (float64, bool, error) {
	r, err := instant(api, q)
	if err != nil || len(r.Data.Result) != 1 {
		return 0, false, err
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil, nil
}

// firing is one firing alert: its name and the labels that say where.
type firing struct{ name, site, line, host string }

func (f firing) String() string {
	if f.host != "" {
		return f.name + "{" + f.site + "/" + f.line + "/" + f.host + "}"
	}
	return f.name + "{" + f.site + "/" + f.line + "}"
}

// firingAlerts lists the alerts the ruler fires now, among names.
func firingAlerts(ruleAPI string, names []string) ([]firing, error) {
	r, err := getAPI(ruleAPI + "/api/v1/rules?type=alert")
	if err != nil {
		return nil, err
	}
	var out []firing
	for _, g := range r.Data.Groups {
		for _, rule := range g.Rules {
			if !slices.Contains(names, rule.Name) {
				continue
			}
			for _, a := range rule.Alerts {
				if a.State == "firing" {
					out = append(out, firing{rule.Name, a.Labels["site"], a.Labels["line"], a.Labels["host"]})
				}
			}
		}
	}
	return out, nil
}

// ruleErrors lists the rules whose last evaluation failed.
func ruleErrors(ruleAPI string) ([]string, error) {
	r, err := getAPI(ruleAPI + "/api/v1/rules")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range r.Data.Groups {
		for _, rule := range g.Rules {
			if rule.Health == "err" {
				out = append(out, rule.Name+": "+rule.Error)
			}
		}
	}
	return out, nil
}

// counterSum sums a counter family's samples in a /metrics page.
func counterSum(addr, family string) (float64, error) {
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, family) {
			continue
		}
		rest := line[len(family):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum, sc.Err()
}

// dashboardQuery is one query of a dashboard JSON with what Grafana sends
// for it: instant (tables, bar gauges) or over the time range.
type dashboardQuery struct {
	panel, expr string
	instant     bool
}

// fleetQueries reads the panel queries of a dashboard JSON.
func fleetQueries(path string) ([]dashboardQuery, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type panel struct {
		Title   string            `json:"title"`
		Type    string            `json:"type"`
		Panels  []json.RawMessage `json:"panels"`
		Targets []struct {
			Expr    string `json:"expr"`
			Instant bool   `json:"instant"`
		} `json:"targets"`
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	var out []dashboardQuery
	var walk func([]json.RawMessage) error
	walk = func(ps []json.RawMessage) error {
		for _, raw := range ps {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
			for _, t := range p.Targets {
				out = append(out, dashboardQuery{panel: p.Title, expr: t.Expr, instant: t.Instant})
			}
		}
		return nil
	}
	return out, walk(d.Panels)
}

// expand fills in Grafana's variables the way a dashboard opened on the
// whole fleet does: every site, line and host selected (All is .*), the
// time range rng, the rate interval four scrape intervals.
func expand(expr string, rng, rateInterval time.Duration) string {
	return strings.NewReplacer(
		"$__rate_interval", promDuration(rateInterval),
		"$__range", promDuration(rng),
		"$__interval", promDuration(rateInterval/4),
		"${datasource}", "store",
		"$site", ".*", "$line", ".*", "$host", ".*",
	).Replace(expr)
}

// timed is one timed query.
type timed struct {
	panel   string
	latency time.Duration
	series  int
	err     error
}

// timeQuery runs a dashboard query against the store as Grafana would:
// instant at now, or over [now-rng, now] at step.
func timeQuery(api string, q dashboardQuery, rng, rateInterval, step time.Duration) timed {
	expr := expand(q.expr, rng, rateInterval)
	now := time.Now()
	var u string
	if q.instant {
		u = api + "/api/v1/query?query=" + url.QueryEscape(expr) + "&time=" + strconv.FormatInt(now.Unix(), 10)
	} else {
		u = fmt.Sprintf("%s/api/v1/query_range?query=%s&start=%d&end=%d&step=%d", api, url.QueryEscape(expr),
			now.Add(-rng).Unix(), now.Unix(), int64(step/time.Second))
	}
	start := time.Now()
	r, err := getAPI(u)
	return timed{panel: q.panel, latency: time.Since(start), series: len(r.Data.Result), err: err}
}
