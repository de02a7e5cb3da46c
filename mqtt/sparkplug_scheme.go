package mqtt

import (
	"math"
	"strconv"
	"time"

	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/metrics"
	"github.com/ecagent/ecagent/mqtt/sparkplug"
)

// nodeStatAliasBase keeps the aliases of the node's statistics metrics
// clear of the device metrics' (which count from 1): Sparkplug aliases
// are unique across an edge node and its devices.
const nodeStatAliasBase = 1 << 32

func nodeStatAlias(i int) uint64 { return nodeStatAliasBase + uint64(i) }

// nodeStatNames are the node metrics carrying the window statistics, in
// the order nodeStats fills them. New ones go at the end, so that the
// aliases of the others stay.
func nodeStatNames() []string {
	return []string{
		"Stats/cycles", "Stats/overruns", "Stats/lost_frames", "Stats/wkc_errors",
		"Stats/period_min_ns", "Stats/period_max_ns", "Stats/jitter_max_ns", "Stats/jitter_p99_ns",
		"Stats/wakeup_latency_p99_ns", "Stats/job_max_ns", "Stats/frame_rtt_p99_ns",
		"Stats/cpu_load_mean", "Stats/cpu_load_max",
		"Stats/dc_difference_p99_ns", "Stats/dc_controller_error_p99_ns",
	}
}

// nodeStats appends the statistics metrics of a window to dst (names set,
// no aliases).
func nodeStats(dst []sparkplug.Metric, r *metrics.WindowReport) []sparkplug.Metric {
	names := nodeStatNames()
	i := 0
	integer := func(v int64) {
		dst = append(dst, sparkplug.Metric{Name: names[i], DataType: sparkplug.Int64, Int: uint64(v)})
		i++
	}
	double := func(v float64) {
		dst = append(dst, sparkplug.Metric{Name: names[i], DataType: sparkplug.Double, Float: v})
		i++
	}
	integer(r.Cycles)
	integer(r.Overruns)
	integer(r.LostFrames)
	integer(r.WKCErrors)
	integer(r.Period.Min)
	integer(r.Period.Max)
	integer(r.Jitter.Max)
	integer(r.Jitter.P99)
	integer(r.WakeupLatency.P99)
	integer(r.JobDuration.Max)
	integer(r.FrameRTT.P99)
	target := float64(max(r.Target, 1))
	double(r.JobDuration.Mean / target)
	double(float64(r.JobDuration.Max) / target)
	integer(r.DCTimeDifference.P99)
	integer(r.DCControllerError.P99)
	return dst
}

// nodeBirth appends an NBIRTH payload (without seq): bdSeq, the rebirth
// control, and the statistics metrics with their aliases (null until the
// first window closed).
func nodeBirth(b []byte, bdSeq uint64, stats []sparkplug.Metric, now time.Time) []byte {
	ts := uint64(now.UnixMilli())
	b = sparkplug.AppendPayload(b, &sparkplug.Payload{Timestamp: ts})
	b = sparkplug.AppendMetric(b, &sparkplug.Metric{Name: sparkplug.MetricBdSeq, Timestamp: ts, DataType: sparkplug.UInt64, Int: bdSeq})
	b = sparkplug.AppendMetric(b, &sparkplug.Metric{Name: sparkplug.MetricRebirth, Timestamp: ts, DataType: sparkplug.Boolean})
	for i, name := range nodeStatNames() {
		m := sparkplug.Metric{Name: name, HasAlias: true, Alias: nodeStatAlias(i), Timestamp: ts, DataType: sparkplug.Int64, Null: true}
		if i >= len(nodeStatNames())-2 {
			m.DataType = sparkplug.Double
		}
		if i < len(stats) {
			m = stats[i]
			m.Name, m.HasAlias, m.Alias, m.Timestamp = name, true, nodeStatAlias(i), ts
		}
		b = sparkplug.AppendMetric(b, &m)
	}
	return b
}

// nodeDeath returns the NDEATH payload registered as the will: bdSeq.
func nodeDeath(bdSeq uint64) []byte {
	return sparkplug.AppendPayload(nil, &sparkplug.Payload{
		Timestamp: uint64(time.Now().UnixMilli()),
		Metrics:   []sparkplug.Metric{{Name: sparkplug.MetricBdSeq, DataType: sparkplug.UInt64, Int: bdSeq}},
	})
}

// signalMetric returns the metric for signal s holding raw (no name, no
// alias).
func signalMetric(s *Signal, raw uint64) sparkplug.Metric {
	m := sparkplug.Metric{DataType: s.DataType()}
	switch s.Type {
	case TypeBool:
		m.Bool = raw != 0
	case TypeFloat:
		m.Float = s.Float(raw)
	case TypeInt:
		m.Int = uint64(s.signedRaw(raw))
	default:
		m.Int = raw
	}
	return m
}

// deviceBirth appends a DBIRTH payload (without seq) for d with the values
// of the publisher's current snapshot.
func (p *Publisher) deviceBirth(b []byte, d *Device, now time.Time) []byte {
	ts := uint64(now.UnixMilli())
	b = sparkplug.AppendPayload(b, &sparkplug.Payload{Timestamp: ts})
	for k := range d.Signals {
		s := &d.Signals[k]
		m := signalMetric(s, s.Raw(p.img))
		m.Name, m.HasAlias, m.Alias, m.Timestamp = s.Name, true, s.Alias, ts
		b = sparkplug.AppendMetric(b, &m)
	}
	return b
}

// deviceData appends a DDATA payload (without seq) for d: every signal by
// alias. historical marks values produced while disconnected. It
// allocates only when b lacks capacity.
func (p *Publisher) deviceData(b []byte, d *Device, now time.Time, historical bool) []byte {
	ts := uint64(now.UnixMilli())
	b = sparkplug.AppendPayload(b, &sparkplug.Payload{Timestamp: ts})
	for k := range d.Signals {
		s := &d.Signals[k]
		m := signalMetric(s, s.Raw(p.img))
		m.HasAlias, m.Alias, m.Historical = true, s.Alias, historical
		if historical {
			m.Timestamp = ts
		}
		b = sparkplug.AppendMetric(b, &m)
	}
	return b
}

// metricValue turns the value of a command metric into what checkValue
// takes: bool, number, string, nil or nonFinite.
func metricValue(m *sparkplug.Metric) any {
	if m.Null || !m.HasValue {
		return nil
	}
	switch m.DataType {
	case sparkplug.Boolean:
		return m.Bool
	case sparkplug.Int8:
		return number(strconv.FormatInt(int64(int8(m.Int)), 10))
	case sparkplug.Int16:
		return number(strconv.FormatInt(int64(int16(m.Int)), 10))
	case sparkplug.Int32:
		return number(strconv.FormatInt(int64(int32(m.Int)), 10))
	case sparkplug.Int64:
		return number(strconv.FormatInt(int64(m.Int), 10))
	case sparkplug.UInt8, sparkplug.UInt16, sparkplug.UInt32, sparkplug.UInt64:
		return number(strconv.FormatUint(m.Int, 10))
	case sparkplug.Float, sparkplug.Double:
		if math.IsNaN(m.Float) || math.IsInf(m.Float, 0) {
			return nonFinite{}
		}
		return number(strconv.FormatFloat(m.Float, 'g', -1, 64))
	case sparkplug.String, sparkplug.Text:
		return m.Str
	}
	return []any{} // a type no output has
}

// alStatus decodes an AL status register value as events carry it.
func alStatus(v uint16) esc.ALStatus {
	return esc.DecodeALStatus([]byte{byte(v), byte(v >> 8)})
}

// alStatusCode names an AL status code.
func alStatusCode(c uint16) string { return esc.ALStatusCode(c).String() }
