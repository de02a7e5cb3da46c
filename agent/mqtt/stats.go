package mqtt

import (
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// The window statistics in MQTT, rendered from the rows of package
// cyclestats: a counter with a key is published as <key> (JSON) and
// Stats/<key> (Sparkplug); a quantity as <key>_ns (<key> for a ratio: the
// CPU load) with its whole summary (JSON), and as Stats/<key>_<stat>_ns
// for each statistic its row places (Sparkplug). Where each goes is the
// row's place, so that a new row never moves the others.

// statsCounts returns the counters of the JSON stats message in the order
// of their places, and their number.
func statsCounts() (order [cyclestats.NumCounters]cyclestats.Counter, n int) {
	for c := range cyclestats.NumCounters {
		if place := c.Info().JSON; place > 0 {
			order[place-1] = c
			n = max(n, place)
		}
	}
	return order, n
}

// appendStats appends the stats payload of one statistics window: counts,
// and for each quantity its summary, in nanoseconds for durations, a
// ratio of the target period for the CPU load (left out without a
// target). seq counts the stats messages.
func appendStats(b []byte, r *cyclestats.Report, tsMillis int64, seq uint64) []byte {
	o := beginObject(b)
	o.int("ts", tsMillis)
	o.uint("seq", seq)
	o.int("target_ns", r.Target)
	order, n := statsCounts()
	for _, c := range order[:n] {
		o.int(c.Info().Key, r.Counts[c])
	}
	for q := range cyclestats.NumQuantities {
		info := q.Info()
		s := r.Summary(q)
		switch info.Unit {
		case cyclestats.UnitRatio:
			if r.Target > 0 {
				o.key(info.Key)
				o.b = appendSummary(o.b, &s, 1/float64(r.Target))
			}
		default:
			o.key(info.Key + "_ns")
			o.b = appendSummary(o.b, &s, 1)
		}
	}
	return o.end()
}

// appendSummary appends a window summary, every figure multiplied by unit
// (1 keeps integers).
func appendSummary(b []byte, s *stats.Summary, unit float64) []byte {
	o := beginObject(b)
	o.int("count", s.Count)
	if s.Count == 0 {
		return o.end()
	}
	put := func(k string, v float64) {
		if unit == 1 && v == float64(int64(v)) {
			o.int(k, int64(v))
			return
		}
		o.float(k, v*unit)
	}
	put("min", float64(s.Min))
	put("max", float64(s.Max))
	o.float("mean", s.Mean*unit)
	o.float("stddev", s.StdDev*unit)
	put("p50", float64(s.P50))
	put("p90", float64(s.P90))
	put("p99", float64(s.P99))
	put("p999", float64(s.P999))
	if s.Approximate {
		o.bool("approximate", true)
	}
	return o.end()
}

// statMetric is one of the Sparkplug edge node's statistics metrics: a
// counter, or one statistic of a quantity.
type statMetric struct {
	name    string
	typ     sparkplug.DataType
	counter bool
	c       cyclestats.Counter
	q       cyclestats.Quantity
	stat    cyclestats.Stat
}

// nodeStatMetrics are the node's statistics metrics, in the order of
// their places: the i-th has alias nodeStatAlias(i). A counter is an
// Int64; a statistic of a duration an Int64 of nanoseconds when it is a
// measured value (min, max, a percentile), else a Double; a statistic of
// a ratio a Double.
func nodeStatMetrics() []statMetric {
	var ms []statMetric
	put := func(place int, m statMetric) {
		for len(ms) < place {
			ms = append(ms, statMetric{})
		}
		ms[place-1] = m
	}
	for c := range cyclestats.NumCounters {
		if info := c.Info(); info.Sparkplug > 0 {
			put(info.Sparkplug, statMetric{name: "Stats/" + info.Key, typ: sparkplug.Int64, counter: true, c: c})
		}
	}
	for q := range cyclestats.NumQuantities {
		info := q.Info()
		for st, place := range info.Sparkplug {
			if place == 0 {
				continue
			}
			m := statMetric{name: "Stats/" + info.Key + "_" + cyclestats.Stat(st).String(), typ: sparkplug.Double, q: q, stat: cyclestats.Stat(st)}
			if info.Unit == cyclestats.UnitSeconds {
				m.name += "_ns"
				if _, measured := m.stat.Int(&stats.Summary{}); measured {
					m.typ = sparkplug.Int64
				}
			}
			put(place, m)
		}
	}
	return ms
}

// nodeStatNames are the names of nodeStatMetrics, in order.
func nodeStatNames() []string {
	var names []string
	for _, m := range nodeStatMetrics() {
		names = append(names, m.name)
	}
	return names
}

// nodeStats appends the statistics metrics ms of a window to dst (names
// set, no aliases), each with its datatype. A statistic of a ratio is
// divided by the target period (by 1 without one).
func nodeStats(dst []sparkplug.Metric, ms []statMetric, r *cyclestats.Report) []sparkplug.Metric {
	target := float64(max(r.Target, 1))
	for i := range ms {
		nm := &ms[i]
		m := sparkplug.Metric{Name: nm.name, DataType: nm.typ}
		switch {
		case nm.counter:
			m.Int = uint64(r.Counts[nm.c])
		case nm.typ == sparkplug.Int64:
			s := r.Summary(nm.q)
			v, _ := nm.stat.Int(&s)
			m.Int = uint64(v)
		default:
			s := r.Summary(nm.q)
			m.Float = nm.stat.Of(&s)
			if nm.q.Info().Unit == cyclestats.UnitRatio {
				m.Float /= target
			}
		}
		dst = append(dst, m)
	}
	return dst
}
