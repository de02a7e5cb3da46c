// Package dashboards builds ecagent's Grafana dashboards as code, with the
// Grafana Foundation SDK, and checks the queries of the committed JSON.
//
// Two dashboards:
//
//   - Fleet overview (uid ecagent-fleet): variables datasource, site, line
//     and host; stat panels for the fleet (agents reporting and agents that
//     stopped reporting, cycle processes down, slaves not in OP and slaves
//     not answering, drives in fault, the worst p99 jitter as a share of
//     its host's cycle period, the worst DC time difference); a lines
//     table (hosts, the p99 of all their cycles, the worst host, frames
//     lost, hosts regressed) whose line and site cells narrow the
//     dashboard to them (the drill-down), with each line's worst host over
//     time; a table of hosts — every host that reported in the time range,
//     one that stopped marked STOPPED instead of dropping out — with p99
//     and exact maximum jitter (in seconds and as a share of the cycle
//     period, coloured by the share so one threshold fits every period),
//     the p99 against the host's baseline, cycle and host CPU load, lost
//     frames/s, WKC errors/s, slaves not in OP, slaves not answering and
//     failed real-time checks; the worst hosts by p99 jitter relative to
//     their period; each host's p99 relative to its baseline.
//     Its figures are the recorded series of
//     deploy/prometheus/ecagent.rules.yml (host:, line: and site:), so a
//     refresh over 1 000 hosts reads a few series per host, never their
//     histogram buckets; load those rules where the dashboard's data
//     source evaluates rules (Prometheus, or the store's ruler).
//   - Host detail (uid ecagent-host): jitter and wake-up latency heatmaps
//     from the classic buckets (every Prometheus has them; the finer
//     native-histogram heatmaps in a collapsed row at the bottom, opt-in),
//     the quantiles and exact maximum of each timing as a share of the
//     cycle period against orange and red thresholds (jitter and wake-up
//     5 % / 10 %, job 50 % / 80 %, frame round trip 25 % / 50 %, DC
//     controller error 5 % / 10 %; the DC time difference in absolute
//     500 ns / 1 µs), the cycle period's min/max band as a multiple of
//     the target, job time and CPU load, frame round trip, bus errors, the
//     slave state timeline (AL state while a slave answers, +ERR with the
//     error bit, lost or refused while it does not — never the green of
//     its last OP), the quality of each slave's process data and how long
//     it has been stale; a distributed-clocks row (on/off, reference
//     clock, SYNC0/SYNC1 settings, DC time difference and controller
//     error); a drives row (CiA 402 state timeline, drives in fault with
//     their error codes, faults and CoE emergencies per second, last
//     emergency codes); MQTT delivery, and every real-time check.
//
// Both mark the bus's events (ecagent_bus_events_total: slaves lost,
// found, refused, AL errors, bus alarms, link changes, cycle process
// crashes) as annotations on every time series panel.
//
// The host detail reads only series the agent exports, so it works
// without deploy/prometheus loaded; the fleet overview reads the recorded
// series. Histogram queries (and the rules behind the recordings) are
// "native or classic", so they work whether Prometheus ingests native
// histograms or classic buckets. Tests require every latency and jitter
// panel to carry green, orange and red thresholds at rising values, as a
// share of the cycle period, and the fleet overview's colours to differ.
//
// The JSON under deploy/grafana/dashboards is what users import; it is
// generated from this package: `go test ./dashboards -update` rewrites it,
// and the test fails when it differs from what the code builds. Why code
// and not hand-kept JSON: the panels of the eight measured quantities come
// from one helper each (same units, same native-or-classic pattern, same
// window statistics), a hand edit cannot drift from the others, and the
// SDK's types catch misspelt options that Grafana would silently ignore.
package dashboards
