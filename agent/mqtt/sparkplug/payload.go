// Package sparkplug encodes and decodes Sparkplug B payloads and names
// Sparkplug topics.
//
// A Sparkplug B payload is a Protocol Buffers (proto2) message whose schema
// the Eclipse Sparkplug specification and the Eclipse Tahu project publish
// (sparkplug_b.proto, message Payload). This package writes and reads the
// subset an edge node needs — the payload's timestamp, metrics and seq; a
// metric's name, alias, timestamp, datatype, is_historical, is_null, its
// scalar value and its properties (a PropertySet of scalar values) — directly on the wire format with
// google.golang.org/protobuf/encoding/protowire, so that encoding appends to
// a caller's buffer without allocating. Fields it does not know are skipped
// when decoding, as protobuf requires.
package sparkplug

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// DataType is a Sparkplug B metric datatype (the Payload.Metric datatype
// field).
type DataType uint32

// The datatypes this package encodes; the numbers are the specification's.
const (
	TypeUnknown DataType = 0
	Int8        DataType = 1
	Int16       DataType = 2
	Int32       DataType = 3
	Int64       DataType = 4
	UInt8       DataType = 5
	UInt16      DataType = 6
	UInt32      DataType = 7
	UInt64      DataType = 8
	Float       DataType = 9
	Double      DataType = 10
	Boolean     DataType = 11
	String      DataType = 12
	DateTime    DataType = 13
	Text        DataType = 14
)

// String names t as the specification does.
func (t DataType) String() string {
	names := [...]string{"Unknown", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
		"Float", "Double", "Boolean", "String", "DateTime", "Text"}
	if int(t) < len(names) {
		return names[t]
	}
	return fmt.Sprintf("DataType(%d)", uint32(t))
}

// Field numbers of message Payload.
const (
	fieldTimestamp = 1
	fieldMetrics   = 2
	fieldSeq       = 3
)

// Field numbers of message Payload.Metric.
const (
	metricName         = 1
	metricAlias        = 2
	metricTimestamp    = 3
	metricDataType     = 4
	metricIsHistorical = 5
	metricIsTransient  = 6
	metricIsNull       = 7
	metricProperties   = 9
	metricIntValue     = 10
	metricLongValue    = 11
	metricFloatValue   = 12
	metricDoubleValue  = 13
	metricBooleanValue = 14
	metricStringValue  = 15
)

// Field numbers of message Payload.PropertySet and Payload.PropertyValue.
const (
	setKeys   = 1
	setValues = 2

	propType   = 1
	propIsNull = 2
	propInt    = 3
	propLong   = 4
	propFloat  = 5
	propDouble = 6
	propBool   = 7
	propString = 8
)

// Property names and values of the Sparkplug B 3.0 specification and its
// common practice.
const (
	// PropertyQuality is the data quality of a metric's value (Int32):
	// QualityBad, QualityGood or QualityStale.
	PropertyQuality = "Quality"
	// PropertyEngUnit is a metric's engineering unit (String), as host
	// applications (Ignition's "engUnit") read it.
	PropertyEngUnit = "engUnit"
	QualityBad      = 0
	QualityGood     = 192
	QualityStale    = 500
)

// Property is one key and value of a metric's PropertySet. Which value
// field counts depends on Type, as for Metric; nested property sets are
// not encoded.
type Property struct {
	Key   string
	Type  DataType
	Null  bool
	Int   uint64
	Float float64
	Bool  bool
	Str   string
}

// Metric is one metric of a payload. Which value field counts depends on
// DataType: Int for the integer types and DateTime (two's complement for
// the signed ones), Float for Float and Double, Bool for Boolean, Str for
// String and Text.
type Metric struct {
	// Name is sent in births (and may name the metric of a command).
	Name string
	// Alias stands for Name after the birth, when HasAlias.
	Alias    uint64
	HasAlias bool
	// Timestamp is the acquisition time in milliseconds since the Unix
	// epoch; 0 leaves it out.
	Timestamp uint64
	DataType  DataType
	// Historical marks a value sent after the fact (store and forward).
	Historical bool
	// Null says the metric has no value.
	Null bool

	Int   uint64
	Float float64
	Bool  bool
	Str   string
	// HasValue reports, after DecodePayload, whether a value field was
	// present.
	HasValue bool
	// Properties is the metric's PropertySet (engineering unit, quality,
	// …), in order.
	Properties []Property
}

// Payload is a Sparkplug B payload.
type Payload struct {
	// Timestamp is the sending time in milliseconds since the Unix epoch;
	// 0 leaves it out.
	Timestamp uint64
	Metrics   []Metric
	// Seq is the message sequence number (0–255) when HasSeq.
	Seq    uint64
	HasSeq bool
}

// AppendPayload appends the wire encoding of p to b. It allocates only
// when b lacks capacity.
func AppendPayload(b []byte, p *Payload) []byte {
	if p.Timestamp != 0 {
		b = protowire.AppendTag(b, fieldTimestamp, protowire.VarintType)
		b = protowire.AppendVarint(b, p.Timestamp)
	}
	for i := range p.Metrics {
		b = AppendMetric(b, &p.Metrics[i])
	}
	if p.HasSeq {
		b = AppendSeq(b, p.Seq)
	}
	return b
}

// AppendMetric appends one Payload.metrics field holding m. Appending the
// metrics one by one after a timestamp is the same as AppendPayload.
func AppendMetric(b []byte, m *Metric) []byte {
	b = protowire.AppendTag(b, fieldMetrics, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(metricSize(m)))
	if m.Name != "" {
		b = protowire.AppendTag(b, metricName, protowire.BytesType)
		b = protowire.AppendString(b, m.Name)
	}
	if m.HasAlias {
		b = protowire.AppendTag(b, metricAlias, protowire.VarintType)
		b = protowire.AppendVarint(b, m.Alias)
	}
	if m.Timestamp != 0 {
		b = protowire.AppendTag(b, metricTimestamp, protowire.VarintType)
		b = protowire.AppendVarint(b, m.Timestamp)
	}
	b = protowire.AppendTag(b, metricDataType, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(m.DataType))
	if m.Historical {
		b = protowire.AppendTag(b, metricIsHistorical, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	if len(m.Properties) > 0 {
		b = protowire.AppendTag(b, metricProperties, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(propertySetSize(m.Properties)))
		b = appendPropertySet(b, m.Properties)
	}
	if m.Null {
		b = protowire.AppendTag(b, metricIsNull, protowire.VarintType)
		return protowire.AppendVarint(b, 1)
	}
	b = appendValue(b, metricIntValue, m.DataType, m.Int, m.Float, m.Bool, m.Str)
	return b
}

// AppendSeq appends the Payload.seq field. Protobuf decoders accept fields
// in any order, so a payload encoded without seq can get it at send time.
func AppendSeq(b []byte, seq uint64) []byte {
	b = protowire.AppendTag(b, fieldSeq, protowire.VarintType)
	return protowire.AppendVarint(b, seq)
}

// valueField returns the Metric field that carries a value of type t, 0
// for types this package does not encode.
func valueField(t DataType) protowire.Number {
	switch t {
	case Int8, Int16, Int32, UInt8, UInt16, UInt32:
		return metricIntValue
	case Int64, UInt64, DateTime:
		return metricLongValue
	case Float:
		return metricFloatValue
	case Double:
		return metricDoubleValue
	case Boolean:
		return metricBooleanValue
	case String, Text:
		return metricStringValue
	}
	return 0
}

// metricSize is the length of m's encoding without its own tag and length.
func metricSize(m *Metric) int {
	n := 0
	if m.Name != "" {
		n += protowire.SizeTag(metricName) + protowire.SizeBytes(len(m.Name))
	}
	if m.HasAlias {
		n += protowire.SizeTag(metricAlias) + protowire.SizeVarint(m.Alias)
	}
	if m.Timestamp != 0 {
		n += protowire.SizeTag(metricTimestamp) + protowire.SizeVarint(m.Timestamp)
	}
	n += protowire.SizeTag(metricDataType) + protowire.SizeVarint(uint64(m.DataType))
	if m.Historical {
		n += protowire.SizeTag(metricIsHistorical) + 1
	}
	if len(m.Properties) > 0 {
		n += protowire.SizeTag(metricProperties) + protowire.SizeBytes(propertySetSize(m.Properties))
	}
	if m.Null {
		return n + protowire.SizeTag(metricIsNull) + 1
	}
	switch f := valueField(m.DataType); f {
	case metricIntValue:
		n += protowire.SizeTag(f) + protowire.SizeVarint(m.Int&math.MaxUint32)
	case metricLongValue:
		n += protowire.SizeTag(f) + protowire.SizeVarint(m.Int)
	case metricFloatValue:
		n += protowire.SizeTag(f) + protowire.SizeFixed32()
	case metricDoubleValue:
		n += protowire.SizeTag(f) + protowire.SizeFixed64()
	case metricBooleanValue:
		n += protowire.SizeTag(f) + 1
	case metricStringValue:
		n += protowire.SizeTag(f) + protowire.SizeBytes(len(m.Str))
	}
	return n
}

// appendPropertySet appends the fields of a PropertySet: every key, then
// every value.
func appendPropertySet(b []byte, ps []Property) []byte {
	for i := range ps {
		b = protowire.AppendTag(b, setKeys, protowire.BytesType)
		b = protowire.AppendString(b, ps[i].Key)
	}
	for i := range ps {
		pv := &ps[i]
		b = protowire.AppendTag(b, setValues, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(propertyValueSize(pv)))
		b = protowire.AppendTag(b, propType, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(pv.Type))
		if pv.Null {
			b = protowire.AppendTag(b, propIsNull, protowire.VarintType)
			b = protowire.AppendVarint(b, 1)
			continue
		}
		b = appendValue(b, propInt, pv.Type, pv.Int, pv.Float, pv.Bool, pv.Str)
	}
	return b
}

// appendValue appends the value field of a metric or a property value of
// type dt: the two messages number their six value fields in the same
// order (int, long, float, double, boolean, string) from first on.
func appendValue(b []byte, first protowire.Number, dt DataType, i uint64, f float64, bo bool, str string) []byte {
	field := first + protowire.Number(valueField(dt)-metricIntValue)
	switch valueField(dt) {
	case metricIntValue:
		b = protowire.AppendTag(b, field, protowire.VarintType)
		b = protowire.AppendVarint(b, i&math.MaxUint32)
	case metricLongValue:
		b = protowire.AppendTag(b, field, protowire.VarintType)
		b = protowire.AppendVarint(b, i)
	case metricFloatValue:
		b = protowire.AppendTag(b, field, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(float32(f)))
	case metricDoubleValue:
		b = protowire.AppendTag(b, field, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(f))
	case metricBooleanValue:
		b = protowire.AppendTag(b, field, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(bo))
	case metricStringValue:
		b = protowire.AppendTag(b, field, protowire.BytesType)
		b = protowire.AppendString(b, str)
	}
	return b
}

func propertySetSize(ps []Property) int {
	n := 0
	for i := range ps {
		n += protowire.SizeTag(setKeys) + protowire.SizeBytes(len(ps[i].Key))
		n += protowire.SizeTag(setValues) + protowire.SizeBytes(propertyValueSize(&ps[i]))
	}
	return n
}

func propertyValueSize(pv *Property) int {
	n := protowire.SizeTag(propType) + protowire.SizeVarint(uint64(pv.Type))
	if pv.Null {
		return n + protowire.SizeTag(propIsNull) + 1
	}
	switch valueField(pv.Type) {
	case metricIntValue:
		n += protowire.SizeTag(propInt) + protowire.SizeVarint(pv.Int&math.MaxUint32)
	case metricLongValue:
		n += protowire.SizeTag(propLong) + protowire.SizeVarint(pv.Int)
	case metricFloatValue:
		n += protowire.SizeTag(propFloat) + protowire.SizeFixed32()
	case metricDoubleValue:
		n += protowire.SizeTag(propDouble) + protowire.SizeFixed64()
	case metricBooleanValue:
		n += protowire.SizeTag(propBool) + 1
	case metricStringValue:
		n += protowire.SizeTag(propString) + protowire.SizeBytes(len(pv.Str))
	}
	return n
}
