package dashboards

import (
	"fmt"
	"strings"
)

// Label selectors of the dashboard variables. The fleet overview's site,
// line and host are multi-valued (regular expressions); the host detail's
// are single values.
const (
	fleetSelector = `site=~"$site", line=~"$line", host=~"$host"`
	hostSelector  = `site="$site", line="$line", host="$host"`
)

// bySlave is the grouping that keeps a slave's identity.
const bySlave = "site, line, host, position, name"

// slaveState is the code the slave state timelines show for each slave:
// its AL state (1 INIT … 8 OP) plus 16 with the error bit set (20 is
// SAFEOP+ERR), -1 while it is lost and -2 while another device answers in
// its place (both with AL state 0: a slave that does not answer has no
// state), so a dead device is red, never the green of its last OP.
func slaveState(sel string) string {
	state := series("ecagent_slave_al_state", sel)
	return fmt.Sprintf("max by (%s) (%s + 16 * %s)\n- on (%s)\n(\n  sum by (%s) ((%s == 1) or 2 * (%s == 1))\n  or on (%s) 0 * max by (%s) (%s)\n)",
		bySlave, state, series("ecagent_slave_al_error", sel),
		bySlave, bySlave, series("ecagent_slave_presence", sel, `presence="lost"`),
		series("ecagent_slave_presence", sel, `presence="refused"`), bySlave, bySlave, state)
}

// Grafana's range variables as they appear in queries.
const (
	rateInterval = "$__rate_interval"
	dashRange    = "$__range"
)

// byHost is the grouping that keeps a host's identity.
const byHost = "site, line, host"

// series returns `name{selector, extra}`.
func series(name, selector string, extra ...string) string {
	return name + "{" + strings.Join(append([]string{selector}, extra...), ", ") + "}"
}

// quantile returns the q-quantile of a histogram over window, grouped by
// the labels in by ("" for one series): from the native histogram if
// Prometheus stores one, else from the classic buckets.
func quantile(q float64, histogram, selector, by, window string) string {
	native := fmt.Sprintf("histogram_quantile(%g, sum%s (rate(%s[%s])))",
		q, grouping(by), series(histogram, selector), window)
	classic := fmt.Sprintf("histogram_quantile(%g, sum%s (rate(%s[%s])))",
		q, grouping(join(by, "le")), series(histogram+"_bucket", selector), window)
	return native + "\nor\n" + classic
}

// perCycle divides a figure in seconds of one host (the host detail's
// selector) by its cycle period: a share of the cycle, so that one
// threshold fits a 125 µs and a 4 ms cycle.
func perCycle(expr, sel string) string {
	return fmt.Sprintf("(%s)\n/ scalar(max(%s))", expr, series("ecagent_cycle_target_seconds", sel))
}

// heatmapNative is the per-second rate of a native histogram, summed: one
// histogram per step for a heatmap.
func heatmapNative(histogram, selector string) string {
	return fmt.Sprintf("sum(rate(%s[%s]))", series(histogram, selector), rateInterval)
}

// heatmapClassic is the per-second rate of each classic bucket, for a
// heatmap in Grafana's heatmap format.
func heatmapClassic(histogram, selector string) string {
	return fmt.Sprintf("sum by (le) (rate(%s[%s]))", series(histogram+"_bucket", selector), rateInterval)
}

func grouping(by string) string {
	if by == "" {
		return ""
	}
	return " by (" + by + ")"
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}
