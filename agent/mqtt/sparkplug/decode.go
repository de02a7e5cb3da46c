package sparkplug

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Decoding: what DecodePayload reads of a payload, and how it refuses a
// malformed one.

// ErrMalformed is matched (errors.Is) by every error DecodePayload returns.
var ErrMalformed = errors.New("sparkplug: malformed payload")

// DecodePayload decodes a Sparkplug B payload (a command, NCMD or DCMD,
// typically) into p, replacing its contents. Unknown fields, and known
// ones with an unexpected wire type, are skipped as protobuf skips them;
// the metric fields above are read. On error p is left empty.
func DecodePayload(b []byte, p *Payload) error {
	*p = Payload{Metrics: p.Metrics[:0]}
	err := decodePayload(b, p)
	if err != nil {
		*p = Payload{Metrics: p.Metrics[:0]}
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

func decodePayload(b []byte, p *Payload) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == fieldTimestamp && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			p.Timestamp, b = v, b[n:]
		case num == fieldSeq && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			p.Seq, p.HasSeq, b = v, true, b[n:]
		case num == fieldMetrics && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			var m Metric
			if err := decodeMetric(v, &m); err != nil {
				return fmt.Errorf("metric %d: %w", len(p.Metrics), err)
			}
			p.Metrics = append(p.Metrics, m)
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return nil
}

func decodeMetric(b []byte, m *Metric) error {
	var field protowire.Number // the value field, the last one seen
	values := 0
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, s []byte) error {
		if typ == protowire.BytesType {
			switch num {
			case metricName:
				m.Name = string(s)
			case metricStringValue:
				m.Str, m.HasValue = string(s), true
			case metricProperties:
				var err error
				if m.Properties, err = decodePropertySet(s, m.Properties[:0]); err != nil {
					return fmt.Errorf("properties: %w", err)
				}
			}
		}
		if !wireTypeFits(num, typ) {
			return nil // as protobuf does: a known number with another wire type is an unknown field
		}
		if isValueField(num) {
			field = num
			values++
		}
		m.setScalar(num, v)
		return nil
	})
	if err != nil {
		return err
	}
	return checkValueField(m, field, values)
}

// setScalar sets the field num of m that a varint or a fixed-width
// number v carries; other fields are left alone.
func (m *Metric) setScalar(num protowire.Number, v uint64) {
	switch num {
	case metricAlias:
		m.Alias, m.HasAlias = v, true
	case metricTimestamp:
		m.Timestamp = v
	case metricDataType:
		m.DataType = DataType(v)
	case metricIsHistorical:
		m.Historical = v != 0
	case metricIsNull:
		m.Null = v != 0
	case metricIntValue, metricLongValue:
		m.Int, m.HasValue = v, true
	case metricFloatValue:
		m.Float, m.HasValue = float64(math.Float32frombits(uint32(v))), true
	case metricDoubleValue:
		m.Float, m.HasValue = math.Float64frombits(v), true
	case metricBooleanValue:
		m.Bool, m.HasValue = v != 0, true
	}
}

// isValueField reports whether num is one of the Metric's value fields.
func isValueField(num protowire.Number) bool {
	return num >= metricIntValue && num <= metricStringValue
}

// valueFieldName names a value field as the schema does.
func valueFieldName(num protowire.Number) string {
	switch num {
	case metricIntValue:
		return "int_value"
	case metricLongValue:
		return "long_value"
	case metricFloatValue:
		return "float_value"
	case metricDoubleValue:
		return "double_value"
	case metricBooleanValue:
		return "boolean_value"
	}
	return "string_value"
}

// checkValueField refuses a metric whose value is ambiguous: more than
// one value field, or a field that is not the one its datatype puts the
// value in (a Boolean in int_value would otherwise read as false, an
// Int16 in double_value as 0). Integers may come in int_value or
// long_value, as encoders differ (Tahu puts UInt32 in long_value).
func checkValueField(m *Metric, field protowire.Number, values int) error {
	if values > 1 {
		return fmt.Errorf("metric %q carries %d values; want one", m.Name, values)
	}
	want := valueField(m.DataType)
	if values == 0 || want == 0 || field == want {
		return nil
	}
	if (want == metricIntValue || want == metricLongValue) && (field == metricIntValue || field == metricLongValue) {
		return nil
	}
	return fmt.Errorf("metric %q of datatype %v carries its value in %s; a %v value goes in %s",
		m.Name, m.DataType, valueFieldName(field), m.DataType, valueFieldName(want))
}

// decodePropertySet decodes a PropertySet's scalar values, pairing its
// keys and values in order; nested sets are skipped, their keys kept with
// a null value.
func decodePropertySet(b []byte, dst []Property) ([]Property, error) {
	var keys int
	vals := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != setKeys && num != setValues) {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num == setKeys {
			if keys >= len(dst) {
				dst = append(dst, Property{Null: true})
			}
			dst[keys].Key = string(v)
			keys++
			continue
		}
		if vals >= len(dst) {
			dst = append(dst, Property{})
		}
		if err := decodePropertyValue(v, &dst[vals]); err != nil {
			return nil, err
		}
		vals++
	}
	if keys != vals {
		return nil, fmt.Errorf("%d keys and %d values", keys, vals)
	}
	return dst, nil
}

func decodePropertyValue(b []byte, p *Property) error {
	key := p.Key
	*p = Property{Key: key}
	return eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, s []byte) error {
		switch {
		case num == propString && typ == protowire.BytesType:
			p.Str = string(s)
		case num == propType && typ == protowire.VarintType:
			p.Type = DataType(v)
		case num == propIsNull && typ == protowire.VarintType:
			p.Null = v != 0
		case (num == propInt || num == propLong) && typ == protowire.VarintType:
			p.Int = v
		case num == propFloat && typ == protowire.Fixed32Type:
			p.Float = float64(math.Float32frombits(uint32(v)))
		case num == propDouble && typ == protowire.Fixed64Type:
			p.Float = math.Float64frombits(v)
		case num == propBool && typ == protowire.VarintType:
			p.Bool = v != 0
		}
		return nil
	})
}

// eachField calls fn with each field of the message b, in order: its
// number, its wire type and its value (consumeValue). It stops at the
// first error fn returns, or at a malformed field.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v uint64, s []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		v, s, n := consumeValue(num, typ, b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v, s); err != nil {
			return err
		}
	}
	return nil
}

// wireTypeFits reports whether a known Metric field came with the wire
// type its schema gives it; unknown field numbers fit any.
func wireTypeFits(num protowire.Number, typ protowire.Type) bool {
	switch num {
	case metricName, metricStringValue, metricProperties:
		return typ == protowire.BytesType
	case metricAlias, metricTimestamp, metricDataType, metricIsHistorical, metricIsTransient, metricIsNull,
		metricIntValue, metricLongValue, metricBooleanValue:
		return typ == protowire.VarintType
	case metricFloatValue:
		return typ == protowire.Fixed32Type
	case metricDoubleValue:
		return typ == protowire.Fixed64Type
	}
	return true
}

// consumeValue consumes the value of field num, of wire type typ, at the
// start of b: a varint or a fixed-width number as v, a length-delimited one
// as s (aliasing b), any other type skipped. n is the bytes consumed, < 0
// for a malformed value (protowire.ParseError).
func consumeValue(num protowire.Number, typ protowire.Type, b []byte) (v uint64, s []byte, n int) {
	switch typ {
	case protowire.VarintType:
		v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var u uint32
		u, n = protowire.ConsumeFixed32(b)
		v = uint64(u)
	case protowire.Fixed64Type:
		v, n = protowire.ConsumeFixed64(b)
	case protowire.BytesType:
		s, n = protowire.ConsumeBytes(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	return v, s, n
}
