package dashboards

import (
	"fmt"
	"strings"
)

// Label selectors of the dashboard variables. The fleet overview's site and
// host are multi-valued (regular expressions); the host detail's are single
// values.
const (
	fleetSelector = `site=~"$site", host=~"$host"`
	hostSelector  = `site="$site", host="$host"`
)

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

// quantileOffset is quantile of the same window one week earlier.
func quantileOffset(q float64, histogram, selector, by, window, offset string) string {
	native := fmt.Sprintf("histogram_quantile(%g, sum%s (rate(%s[%s] offset %s)))",
		q, grouping(by), series(histogram, selector), window, offset)
	classic := fmt.Sprintf("histogram_quantile(%g, sum%s (rate(%s[%s] offset %s)))",
		q, grouping(join(by, "le")), series(histogram+"_bucket", selector), window, offset)
	return native + "\nor\n" + classic
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
