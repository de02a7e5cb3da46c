package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// What the bench measures of the engines and the fleet: ingest, remote
// write and WAL rates, one scrape, the dashboard's queries.

// ingested is the samples the receivers appended so far.
func (e *engines) ingested() float64 {
	sum := 0.0
	for _, a := range e.receiveHTTP {
		v, _ := counterSum(a, "prometheus_tsdb_head_samples_appended_total")
		sum += v
	}
	return sum
}

// remoteWritten is the bytes Prometheus and the collector sent to the
// store so far (the collector's are not counted by its basic telemetry).
func (e *engines) remoteWritten() float64 {
	if e.promWeb == "" {
		return 0
	}
	v, _ := counterSum(e.promWeb, "prometheus_remote_storage_bytes_total")
	return v
}

// walBytes is the size of the receivers' TSDB directories.
func (e *engines) walBytes() float64 {
	total := int64(0)
	for i := range e.receiveHTTP {
		_ = filepath.Walk(filepath.Join(e.dir, fmt.Sprintf("receive-%d", i)), func(_ string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				total += fi.Size()
			}
			return nil
		})
	}
	return float64(total)
}

// measureScrape fetches every scraped host once the way Prometheus does
// (gzip), and one host in text and protobuf, for the series count and the
// bytes of a scrape.
func measureScrape(hosts []*host, r *report) error {
	get := func(addr, accept string) ([]byte, int, time.Duration, error) {
		var wire []byte
		var took time.Duration
		// The endpoint serves one scrape at a time and answers another
		// with 503 meanwhile: the agent-mode Prometheus may be scraping it.
		for try := 0; ; try++ {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
			req.Header.Set("Accept", accept)
			req.Header.Set("Accept-Encoding", "gzip")
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				return nil, 0, 0, err
			}
			wire, err = io.ReadAll(resp.Body)
			took = time.Since(start)
			resp.Body.Close()
			if err != nil {
				return nil, 0, 0, err
			}
			if resp.StatusCode == http.StatusOK {
				break
			}
			if try == 20 || (resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusTooManyRequests) {
				return nil, 0, 0, fmt.Errorf("scrape of %s: %s: %.200s", addr, resp.Status, wire)
			}
			time.Sleep(100 * time.Millisecond)
		}
		zr, err := gzip.NewReader(bytes.NewReader(wire))
		if err != nil {
			return nil, 0, 0, fmt.Errorf("scrape of %s not gzipped: %w", addr, err)
		}
		plain, err := io.ReadAll(zr)
		return plain, len(wire), took, err
	}
	const text = "text/plain;version=0.0.4"
	const proto = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
	plain, gz, _, err := get(hosts[0].addr, text)
	if err != nil {
		return err
	}
	r.ScrapeBytes, r.ScrapeGzipBytes = len(plain), gz
	for _, l := range strings.Split(string(plain), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			r.SeriesPerHost++
		}
	}
	if _, gz, _, err := get(hosts[0].addr, proto); err == nil {
		r.ScrapeProtoGzip = gz
	}
	var total time.Duration
	n := min(len(hosts), 200)
	for _, h := range hosts[:n] {
		_, _, took, err := get(h.addr, proto)
		if err != nil {
			return err
		}
		total += took
	}
	r.ScrapeServe = total / time.Duration(n)
	return nil
}

// timeDashboard times every query of the fleet dashboard against the
// store, --query-repeats times each.
func timeDashboard(api string, o options, r *report) error {
	qs, err := fleetQueries(filepath.Join(repoRoot(), "deploy", "grafana", "dashboards", "ecagent-fleet-overview.json"))
	if err != nil {
		return err
	}
	rateInterval := 4 * o.scrape
	step := max(o.queryRange/720, o.scrape) // a panel ~700 px wide
	step = step.Truncate(time.Second)
	var all []timed
	for range o.queryRepeats {
		for _, q := range qs {
			t := timeQuery(api, q, o.queryRange, rateInterval, step)
			if t.err != nil {
				r.QueryErrors = append(r.QueryErrors, q.panel+": "+t.err.Error())
			}
			all = append(all, t)
		}
	}
	r.Queries = len(qs)
	if len(all) == 0 {
		return fmt.Errorf("the fleet dashboard has no queries")
	}
	slices.SortFunc(all, func(a, b timed) int { return int(a.latency - b.latency) })
	i := (len(all)*99 + 99) / 100
	r.QueryP99 = all[min(i, len(all))-1].latency
	r.QueryMax = all[len(all)-1].latency
	r.QueryP99Panel = all[len(all)-1].panel
	worst := map[string]time.Duration{}
	for _, t := range all {
		worst[t.panel] = max(worst[t.panel], t.latency)
	}
	r.PanelMax = r.PanelMax[:0]
	for p, d := range worst {
		r.PanelMax = append(r.PanelMax, panelLatency{Panel: p, Max: d})
	}
	slices.SortFunc(r.PanelMax, func(a, b panelLatency) int { return int(b.Max - a.Max) })
	return nil
}

// panelLatency is a dashboard panel's slowest query.
type panelLatency struct {
	Panel string        `json:"panel"`
	Max   time.Duration `json:"max_ns"`
}
