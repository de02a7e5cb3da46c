package sparkplug

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// MarkHistorical returns a copy of payload p (encoded) whose every metric
// has is_historical set, as data sent after the fact (store and forward)
// must. A metric's other fields are kept as they are: the flag is
// appended to each not marked yet, which protobuf reads as set (the last
// value of a field wins); marking a marked payload changes nothing.
func MarkHistorical(p []byte) ([]byte, error) {
	out := make([]byte, 0, len(p)+16)
	for b := p; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, protowire.ParseError(m))
		}
		field := b[:n+m]
		b = b[n+m:]
		if num != fieldMetrics || typ != protowire.BytesType {
			out = append(out, field...)
			continue
		}
		metric, _ := protowire.ConsumeBytes(field[n:])
		if historical(metric) {
			out = append(out, field...) // marked already: kept as it is
			continue
		}
		out = protowire.AppendTag(out, fieldMetrics, protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(len(metric)+2))
		out = append(out, metric...)
		out = protowire.AppendTag(out, metricIsHistorical, protowire.VarintType)
		out = protowire.AppendVarint(out, 1)
	}
	return out, nil
}

// historical tells whether an encoded metric's last is_historical field
// says true (false for a metric too damaged to tell).
func historical(metric []byte) bool {
	set := false
	for b := metric; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		if num == metricIsHistorical && typ == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(b[n:])
			set = v != 0
		}
		b = b[n+m:]
	}
	return set
}
