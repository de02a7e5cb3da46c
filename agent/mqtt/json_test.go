package mqtt

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/cyclestats/stats"
)

func TestAppendProcessData(t *testing.T) {
	m, _ := NewModel(referenceBus(), Rules{Interval: time.Second})
	img := make([]byte, m.ImageBytes)
	img[0] = 0b0000_0101                              // EL2004-1: channels 1 and 3 on
	img[1], img[2] = 0xFF, 0x3F                       // EL4132-5 channel 1: 0x3FFF
	img[5+1] = 0b0000_0100                            // EL3204-7 channel 1: limit 1 = 2
	img[5+2], img[5+3] = byte(uint16(215)), 0         // channel 1 value 21.5 °C
	img[5+5], img[5+6] = byte(0xFF38&0xFF), 0xFF38>>8 // channel 2 value −20.0 °C
	var got map[string]any
	check := func(dev string, want map[string]any) {
		t.Helper()
		b := appendProcessData(nil, m.Device(dev), rawValues(m.Device(dev), img), pdHeader{tsMillis: 1700000000123, seq: 7, cycle: 42, quality: busstate.QualityGood})
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v\n%s", dev, err, b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", dev, got, want)
		}
	}
	check("EL2004-1", map[string]any{"ts": 1700000000123.0, "seq": 7.0, "cycle": 42.0, "quality": "good", "values": map[string]any{
		"channel_1.output": true, "channel_2.output": false, "channel_3.output": true, "channel_4.output": false}})
	b := appendProcessData(nil, m.Device("EL3204-7"), rawValues(m.Device("EL3204-7"), img), pdHeader{tsMillis: 1, seq: 1, cycle: 1, quality: busstate.QualityGood})
	var pd struct {
		Values map[string]any    `json:"values"`
		Units  map[string]string `json:"units"`
	}
	if err := json.Unmarshal(b, &pd); err != nil {
		t.Fatal(err)
	}
	if pd.Values["rtd_inputs_channel_1.value"] != 21.5 || pd.Values["rtd_inputs_channel_2.value"] != -20.0 ||
		pd.Values["rtd_inputs_channel_1.limit_1"] != 2.0 || pd.Values["rtd_inputs_channel_1.underrange"] != false {
		t.Errorf("EL3204 values: %v", pd.Values)
	}
	if pd.Units["rtd_inputs_channel_1.value"] != "°C" || len(pd.Units) != 4 {
		t.Errorf("EL3204 units: %v", pd.Units)
	}
}

func TestAppendProcessDataAllocatesNothing(t *testing.T) {
	m, _ := NewModel(referenceBus(), Rules{Interval: time.Second})
	img := make([]byte, m.ImageBytes)
	buf := make([]byte, 0, 4096)
	d := m.Device("EL3204-7")
	vals := rawValues(d, img)
	if n := testing.AllocsPerRun(100, func() {
		buf = appendProcessData(buf[:0], d, vals, pdHeader{tsMillis: 1, seq: 2, cycle: 3, quality: busstate.QualityStale, since: time.UnixMilli(1)})
	}); n != 0 {
		t.Errorf("appendProcessData allocates %v times", n)
	}
}

func BenchmarkAppendProcessData(b *testing.B) {
	m, _ := NewModel(referenceBus(), Rules{Interval: time.Second})
	img := make([]byte, m.ImageBytes)
	buf := make([]byte, 0, 4096)
	d := m.Device("EL3204-7")
	vals := rawValues(d, img)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendProcessData(buf[:0], d, vals, pdHeader{tsMillis: 1, seq: 2, cycle: 3, quality: busstate.QualityStale, since: time.UnixMilli(1)})
	}
}

func TestAppendStats(t *testing.T) {
	r := cyclestats.Report{Target: 1_000_000}
	r.Windows[cyclestats.QuantityJitter] = stats.Summary{Count: 999, Min: 100, Max: 9000, Mean: 400.5, P99: 2000}
	r.Windows[cyclestats.QuantityJobDuration] = stats.Summary{Count: 1000, Min: 10000, Max: 500000, Mean: 20000}
	r.Windows[cyclestats.QuantityDCControllerError] = stats.Summary{Count: 500, Min: 3, Max: 420, Mean: 55.5, P99: 300}
	for c, n := range map[cyclestats.Counter]int64{cyclestats.CounterCycles: 1000, cyclestats.CounterOverruns: 2, cyclestats.CounterLostFrames: 1,
		cyclestats.CounterFramesSent: 2000, cyclestats.CounterFramesLost: 2, cyclestats.CounterLateAnswers: 3, cyclestats.CounterAcyclicCycles: 40,
		cyclestats.CounterAcyclicOverruns: 1, cyclestats.CounterYieldLate: 5, cyclestats.CounterRingDrops: 6} {
		r.Counts[c] = n
	}
	var got struct {
		Cycles, Overruns, LostFrames int64
		FramesSent                   int64              `json:"frames_sent"`
		FramesLost                   int64              `json:"frames_lost"`
		LateAnswers                  int64              `json:"late_answers"`
		AcyclicCycles                int64              `json:"acyclic_cycles"`
		AcyclicOverruns              int64              `json:"acyclic_overruns"`
		YieldLate                    int64              `json:"yield_late"`
		RingDrops                    int64              `json:"ring_drops"`
		Jitter                       map[string]float64 `json:"jitter_ns"`
		Period                       map[string]float64 `json:"period_ns"`
		Load                         map[string]float64 `json:"cpu_load"`
		DCDiff                       map[string]float64 `json:"dc_difference_ns"`
		CtlErr                       map[string]float64 `json:"dc_controller_error_ns"`
	}
	b := appendStats(nil, &r, 5, 1)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got.Cycles != 1000 || got.Overruns != 2 || got.FramesSent != 2000 || got.FramesLost != 2 || got.Jitter["max"] != 9000 || got.Jitter["p99"] != 2000 ||
		got.LateAnswers != 3 || got.AcyclicCycles != 40 || got.AcyclicOverruns != 1 || got.YieldLate != 5 || got.RingDrops != 6 ||
		got.Jitter["mean"] != 400.5 || got.Period["count"] != 0 || len(got.Period) != 1 ||
		got.Load["max"] != 0.5 || got.Load["mean"] != 0.02 ||
		got.DCDiff["count"] != 0 || len(got.DCDiff) != 1 ||
		got.CtlErr["count"] != 500 || got.CtlErr["max"] != 420 || got.CtlErr["p99"] != 300 || got.CtlErr["mean"] != 55.5 {
		t.Errorf("stats payload %s", b)
	}
}

func TestMetaJSON(t *testing.T) {
	m := writableModel(t)
	b, err := metaJSON(m.Device("EL4132-5"), &busstate.Slave{}, "r/pd/EL4132-5", "r/set/EL4132-5")
	if err != nil {
		t.Fatal(err)
	}
	var meta metaPayload
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	s := meta.Signals[0]
	if meta.Slave != "EL4132-5" || meta.Position != 5 || meta.OrderCode != "EL4132" || len(meta.Signals) != 2 ||
		s.Direction != "output" || s.Type != "float" || s.Unit != "V" || s.Object != "0x7000:01" || !s.Writable ||
		*s.Min != -5 || *s.Max != 5 || s.SetTopic != "r/set/EL4132-5/ao_output_channel_1.analog_output" || s.Scale == nil {
		t.Errorf("meta: %s", b)
	}
}

// rawValues reads d's raw values from the snapshot img, one per signal.
func rawValues(d *Device, img []byte) []uint64 {
	vals := make([]uint64, len(d.Signals))
	for i := range d.Signals {
		vals[i] = d.Signals[i].Raw(img)
	}
	return vals
}
