package mqtt

import (
	"strings"
	"sync"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// nodeStatAliasBase keeps the aliases of the node's metrics clear of the
// device metrics' (which count from 1): Sparkplug aliases are unique
// across an edge node and its devices.
const nodeStatAliasBase = 1 << 32

// The aliases of the node's metrics beyond the statistics.
const (
	aliasBusReady     = nodeStatAliasBase + 64 + iota // Bus/Ready
	aliasBusCondition                                 // Bus/Condition
	aliasBusSummary                                   // Bus/Summary
	aliasRefusedLast                                  // Commands/Last Refused
	aliasRefusedCount                                 // Commands/Refused
	aliasBdSeq                                        // bdSeq
	aliasRebirth                                      // Node Control/Rebirth
)

func nodeStatAlias(i int) uint64 { return nodeStatAliasBase + uint64(i) }

// nodeMetric is one statistics metric of the node: its name and the
// datatype it has in NBIRTH and in every NDATA.
type nodeMetric struct {
	name string
	typ  sparkplug.DataType
}

// nodeStatMetrics are the node metrics carrying the window statistics, in
// the order nodeStats fills them. New ones go at the end, so that the
// aliases of the others stay.
func nodeStatMetrics() []nodeMetric {
	i, d := sparkplug.Int64, sparkplug.Double
	return []nodeMetric{
		{"Stats/cycles", i}, {"Stats/overruns", i}, {"Stats/lost_frames", i}, {"Stats/wkc_errors", i},
		{"Stats/period_min_ns", i}, {"Stats/period_max_ns", i}, {"Stats/jitter_max_ns", i}, {"Stats/jitter_p99_ns", i},
		{"Stats/wakeup_latency_p99_ns", i}, {"Stats/job_max_ns", i}, {"Stats/frame_rtt_p99_ns", i},
		{"Stats/cpu_load_mean", d}, {"Stats/cpu_load_max", d},
		{"Stats/dc_difference_p99_ns", i}, {"Stats/dc_controller_error_p99_ns", i},
		{"Stats/frames_sent", i}, {"Stats/frames_lost", i},
		{"Stats/late_answers", i}, {"Stats/acyclic_cycles", i}, {"Stats/acyclic_overruns", i}, {"Stats/yield_late", i},
		{"Stats/ring_drops", i},
	}
}

// nodeStatNames are the names of nodeStatMetrics, in order.
func nodeStatNames() []string {
	var names []string
	for _, m := range nodeStatMetrics() {
		names = append(names, m.name)
	}
	return names
}

// nodeStats appends the statistics metrics of a window to dst (names set,
// no aliases), each with the datatype nodeStatMetrics declares.
func nodeStats(dst []sparkplug.Metric, r *metrics.WindowReport) []sparkplug.Metric {
	target := float64(max(r.Target, 1))
	type value struct {
		i int64
		f float64
	}
	values := [...]value{
		{i: r.Counts[metrics.CounterCycles]}, {i: r.Counts[metrics.CounterOverruns]}, {i: r.Counts[metrics.CounterLostFrames]}, {i: r.Counts[metrics.CounterWKCErrors]},
		{i: r.Period.Min}, {i: r.Period.Max}, {i: r.Jitter.Max}, {i: r.Jitter.P99},
		{i: r.WakeupLatency.P99}, {i: r.JobDuration.Max}, {i: r.FrameRTT.P99},
		{f: r.JobDuration.Mean / target}, {f: float64(r.JobDuration.Max) / target},
		{i: r.DCTimeDifference.P99}, {i: r.DCControllerError.P99},
		{i: r.Counts[metrics.CounterFramesSent]}, {i: r.Counts[metrics.CounterFramesLost]},
		{i: r.Counts[metrics.CounterLateAnswers]}, {i: r.Counts[metrics.CounterAcyclicCycles]},
		{i: r.Counts[metrics.CounterAcyclicOverruns]}, {i: r.Counts[metrics.CounterYieldLate]},
		{i: r.Counts[metrics.CounterRingDrops]},
	}
	for k, nm := range nodeStatMetrics() {
		m := sparkplug.Metric{Name: nm.name, DataType: nm.typ}
		if nm.typ == sparkplug.Double {
			m.Float = values[k].f
			if values[k].f == 0 {
				m.Float = float64(values[k].i)
			}
		} else {
			m.Int = uint64(values[k].i)
		}
		dst = append(dst, m)
	}
	return dst
}

// nodeDeath returns the NDEATH payload: bdSeq.
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

// qualityProperties are the properties of a metric whose data is not
// good: its Sparkplug quality (stale, or bad for invalid data); nil for
// good data, which needs none.
func qualityProperties(q busstate.Quality) []sparkplug.Property {
	switch q {
	case busstate.QualityStale:
		return []sparkplug.Property{{Key: sparkplug.PropertyQuality, Type: sparkplug.Int32, Int: sparkplug.QualityStale}}
	case busstate.QualityInvalid:
		return []sparkplug.Property{{Key: sparkplug.PropertyQuality, Type: sparkplug.Int32, Int: sparkplug.QualityBad}}
	}
	return nil
}

// sparkplugNames returns the metric names of d's signals, in the folders
// Sparkplug hosts show ("/" separates them): "Inputs/…" or "Outputs/…",
// then the PDO and entry names of the SII ("Inputs/Channel 1/Input") for
// a signal the configuration did not rename, else its published name.
func sparkplugNames(d *Device) []string {
	names := make([]string, len(d.Signals))
	seen := map[string]bool{}
	for i := range d.Signals {
		s := &d.Signals[i]
		folder := "Inputs/"
		if s.Output {
			folder = "Outputs/"
		}
		name := folder + s.Name
		if s.Name == s.DefaultName && s.Entry.PDOName != "" && s.Entry.Name != "" {
			name = folder + metricLevel(s.Entry.PDOName) + "/" + metricLevel(s.Entry.Name)
		}
		if seen[name] {
			name = folder + s.Name
		}
		seen[name] = true
		names[i] = name
	}
	return names
}

// metricLevel makes an SII name one folder level: no "/" inside, no
// surrounding blanks.
func metricLevel(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "/", "-"))
}

// appendDeviceBirth appends a DBIRTH payload (without seq) for the device
// of v: every signal by name and alias, with its engineering unit, its
// value and, when the data is not good, its quality.
func appendDeviceBirth(b []byte, v *deviceView) []byte {
	ts := uint64(v.now.UnixMilli())
	b = sparkplug.AppendPayload(b, &sparkplug.Payload{Timestamp: ts})
	names := sparkplugNames(v.d)
	quality := qualityProperties(v.slave.Quality)
	for k := range v.d.Signals {
		s := &v.d.Signals[k]
		m := signalMetric(s, v.vals[k])
		m.Name, m.HasAlias, m.Alias, m.Timestamp = names[k], true, s.Alias, ts
		m.Null = v.slave.Quality == busstate.QualityInvalid
		if s.Unit != "" {
			m.Properties = append(m.Properties, sparkplug.Property{Key: sparkplug.PropertyEngUnit, Type: sparkplug.String, Str: s.Unit})
		}
		m.Properties = append(m.Properties, quality...)
		b = sparkplug.AppendMetric(b, &m)
	}
	return b
}

// appendDeviceData appends a DDATA payload (without seq) for the device of
// v: every signal by alias, with its quality when the data is not good.
// historical marks values produced while disconnected. With good data it
// allocates only when b lacks capacity.
func appendDeviceData(b []byte, v *deviceView, historical bool) []byte {
	ts := uint64(v.now.UnixMilli())
	b = sparkplug.AppendPayload(b, &sparkplug.Payload{Timestamp: ts})
	quality := qualityProperties(v.slave.Quality)
	for k := range v.d.Signals {
		s := &v.d.Signals[k]
		m := signalMetric(s, v.vals[k])
		m.HasAlias, m.Alias, m.Historical = true, s.Alias, historical
		m.Null = v.slave.Quality == busstate.QualityInvalid
		m.Properties = quality
		m.Timestamp = ts // Sparkplug 3.0: every metric of a DATA has its timestamp
		b = sparkplug.AppendMetric(b, &m)
	}
	return b
}

// sparkplugScheme renders the bus as Sparkplug B 3.0: the agent is the
// edge node (NBIRTH, NDATA with the window statistics, the bus's state
// and refused commands, NDEATH), each slave a device (DBIRTH, DDATA,
// DDEATH). A device is born while its slave answers: a lost or refused
// slave gets its DDEATH, and its return a fresh DBIRTH before any DDATA.
type sparkplugScheme struct {
	p           *Publisher
	group, node string

	// born are the devices born on the current connection; the session
	// goroutine alone uses it.
	born map[string]bool

	// nmu guards what NBIRTH repeats of the node metrics.
	nmu          sync.Mutex
	nodeStat     []sparkplug.Metric // the last window's statistics
	bus          busstate.Bus       // the bus's state, when hasBus
	hasBus       bool
	refusedLast  string // the last refused command, and how many so far
	refusedCount uint64
}

var _ scheme = (*sparkplugScheme)(nil)

func newSparkplugScheme(p *Publisher) *sparkplugScheme {
	return &sparkplugScheme{p: p, group: p.cfg.Group, node: p.cfg.Node, born: map[string]bool{}}
}

func (s *sparkplugScheme) nodeTopic(t sparkplug.MessageType) string {
	return sparkplug.NodeTopic(s.group, t, s.node)
}

func (s *sparkplugScheme) deviceTopic(t sparkplug.MessageType, d *Device) string {
	return sparkplug.DeviceTopic(s.group, t, s.node, d.Name)
}

func (s *sparkplugScheme) dataTopic(d *Device) string    { return s.deviceTopic(sparkplug.DDATA, d) }
func (s *sparkplugScheme) commandTopic(d *Device) string { return s.deviceTopic(sparkplug.DCMD, d) }
func (s *sparkplugScheme) dataMessage() message          { return message{sparkplug: true, kind: kindData} }
func (s *sparkplugScheme) eventsQoS() byte               { return 1 }

func (s *sparkplugScheme) will(bdSeq uint64) message {
	return message{topic: s.nodeTopic(sparkplug.NDEATH), payload: nodeDeath(bdSeq), qos: 1}
}

func (s *sparkplugScheme) goodbye(bdSeq uint64) message { return s.will(bdSeq) }

func (s *sparkplugScheme) subscriptions() map[string]byte {
	return map[string]byte{
		s.nodeTopic(sparkplug.NCMD):                                 0,
		sparkplug.DeviceTopic(s.group, sparkplug.DCMD, s.node, "+"): 0,
	}
}

// announce: NBIRTH, then the DBIRTH of every device whose slave answers.
func (s *sparkplugScheme) announce(ms []message, v *busView, bdSeq uint64) []message {
	clear(s.born)
	ms = append(ms, message{topic: s.nodeTopic(sparkplug.NBIRTH), payload: s.nodeBirth(bdSeq, time.Now()), sparkplug: true})
	if v == nil {
		return ms
	}
	for i := range v.model.Devices {
		dv := v.device(i)
		if !dv.slave.Up() {
			continue
		}
		s.birthValues(dv, v.img)
		ms = append(ms, message{topic: s.deviceTopic(sparkplug.DBIRTH, dv.d), payload: appendDeviceBirth(nil, dv), sparkplug: true})
		s.born[dv.d.Name] = true
	}
	return ms
}

// birthValues points a birth's values at the snapshot img when the data
// is good, at the last good values otherwise.
func (s *sparkplugScheme) birthValues(v *deviceView, img []byte) {
	if v.slave.Quality != busstate.QualityGood {
		return
	}
	for k := range v.d.Signals {
		v.st.cur[k] = v.d.Signals[k].Raw(img)
	}
	v.vals = v.st.cur
}

// prepare renders a birth when it is sent, once per connection; drops a
// death of a device not born and data of a device not born (which a host
// could not read without the birth's aliases).
func (s *sparkplugScheme) prepare(m *message) bool {
	switch m.kind {
	case kindBirth:
		if s.born[m.device] {
			return false
		}
		b, ok := s.renderBirth(m)
		if !ok {
			return false
		}
		m.payload = b
		s.born[m.device] = true
	case kindDeath:
		if m.device != "" {
			if !s.born[m.device] {
				return false
			}
			delete(s.born, m.device)
		}
	case kindData:
		if m.device != "" && !s.born[m.device] {
			return false
		}
	}
	return true
}

// renderBirth renders the DBIRTH a birth message stands for, with the
// values and state of now; false when the bus it was for is gone or its
// slave does not answer any more.
func (s *sparkplugScheme) renderBirth(m *message) ([]byte, bool) {
	p := s.p
	p.smu.Lock()
	defer p.smu.Unlock()
	if p.model == nil || m.gen != p.gen || m.dev >= len(p.states) {
		return nil, false
	}
	v := busView{model: p.model, states: p.states, img: p.img, gen: p.gen, now: time.Now()}
	dv := v.device(m.dev)
	if !dv.slave.Up() {
		return nil, false
	}
	s.birthValues(dv, p.img)
	return appendDeviceBirth(p.out.buffer(), dv), true
}

func (s *sparkplugScheme) queueBirth(v *deviceView) {
	s.p.push(message{topic: s.deviceTopic(sparkplug.DBIRTH, v.d), sparkplug: true, kind: kindBirth,
		device: v.d.Name, dev: v.i, gen: v.gen}, v.now)
}

func (s *sparkplugScheme) queueDeath(v *deviceView) {
	var pl sparkplug.Payload
	pl.Timestamp = uint64(v.now.UnixMilli())
	s.p.push(message{topic: s.deviceTopic(sparkplug.DDEATH, v.d), payload: sparkplug.AppendPayload(s.p.out.buffer(), &pl),
		sparkplug: true, kind: kindDeath, device: v.d.Name, dev: v.i, gen: v.gen}, v.now)
}

func (s *sparkplugScheme) attached(v *busView) {
	s.busChanged(v)
	for i := range v.model.Devices {
		if dv := v.device(i); dv.slave.Up() {
			s.queueBirth(dv)
		}
	}
}

func (s *sparkplugScheme) detached(v *busView, _ string) {
	for i := range v.model.Devices {
		s.queueDeath(v.device(i))
	}
	s.busChanged(v)
}

func (s *sparkplugScheme) data(b []byte, v *deviceView, historical bool) []byte {
	return appendDeviceData(b, v, historical)
}

// changed: a slave that stops answering (lost, refused) gets its DDEATH,
// one that answers again a DBIRTH; a change of quality while it answers
// is one DDATA with the last values and their quality.
func (s *sparkplugScheme) changed(v *deviceView, was busstate.Slave) {
	switch {
	case was.Up() && !v.slave.Up():
		s.queueDeath(v)
	case !was.Up() && v.slave.Up():
		s.queueBirth(v)
	case v.slave.Up() && was.Quality != v.slave.Quality && v.slave.Quality != busstate.QualityGood && len(v.d.Signals) > 0:
		b := appendDeviceData(s.p.out.buffer(), v, !s.p.connected.Load())
		s.p.push(message{topic: v.st.pdTopic, payload: b, sparkplug: true, kind: kindData, device: v.d.Name, dev: v.i, gen: v.gen}, v.now)
	}
}

// busChanged publishes the bus's state as NDATA: Bus/Ready, and why not
// in the words of busstate.Bus.Ready.
func (s *sparkplugScheme) busChanged(v *busView) {
	if !v.hasState {
		return
	}
	s.nmu.Lock()
	s.bus, s.hasBus = v.state, true
	ms := s.busMetrics(0)
	s.nmu.Unlock()
	s.queueNodeData(ms, v.now)
}

// busMetrics returns the bus's node metrics by alias (named when ts is
// set, for NBIRTH). nmu is held.
func (s *sparkplugScheme) busMetrics(ts uint64) []sparkplug.Metric {
	ready, why := s.bus.Ready()
	if ready {
		why = "ready"
	}
	ms := []sparkplug.Metric{
		{Name: "Bus/Ready", Alias: aliasBusReady, DataType: sparkplug.Boolean, Bool: ready},
		{Name: "Bus/Condition", Alias: aliasBusCondition, DataType: sparkplug.String, Str: why},
		{Name: "Bus/Summary", Alias: aliasBusSummary, DataType: sparkplug.String, Str: s.bus.Summary()},
	}
	for i := range ms {
		ms[i].HasAlias, ms[i].Null = true, !s.hasBus
		if ts == 0 {
			ms[i].Name = ""
		}
		ms[i].Timestamp = ts
	}
	return ms
}

// refusedMetrics returns the metrics of the refused commands. nmu is held.
func (s *sparkplugScheme) refusedMetrics(ts uint64) []sparkplug.Metric {
	ms := []sparkplug.Metric{
		{Name: "Commands/Last Refused", Alias: aliasRefusedLast, DataType: sparkplug.String, Str: s.refusedLast, Null: s.refusedCount == 0},
		{Name: "Commands/Refused", Alias: aliasRefusedCount, DataType: sparkplug.UInt64, Int: s.refusedCount},
	}
	for i := range ms {
		ms[i].HasAlias, ms[i].Timestamp = true, ts
		if ts == 0 {
			ms[i].Name = ""
		}
	}
	return ms
}

// queueNodeData queues an NDATA of ms.
func (s *sparkplugScheme) queueNodeData(ms []sparkplug.Metric, at time.Time) {
	historical := !s.p.connected.Load()
	b := sparkplug.AppendPayload(s.p.out.buffer(), &sparkplug.Payload{Timestamp: uint64(at.UnixMilli())})
	for i := range ms {
		ms[i].Historical = historical
		ms[i].Timestamp = uint64(at.UnixMilli())
		b = sparkplug.AppendMetric(b, &ms[i])
	}
	s.p.push(message{topic: s.nodeTopic(sparkplug.NDATA), payload: b, sparkplug: true}, at)
}

// nodeBirth returns an NBIRTH payload (without seq): bdSeq, the rebirth
// control, the statistics metrics (null until the first window closed),
// the bus's state and the refused commands, each with its alias.
func (s *sparkplugScheme) nodeBirth(bdSeq uint64, now time.Time) []byte {
	ts := uint64(now.UnixMilli())
	b := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: ts})
	b = sparkplug.AppendMetric(b, &sparkplug.Metric{Name: sparkplug.MetricBdSeq, HasAlias: true, Alias: aliasBdSeq,
		Timestamp: ts, DataType: sparkplug.UInt64, Int: bdSeq})
	b = sparkplug.AppendMetric(b, &sparkplug.Metric{Name: sparkplug.MetricRebirth, HasAlias: true, Alias: aliasRebirth,
		Timestamp: ts, DataType: sparkplug.Boolean})
	s.nmu.Lock()
	defer s.nmu.Unlock()
	for i, nm := range nodeStatMetrics() {
		m := sparkplug.Metric{DataType: nm.typ, Null: true}
		if i < len(s.nodeStat) {
			m = s.nodeStat[i]
		}
		m.Name, m.HasAlias, m.Alias, m.Timestamp = nm.name, true, nodeStatAlias(i), ts
		b = sparkplug.AppendMetric(b, &m)
	}
	for _, m := range append(s.busMetrics(ts), s.refusedMetrics(ts)...) {
		b = sparkplug.AppendMetric(b, &m)
	}
	return b
}

// window publishes the statistics of a window as NDATA, by alias.
func (s *sparkplugScheme) window(r *metrics.WindowReport, at time.Time) {
	s.nmu.Lock()
	s.nodeStat = nodeStats(s.nodeStat[:0], r)
	ms := make([]sparkplug.Metric, len(s.nodeStat))
	for i, m := range s.nodeStat {
		m.Name, m.HasAlias, m.Alias = "", true, nodeStatAlias(i)
		ms[i] = m
	}
	s.nmu.Unlock()
	s.queueNodeData(ms, at)
}

// refused answers a refused write as NDATA: Commands/Last Refused says
// which (the last of the n it stands for) and why, Commands/Refused
// counts them.
func (s *sparkplugScheme) refused(re *RejectError, slave, signal, topic string, at time.Time, n uint64) {
	s.nmu.Lock()
	s.refusedCount += n
	target := slave
	switch {
	case signal != "":
		target += "/" + signal
	case slave == "":
		target = topic // a command refused as a whole: an NCMD
	}
	s.refusedLast = target + ": " + string(re.Code) + ": " + re.Reason
	ms := s.refusedMetrics(0)
	s.nmu.Unlock()
	s.queueNodeData(ms, at)
}
