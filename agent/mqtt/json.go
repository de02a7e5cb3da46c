package mqtt

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/internal/jsonstr"
)

// jsonObject appends a JSON object to a byte slice field by field, without
// allocating beyond the slice's growth.
type jsonObject struct {
	b []byte
	n int
}

func beginObject(b []byte) jsonObject { return jsonObject{b: append(b, '{')} }

func (o *jsonObject) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = jsonstr.Append(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonObject) uint(k string, v uint64) {
	o.key(k)
	o.b = strconv.AppendUint(o.b, v, 10)
}

func (o *jsonObject) float(k string, v float64) {
	o.key(k)
	o.b = appendJSONFloat(o.b, v)
}

func (o *jsonObject) bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *jsonObject) string(k, v string) {
	o.key(k)
	o.b = jsonstr.Append(o.b, v)
}

func (o *jsonObject) end() []byte { return append(o.b, '}') }

// pdHeader is what a pd payload says besides the values: when (ts, in
// milliseconds since the Unix epoch), which message of the device (seq,
// so a subscriber sees a gap where one was dropped), from which cycle, and
// the quality of the values, with since when they are stale.
type pdHeader struct {
	tsMillis   int64
	seq, cycle uint64
	quality    busstate.Quality
	since      time.Time
}

// appendProcessData appends the pd payload of device d holding the raw
// values vals (one per signal):
// {"ts":…,"seq":…,"cycle":…,"quality":"good","values":{…},"units":{…}}.
// Stale values carry "stale_since" (milliseconds since the Unix epoch);
// invalid ones are null. It allocates only when b lacks capacity.
func appendProcessData(b []byte, d *Device, vals []uint64, h pdHeader) []byte {
	o := beginObject(b)
	o.int("ts", h.tsMillis)
	o.uint("seq", h.seq)
	o.uint("cycle", h.cycle)
	o.string("quality", h.quality.String())
	if h.quality == busstate.QualityStale {
		o.int("stale_since", h.since.UnixMilli())
	}
	o.key("values")
	o.b = append(o.b, '{')
	units := false
	for i := range d.Signals {
		s := &d.Signals[i]
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = jsonstr.Append(o.b, s.Name)
		o.b = append(o.b, ':')
		if h.quality == busstate.QualityInvalid {
			o.b = append(o.b, "null"...)
		} else {
			o.b = s.AppendJSON(o.b, vals[i])
		}
		units = units || s.Unit != ""
	}
	o.b = append(o.b, '}')
	if units {
		o.key("units")
		o.b = append(o.b, '{')
		first := true
		for i := range d.Signals {
			s := &d.Signals[i]
			if s.Unit == "" {
				continue
			}
			if !first {
				o.b = append(o.b, ',')
			}
			first = false
			o.b = jsonstr.Append(o.b, s.Name)
			o.b = append(o.b, ':')
			o.b = jsonstr.Append(o.b, s.Unit)
		}
		o.b = append(o.b, '}')
	}
	return o.end()
}

// metaPayload is the retained …/meta/<slave> message describing a device.
type metaPayload struct {
	Slave       string  `json:"slave"`
	Position    int     `json:"position"`
	OrderCode   string  `json:"order_code"`
	Device      string  `json:"device"`
	VendorID    uint32  `json:"vendor_id"`
	ProductCode uint32  `json:"product_code"`
	Revision    uint32  `json:"revision"`
	Serial      uint32  `json:"serial"`
	IntervalMS  float64 `json:"interval_ms"`
	OnChange    bool    `json:"onchange"`
	Topic       string  `json:"topic"`
	// State is the slave's state when the meta was published.
	State   metaState    `json:"state"`
	Signals []metaSignal `json:"signals"`
}

// metaState is a slave's state in its meta message, in the words of
// package busstate.
type metaState struct {
	Presence     string `json:"presence"`
	AL           string `json:"al_state"`
	ALStatusCode uint16 `json:"al_status_code"`
	Quality      string `json:"quality"`
	SinceMS      int64  `json:"since"`
	Condition    string `json:"condition"`
}

type metaSignal struct {
	Name      string   `json:"name"`
	Direction string   `json:"direction"`
	Type      string   `json:"type"`
	Unit      string   `json:"unit,omitempty"`
	Scale     *float64 `json:"scale,omitempty"`
	Offset    *float64 `json:"offset,omitempty"`
	Deadband  float64  `json:"deadband,omitempty"`
	Bits      int      `json:"bits"`
	BitOffset int      `json:"bit_offset"`
	Object    string   `json:"object,omitempty"`
	PDO       string   `json:"pdo,omitempty"`
	Entry     string   `json:"entry,omitempty"`
	Writable  bool     `json:"writable"`
	Min       *float64 `json:"min,omitempty"`
	Max       *float64 `json:"max,omitempty"`
	SetTopic  string   `json:"set_topic,omitempty"`
}

// metaJSON returns the meta payload of device d in state sl; pdTopic and
// setTopic are where its data goes and where writes to its signal go
// (setTopic without the signal level, "" without writes).
func metaJSON(d *Device, sl *busstate.Slave, pdTopic, setTopic string) ([]byte, error) {
	m := metaPayload{
		State: metaState{Presence: sl.Presence.String(), AL: sl.AL.String(), ALStatusCode: uint16(sl.ALStatusCode),
			Quality: sl.Quality.String(), SinceMS: sl.Since.UnixMilli(), Condition: sl.Condition()},
		Slave: d.Name, Position: d.Slave.Position, OrderCode: d.Slave.OrderCode, Device: d.Slave.DeviceName,
		VendorID: d.Slave.VendorID, ProductCode: d.Slave.ProductCode, Revision: d.Slave.Revision, Serial: d.Slave.Serial,
		IntervalMS: float64(d.Interval.Microseconds()) / 1000, OnChange: d.OnChange, Topic: pdTopic,
		Signals: make([]metaSignal, 0, len(d.Signals)),
	}
	for i := range d.Signals {
		s := &d.Signals[i]
		ms := metaSignal{Name: s.Name, Direction: "input", Type: s.Type.String(), Unit: s.Unit, Deadband: s.Deadband,
			Bits: s.Bits, BitOffset: s.BitOffset, PDO: s.Entry.PDOName, Entry: s.Entry.Name, Writable: s.Writable}
		if s.Output {
			ms.Direction = "output"
		}
		if s.Entry.Index != 0 {
			ms.Object = fmt.Sprintf("0x%04X:%02X", s.Entry.Index, s.Entry.SubIndex)
		}
		if s.Type == TypeFloat && !s.Real {
			ms.Scale, ms.Offset = &s.Scale, &s.Offset
		}
		if s.Writable {
			lo, hi := s.Min, s.Max
			ms.Min, ms.Max = &lo, &hi
			if setTopic != "" {
				ms.SetTopic = setTopic + "/" + s.Name
			}
		}
		m.Signals = append(m.Signals, ms)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("mqtt: meta of %s: %w", d.Name, err)
	}
	return b, nil
}
