package mqtt

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/cyclestats"
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

// The aliases of the node's spike metrics: Spikes/Count, then
// Spikes/Last/<key> of the i-th of spikeFields at aliasSpikeLast + i.
const (
	aliasSpikeCount = nodeStatAliasBase + 128
	aliasSpikeLast  = aliasSpikeCount + 1
)

// The names of the node's spike metrics.
const (
	spikeCountMetric = "Spikes/Count"
	spikeLastFolder  = "Spikes/Last/"
)

func nodeStatAlias(i int) uint64 { return nodeStatAliasBase + uint64(i) }

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
func appendDeviceBirth(b []byte, v *DeviceView) []byte {
	ts := uint64(v.Now.UnixMilli())
	b = sparkplug.AppendPayload(b, &sparkplug.Payload{Timestamp: ts})
	names := sparkplugNames(v.Device)
	quality := qualityProperties(v.Slave.Quality)
	for k := range v.Device.Signals {
		s := &v.Device.Signals[k]
		m := signalMetric(s, v.Values[k])
		m.Name, m.HasAlias, m.Alias, m.Timestamp = names[k], true, s.Alias, ts
		m.Null = v.Slave.Quality == busstate.QualityInvalid
		if s.Unit != "" {
			m.Properties = append(m.Properties, sparkplug.Property{Key: sparkplug.PropertyEngUnit, Type: sparkplug.String, Str: s.Unit})
		}
		m.Properties = append(m.Properties, quality...)
		b = sparkplug.AppendMetric(b, &m)
	}
	return b
}

// appendDeviceData appends a DDATA payload (without seq) for the device of
// v: every signal by alias, with its quality when the data is not good;
// produced while offline, the values are historical. With good data it
// allocates only when b lacks capacity.
func appendDeviceData(b []byte, v *DeviceView) []byte {
	ts := uint64(v.Now.UnixMilli())
	b = sparkplug.AppendPayload(b, &sparkplug.Payload{Timestamp: ts})
	quality := qualityProperties(v.Slave.Quality)
	for k := range v.Device.Signals {
		s := &v.Device.Signals[k]
		m := signalMetric(s, v.Values[k])
		m.HasAlias, m.Alias, m.Historical = true, s.Alias, v.Offline
		m.Null = v.Slave.Quality == busstate.QualityInvalid
		m.Properties = quality
		m.Timestamp = ts // Sparkplug 3.0: every metric of a DATA has its timestamp
		b = sparkplug.AppendMetric(b, &m)
	}
	return b
}

// SparkplugOptions configure the Sparkplug B scheme.
type SparkplugOptions struct {
	// Group and Node are the Sparkplug group and edge node ids.
	Group, Node string
	// Root is the JSON topic root the events go under (<root>/events, as
	// in the JSON scheme).
	Root string
	// Logger receives the renderer's log; nil discards it.
	Logger *slog.Logger
}

// SparkplugRenderer renders the bus as Sparkplug B 3.0: the agent is the
// edge node (NBIRTH, NDATA with the window statistics, the bus's state
// and refused commands, NDEATH), each slave a device (DBIRTH, DDATA,
// DDEATH). A device is born while its slave answers: a lost or refused
// slave gets its DDEATH, and its return a fresh DBIRTH before any DDATA.
// It takes NCMD (rebirth) and DCMD (writes). Events go to the JSON events
// topic; a cycle spike is also an NDATA of the Spikes/… node metrics.
type SparkplugRenderer struct {
	group, node, root string
	log               *slog.Logger
	// stats are the node's statistics metrics, by alias.
	stats []statMetric

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
	spike        *SpikeEvent // the last cycle spike (nil before the first), when, and how many so far
	spikeAt      time.Time
	spikeCount   uint64
}

var _ Renderer = (*SparkplugRenderer)(nil)

// NewSparkplugRenderer returns the Sparkplug B scheme for o.
func NewSparkplugRenderer(o SparkplugOptions) *SparkplugRenderer {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &SparkplugRenderer{group: o.Group, node: o.Node, root: o.Root, log: o.Logger, born: map[string]bool{},
		stats: nodeStatMetrics()}
}

func (s *SparkplugRenderer) nodeTopic(t sparkplug.MessageType) string {
	return sparkplug.NodeTopic(s.group, t, s.node)
}

func (s *SparkplugRenderer) deviceTopic(t sparkplug.MessageType, d *Device) string {
	return sparkplug.DeviceTopic(s.group, t, s.node, d.Name)
}

// Will is NDEATH with bdSeq.
func (s *SparkplugRenderer) Will(bdSeq uint64) Message {
	return Message{Topic: s.nodeTopic(sparkplug.NDEATH), Payload: nodeDeath(bdSeq), QoS: 1}
}

// Goodbye is the will.
func (s *SparkplugRenderer) Goodbye(bdSeq uint64) Message { return s.Will(bdSeq) }

// Subscriptions are the node's NCMD and its devices' DCMD.
func (s *SparkplugRenderer) Subscriptions() []Subscription {
	return []Subscription{
		{Filter: s.nodeTopic(sparkplug.NCMD)},
		{Filter: sparkplug.DeviceTopic(s.group, sparkplug.DCMD, s.node, "+")},
	}
}

// Announce: NBIRTH, then the DBIRTH of every device whose slave answers.
func (s *SparkplugRenderer) Announce(ms []Message, v *BusView, bdSeq uint64) []Message {
	clear(s.born)
	ms = append(ms, Message{Topic: s.nodeTopic(sparkplug.NBIRTH), Payload: s.nodeBirth(bdSeq, time.Now()), Sparkplug: true})
	if v == nil {
		return ms
	}
	for i := range v.Model.Devices {
		dv := v.Device(i)
		if !dv.Slave.Up() {
			continue
		}
		ms = append(ms, Message{Topic: s.deviceTopic(sparkplug.DBIRTH, dv.Device), Payload: appendDeviceBirth(nil, dv), Sparkplug: true})
		s.born[dv.Device.Name] = true
	}
	return ms
}

// Prepare renders a birth when it is sent, once per connection; drops a
// death of a device not born and data of a device not born (which a host
// could not read without the birth's aliases).
func (s *SparkplugRenderer) Prepare(m *Message, v *DeviceView) bool {
	switch m.Kind {
	case KindBirth:
		if s.born[m.Device] || v == nil || !v.Slave.Up() {
			return false
		}
		m.Payload = appendDeviceBirth(nil, v)
		s.born[m.Device] = true
	case KindDeath:
		if m.Device != "" {
			if !s.born[m.Device] {
				return false
			}
			delete(s.born, m.Device)
		}
	case KindData:
		if m.Device != "" && !s.born[m.Device] {
			return false
		}
	}
	return true
}

// DataMessage: DDATA.
func (s *SparkplugRenderer) DataMessage(d *Device) Message {
	return Message{Topic: s.deviceTopic(sparkplug.DDATA, d), Sparkplug: true, Kind: KindData}
}

// Data renders a DDATA payload.
func (s *SparkplugRenderer) Data(b []byte, v *DeviceView) []byte { return appendDeviceData(b, v) }

// birth is a device's DBIRTH, rendered when it is sent.
func (s *SparkplugRenderer) birth(v *DeviceView) Message {
	return Message{Topic: s.deviceTopic(sparkplug.DBIRTH, v.Device), Sparkplug: true, Kind: KindBirth,
		Device: v.Device.Name, Index: v.Index, Gen: v.Gen}
}

// death is a device's DDEATH.
func (s *SparkplugRenderer) death(v *DeviceView) Message {
	pl := sparkplug.Payload{Timestamp: uint64(v.Now.UnixMilli())}
	return Message{Topic: s.deviceTopic(sparkplug.DDEATH, v.Device), Payload: sparkplug.AppendPayload(nil, &pl),
		Sparkplug: true, Kind: KindDeath, Device: v.Device.Name, Index: v.Index, Gen: v.Gen}
}

// Attached: the bus's state, then the DBIRTH of every device whose slave
// answers.
func (s *SparkplugRenderer) Attached(ms []Message, v *BusView) []Message {
	ms = s.BusChanged(ms, v)
	for i := range v.Model.Devices {
		if dv := v.Device(i); dv.Slave.Up() {
			ms = append(ms, s.birth(dv))
		}
	}
	return ms
}

// Detached: every device's DDEATH, then the bus's state.
func (s *SparkplugRenderer) Detached(ms []Message, v *BusView, _ string) []Message {
	for i := range v.Model.Devices {
		ms = append(ms, s.death(v.Device(i)))
	}
	return s.BusChanged(ms, v)
}

// Changed: a slave that stops answering (lost, refused) gets its DDEATH,
// one that answers again a DBIRTH; a change of quality while it answers
// is one DDATA with the last values and their quality.
func (s *SparkplugRenderer) Changed(ms []Message, v *DeviceView, was busstate.Slave) []Message {
	switch {
	case was.Up() && !v.Slave.Up():
		return append(ms, s.death(v))
	case !was.Up() && v.Slave.Up():
		return append(ms, s.birth(v))
	case v.Slave.Up() && was.Quality != v.Slave.Quality && v.Slave.Quality != busstate.QualityGood && len(v.Device.Signals) > 0:
		return append(ms, Message{Kind: KindData, Device: v.Device.Name, Index: v.Index, Gen: v.Gen})
	}
	return ms
}

// BusChanged publishes the bus's state as NDATA: Bus/Ready, and why not
// in the words of busstate.Bus.Ready.
func (s *SparkplugRenderer) BusChanged(ms []Message, v *BusView) []Message {
	if !v.HasState {
		return ms
	}
	s.nmu.Lock()
	s.bus, s.hasBus = v.State, true
	metrics := s.busMetrics(0)
	s.nmu.Unlock()
	return append(ms, s.nodeData(metrics, v.Now, v.Offline))
}

// busMetrics returns the bus's node metrics by alias (named when ts is
// set, for NBIRTH). nmu is held.
func (s *SparkplugRenderer) busMetrics(ts uint64) []sparkplug.Metric {
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
func (s *SparkplugRenderer) refusedMetrics(ts uint64) []sparkplug.Metric {
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

// spikeMetrics returns the spike metrics: Spikes/Count, and the fields of
// the last spike as Spikes/Last/<key>, null before the first; named when
// ts is set, for NBIRTH, where the last spike's fields carry its time.
// nmu is held.
func (s *SparkplugRenderer) spikeMetrics(ts uint64) []sparkplug.Metric {
	fields := spikeFields()
	ms := make([]sparkplug.Metric, 0, 1+len(fields))
	ms = append(ms, sparkplug.Metric{Name: spikeCountMetric, Alias: aliasSpikeCount, DataType: sparkplug.UInt64, Int: s.spikeCount})
	for i, f := range fields {
		m := sparkplug.Metric{Name: spikeLastFolder + f.key, Alias: aliasSpikeLast + uint64(i), DataType: f.typ, Null: s.spike == nil}
		if s.spike != nil {
			f.set(s.spike, &m)
		}
		ms = append(ms, m)
	}
	for i := range ms {
		ms[i].HasAlias, ms[i].Timestamp = true, ts
		if ts == 0 {
			ms[i].Name = ""
		} else if s.spike != nil {
			ms[i].Timestamp = uint64(s.spikeAt.UnixMilli())
		}
	}
	return ms
}

// nodeData returns an NDATA of ms, made at at; historical while offline.
func (s *SparkplugRenderer) nodeData(ms []sparkplug.Metric, at time.Time, offline bool) Message {
	b := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(at.UnixMilli())})
	for i := range ms {
		ms[i].Historical = offline
		ms[i].Timestamp = uint64(at.UnixMilli())
		b = sparkplug.AppendMetric(b, &ms[i])
	}
	return Message{Topic: s.nodeTopic(sparkplug.NDATA), Payload: b, Sparkplug: true}
}

// nodeBirth returns an NBIRTH payload (without seq): bdSeq, the rebirth
// control, the statistics metrics (null until the first window closed),
// the bus's state, the refused commands and the spikes (the last one's
// fields null until the first), each with its alias.
func (s *SparkplugRenderer) nodeBirth(bdSeq uint64, now time.Time) []byte {
	ts := uint64(now.UnixMilli())
	b := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: ts})
	b = sparkplug.AppendMetric(b, &sparkplug.Metric{Name: sparkplug.MetricBdSeq, HasAlias: true, Alias: aliasBdSeq,
		Timestamp: ts, DataType: sparkplug.UInt64, Int: bdSeq})
	b = sparkplug.AppendMetric(b, &sparkplug.Metric{Name: sparkplug.MetricRebirth, HasAlias: true, Alias: aliasRebirth,
		Timestamp: ts, DataType: sparkplug.Boolean})
	s.nmu.Lock()
	defer s.nmu.Unlock()
	for i, nm := range s.stats {
		m := sparkplug.Metric{DataType: nm.typ, Null: true}
		if i < len(s.nodeStat) {
			m = s.nodeStat[i]
		}
		m.Name, m.HasAlias, m.Alias, m.Timestamp = nm.name, true, nodeStatAlias(i), ts
		b = sparkplug.AppendMetric(b, &m)
	}
	ms := append(s.busMetrics(ts), s.refusedMetrics(ts)...)
	for _, m := range append(ms, s.spikeMetrics(ts)...) {
		b = sparkplug.AppendMetric(b, &m)
	}
	return b
}

// Window publishes the statistics of a window as NDATA, by alias.
func (s *SparkplugRenderer) Window(ms []Message, r *cyclestats.Report, st Stamp) []Message {
	s.nmu.Lock()
	s.nodeStat = nodeStats(s.nodeStat[:0], s.stats, r)
	metrics := make([]sparkplug.Metric, len(s.nodeStat))
	for i, m := range s.nodeStat {
		m.Name, m.HasAlias, m.Alias = "", true, nodeStatAlias(i)
		metrics[i] = m
	}
	s.nmu.Unlock()
	return append(ms, s.nodeData(metrics, st.At, st.Offline))
}

// Event publishes the event on the JSON events topic, at QoS 1; a cycle
// spike also as NDATA of the Spikes/… node metrics, at the spike's time:
// one per cycle-spike event, so never more often than the events.
func (s *SparkplugRenderer) Event(ms []Message, e *Event) []Message {
	ms = append(ms, Message{Topic: s.root + "/events", Payload: e.JSON, QoS: 1})
	if e.Spike == nil {
		return ms
	}
	sp := *e.Spike
	s.nmu.Lock()
	s.spike, s.spikeAt = &sp, e.At
	s.spikeCount++
	metrics := s.spikeMetrics(0)
	s.nmu.Unlock()
	return append(ms, s.nodeData(metrics, e.At, e.Offline))
}

// Refused answers a refused write as NDATA: Commands/Last Refused says
// which (the last of the refusals it answers) and why, Commands/Refused
// counts them.
func (s *SparkplugRenderer) Refused(ms []Message, r *Refusal) []Message {
	s.nmu.Lock()
	s.refusedCount += r.Count
	target := r.Slave
	switch {
	case r.Signal != "":
		target += "/" + r.Signal
	case r.Slave == "":
		target = r.Topic // a command refused as a whole: an NCMD
	}
	s.refusedLast = target + ": " + string(r.Err.Code) + ": " + r.Err.Reason
	metrics := s.refusedMetrics(0)
	s.nmu.Unlock()
	return append(ms, s.nodeData(metrics, r.At, r.Offline))
}
