package mqtt

import (
	"math"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/mqtt/sparkplug"
)

// knownRejectCodes are the codes a command from MQTT may be refused with
// when the publisher has a bus and a command ring with room.
var knownRejectCodes = map[RejectCode]bool{
	RejectDisabled: true, RejectUnknown: true, RejectNotWritable: true, RejectMalformed: true,
	RejectWrongType: true, RejectOutOfRange: true,
}

// commandAllocLimit bounds what handling one command of at most 4 KiB may
// allocate (a DCMD of that size holds at most about a thousand metrics).
const commandAllocLimit = 16 << 20

// FuzzCommand feeds a message on any topic to a publisher of either
// scheme, as the MQTT client would. It must never panic; every refusal
// carries a known code and a reason; only the allowed outputs, within
// their range, reach the command ring; and every write gets exactly one
// outcome: a JSON write on <root>/set/…, each metric of a well-formed
// DCMD for this node, or a malformed DCMD as a whole; and a command of at
// most 4 KiB allocates at most commandAllocLimit.
func FuzzCommand(f *testing.F) {
	const set = harnessRoot + "/set/"
	for _, s := range []struct{ topic, payload string }{
		{set + "EL2004-1/channel_1.output", "true"},
		{set + "EL2004-1/channel_1.output", `{"value": 0, "at": 1}`},
		{set + "EL4132-5/ao_output_channel_1.analog_output", "-2.5"},
		{set + "EL4132-5/ao_output_channel_1.analog_output", "1e999"},
		{set + "EL4132-5/ao_output_channel_2.analog_output", "1"},
		{set + "EL1014-3/channel_1.input", "1"},
		{set + "EL2004-1/" + DriveFaultReset, "true"},
		{set + "EL2004-1/a/b", "null"},
		{set + "EL9999-9/x", `"x"`},
	} {
		f.Add(s.topic, []byte(s.payload), false)
	}
	dcmd := func(device string) string {
		return sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, harnessNode, device)
	}
	for _, s := range []struct {
		topic   string
		payload []byte
	}{
		{dcmd("EL2004-1"), spPayload(sparkplug.Metric{Name: "channel_1.output", DataType: sparkplug.Boolean, Bool: true, HasValue: true})},
		{dcmd("EL4132-5"), spPayload(sparkplug.Metric{Name: "ao_output_channel_1.analog_output", DataType: sparkplug.Double, Float: 4.5, HasValue: true},
			sparkplug.Metric{Name: "ao_output_channel_1.analog_output", DataType: sparkplug.Float, Float: math.NaN(), HasValue: true})},
		{dcmd("EL4132-5"), spPayload(sparkplug.Metric{Alias: 1, HasAlias: true, DataType: sparkplug.Int16, Int: 3, HasValue: true})},
		{dcmd("EL2004-1"), spPayload(sparkplug.Metric{Name: "channel_1.output", DataType: sparkplug.String, Str: "on", HasValue: true},
			sparkplug.Metric{Name: "channel_2.output", DataType: sparkplug.Boolean, Null: true})},
		{dcmd("EL2004-1"), metricWithoutValue("channel_3.output", sparkplug.UInt8)},
		{dcmd("EL2004-1"), []byte{0x12, 0x05, 0x0A}},
		{sparkplug.NodeTopic(harnessGroup, sparkplug.NCMD, harnessNode),
			spPayload(sparkplug.Metric{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true, HasValue: true})},
		{sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, "edge2", "EL2004-1"), []byte{0xFF}},
	} {
		f.Add(s.topic, s.payload, true)
	}
	json := newCommandHarness(f, SchemeJSON, true)
	sp := newCommandHarness(f, SchemeSparkplug, true)
	var pl sparkplug.Payload
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	f.Fuzz(func(t *testing.T, topic string, payload []byte, useSparkplug bool) {
		h, want := json, 0
		if strings.HasPrefix(topic, set[:len(set)-1]+"/") {
			want = 1
		}
		if useSparkplug {
			h, want = sp, 0
			if tp, ok := sparkplug.ParseTopic(topic); ok && tp.Group == harnessGroup && tp.Node == harnessNode && tp.Type == sparkplug.DCMD {
				want = 1
				if sparkplug.DecodePayload(payload, &pl) == nil {
					want = len(pl.Metrics)
				}
			}
		}
		h.reset()
		// runtime/metrics instead of ReadMemStats, which stops the world
		// twice per input; it misses what the per-P caches hold (well
		// under a MiB), noise against commandAllocLimit.
		metrics.Read(allocs)
		before := allocs[0].Value.Uint64()
		h.p.command(topic, payload)
		metrics.Read(allocs)
		if n := allocs[0].Value.Uint64() - before; len(topic)+len(payload) <= 4096 && n > commandAllocLimit {
			t.Fatalf("a command of %d bytes allocated %d bytes", len(topic)+len(payload), n)
		}
		refused := h.log.take()
		for _, r := range refused {
			if !knownRejectCodes[r.Code] || r.Reason == "" {
				t.Fatalf("refusal %+v", r)
			}
		}
		cmds := h.ring.all()
		for _, c := range cmds {
			switch {
			case c.Slave == 1 && c.BitLen == 1 && c.BitOffset < 4 && c.Value <= 1:
			case c.Slave == 5 && c.BitLen == 16 && c.BitOffset == 0:
				if v := float64(int16(c.Value)) * 10 / 0x7FFF; v < -5.001 || v > 5.001 {
					t.Fatalf("a write of %v V, outside -5..5: %+v", v, c)
				}
			default:
				t.Fatalf("a command no rule allows: %+v", c)
			}
		}
		if got := len(refused) + len(cmds); got != want {
			t.Fatalf("%d refusals and %d commands, want %d outcomes", len(refused), len(cmds), want)
		}
	})
}

// reset forgets what earlier commands left in the ring, the log and the
// rebirth request.
func (h *commandHarness) reset() {
	h.ring.mu.Lock()
	h.ring.cmds = h.ring.cmds[:0]
	h.ring.mu.Unlock()
	h.log.take()
	h.p.rebirth.Store(false)
}
