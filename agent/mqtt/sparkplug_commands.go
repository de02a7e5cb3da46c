package mqtt

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// The Sparkplug commands: NCMD and DCMD, the metrics they name and the
// values they carry.

// Command takes NCMD (rebirth) and DCMD (writes, by name — the metric's
// or the signal's — or by alias), each stamped with the payload's time.
func (s *SparkplugRenderer) Command(as []Action, topic string, payload []byte, model *Model) []Action {
	t, ok := sparkplug.ParseTopic(topic)
	if !ok || t.Group != s.group || t.Node != s.node {
		return as
	}
	var pl sparkplug.Payload
	err := sparkplug.DecodePayload(payload, &pl)
	sent := sparkplugSent(&pl)
	switch t.Type {
	case sparkplug.NCMD:
		if err != nil {
			s.log.Warn("mqtt: malformed NCMD", "err", err)
			return as
		}
		a := Action{Kind: ActionNode, Topic: topic, Sent: sent}
		for _, m := range pl.Metrics {
			if (m.Name == sparkplug.MetricRebirth || (m.Name == "" && m.HasAlias && m.Alias == aliasRebirth)) && m.DataType == sparkplug.Boolean && m.Bool {
				a.Rebirth = true
			}
		}
		return append(as, a)
	case sparkplug.DCMD:
		if err == nil && len(pl.Metrics) > maxDCMDMetrics {
			err = fmt.Errorf("DCMD with %d metrics; at most %d per message", len(pl.Metrics), maxDCMDMetrics)
		}
		if err != nil {
			return append(as, Action{Kind: ActionRefuse, Slave: t.Device, Topic: topic, Err: reject(RejectMalformed, "%v", err)})
		}
		for i := range pl.Metrics {
			m := &pl.Metrics[i]
			as = append(as, Action{Kind: ActionWrite, Slave: t.Device, Signal: signalName(model, t.Device, m), Topic: topic, Sent: sent,
				Value: func(sig *Signal) (float64, uint64, error) { return checkValue(metricValue(m), sig) }})
		}
	}
	return as
}

// sparkplugSent is the time a command payload says it was sent
// (Sparkplug requires one in NCMD and DCMD; 0 is taken for none). One
// beyond the int64 milliseconds is far in the future, and stays so.
func sparkplugSent(pl *sparkplug.Payload) time.Time {
	if pl.Timestamp == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(min(pl.Timestamp, math.MaxInt64)))
}

// CommandOf: NCMD and DCMD of this node.
func (s *SparkplugRenderer) CommandOf(topic string) (slave, signal string, ok bool) {
	t, ok := sparkplug.ParseTopic(topic)
	if !ok || t.Group != s.group || t.Node != s.node || (t.Type != sparkplug.NCMD && t.Type != sparkplug.DCMD) {
		return "", "", false
	}
	return t.Device, "", true
}

// signalName returns the name of the signal of the device of model a
// command metric means: by alias, by metric name ("Outputs/Channel
// 1/Output") or by signal name; the metric's name when none fits.
func signalName(model *Model, device string, m *sparkplug.Metric) string {
	var d *Device
	if model != nil {
		d = model.Device(device)
	}
	if d == nil {
		return m.Name
	}
	if m.Name == "" && m.HasAlias {
		for _, sig := range d.Signals {
			if sig.Alias == m.Alias {
				return sig.Name
			}
		}
		return ""
	}
	for k, n := range sparkplugNames(d) {
		if n == m.Name {
			return d.Signals[k].Name
		}
	}
	return m.Name
}

// metricValue turns the value of a command metric into what checkValue
// takes: bool, number, string, nil, nonFinite or a *RejectError. An
// integer must fit its datatype as sent: an Int8 of 300 is refused, never
// cut to 44. An int_value (a protobuf uint32) carries a negative number
// as its 32-bit two's complement, a long_value as its 64-bit one.
func metricValue(m *sparkplug.Metric) any {
	if m.Null || !m.HasValue {
		return nil
	}
	switch m.DataType {
	case sparkplug.Boolean:
		return m.Bool
	case sparkplug.Int8, sparkplug.Int16, sparkplug.Int32, sparkplug.Int64:
		v, ok := signedValue(m.Int, intBits(m.DataType))
		if !ok {
			return reject(RejectOutOfRange, "%s: %d does not fit datatype %v", metricLabel(m), m.Int, m.DataType)
		}
		return number(strconv.FormatInt(v, 10))
	case sparkplug.UInt8, sparkplug.UInt16, sparkplug.UInt32, sparkplug.UInt64:
		if bits := intBits(m.DataType); bits < 64 && m.Int >= 1<<bits {
			return reject(RejectOutOfRange, "%s: %d does not fit datatype %v", metricLabel(m), m.Int, m.DataType)
		}
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

// signedValue reads raw, the integer field of a metric of a signed
// datatype of bits bits, as the 64-bit two's complement of the value, or
// as its 32-bit one (int_value); ok is false when neither fits.
func signedValue(raw uint64, bits uint) (int64, bool) {
	fits := func(v int64) bool { return bits == 64 || (v >= -1<<(bits-1) && v < 1<<(bits-1)) }
	if v := int64(raw); fits(v) {
		return v, true
	}
	if raw <= math.MaxUint32 {
		if v := int64(int32(uint32(raw))); fits(v) {
			return v, true
		}
	}
	return 0, false
}

// metricLabel names a command metric in a refusal: its name, or its alias.
func metricLabel(m *sparkplug.Metric) string {
	if m.Name == "" && m.HasAlias {
		return "alias " + strconv.FormatUint(m.Alias, 10)
	}
	return m.Name
}

// intBits is the width of an integer datatype.
func intBits(t sparkplug.DataType) uint {
	switch t {
	case sparkplug.Int8, sparkplug.UInt8:
		return 8
	case sparkplug.Int16, sparkplug.UInt16:
		return 16
	case sparkplug.Int32, sparkplug.UInt32:
		return 32
	}
	return 64
}
