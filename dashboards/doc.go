// Package dashboards builds ecagent's Grafana dashboards as code, with the
// Grafana Foundation SDK, and checks the queries of the committed JSON.
//
// Two dashboards:
//
//   - Fleet overview (uid ecagent-fleet): variables datasource, site and
//     host; stat panels for the fleet (drives in fault and the worst DC
//     time difference among them); a table of hosts with p99 and exact
//     maximum jitter, cycle and host CPU load, lost frames/s, WKC errors/s,
//     slaves not in OP and failed real-time checks over the dashboard's
//     time range; the worst hosts by p99 jitter; each host's p99 relative
//     to one week earlier.
//   - Host detail (uid ecagent-host): jitter and wake-up latency heatmaps
//     from the native histograms (classic-bucket heatmaps in a collapsed
//     row), the cycle period's min/max band with the exact window maximum,
//     job time and CPU load, frame round trip, bus errors and the slave
//     state timeline; a distributed-clocks row (on/off, reference clock,
//     SYNC0/SYNC1 settings, DC time difference and controller error); a
//     drives row (CiA 402 state timeline, drives in fault with their error
//     codes, faults and CoE emergencies per second, last emergency codes);
//     MQTT delivery, and every real-time check.
//
// Every query reads only series the agent exports (no recording rules), so
// the dashboards work without deploy/prometheus loaded; histogram queries
// are "native or classic", so they work whether Prometheus ingests native
// histograms or classic buckets.
//
// The JSON under deploy/grafana/dashboards is what users import; it is
// generated from this package: `go test ./dashboards -update` rewrites it,
// and the test fails when it differs from what the code builds. Why code
// and not hand-kept JSON: the panels of the eight measured quantities come
// from one helper each (same units, same native-or-classic pattern, same
// window statistics), a hand edit cannot drift from the others, and the
// SDK's types catch misspelt options that Grafana would silently ignore.
package dashboards
