package mqtt

import (
	"math"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// knownRejectCodes are the codes a command from MQTT may be refused with
// when the publisher has a bus and a command ring with room.
var knownRejectCodes = map[RejectCode]bool{
	RejectDisabled: true, RejectUnknown: true, RejectNotWritable: true, RejectMalformed: true,
	RejectWrongType: true, RejectOutOfRange: true, RejectRetained: true, RejectStale: true,
}

// commandAllocLimit bounds what handling one command of at most 4 KiB may
// allocate (a DCMD of that size holds at most about a thousand metrics).
const commandAllocLimit = 16 << 20

// FuzzCommand feeds a message on any topic, retained or not, to a
// publisher of either scheme, as the MQTT client would. It must never
// panic; every refusal carries a known code and a reason; only the
// allowed outputs, within their range, reach the command ring; and every
// write gets exactly one outcome: a JSON write on <root>/set/…, each
// metric of a well-formed DCMD for this node, or a malformed or oversized
// DCMD as a whole, a stale NCMD, and any command delivered retained as a
// whole (refused as such); and a command of at most 4 KiB allocates at
// most commandAllocLimit.
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
		{set + "EL4132-5/ao_output_channel_1.analog_output", `{"value":1.25,"x":1}`},
		{set + "EL4132-5/ao_output_channel_1.analog_output", `{"value":1,"unit":"mV"}`},
		{set + "EL4132-5/ao_output_channel_1.analog_output", "1e-400"},
		{set + "EL4132-5/ao_output_channel_1.analog_output", "5.0000000001"},
		{set + "EL2004-1/channel_1.output", `{"value":true,"ts":1}`},
	} {
		f.Add(s.topic, []byte(s.payload), false, false)
	}
	f.Add(set+"EL2004-1/channel_1.output", []byte("true"), false, true)
	f.Add(harnessRoot+"/meta/EL2004-1", []byte("{}"), false, true)
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
		{sparkplug.NodeTopic(harnessGroup, sparkplug.NCMD, harnessNode), sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: 1,
			Metrics: []sparkplug.Metric{{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true, HasValue: true}}})},
	} {
		f.Add(s.topic, s.payload, true, false)
		f.Add(s.topic, s.payload, true, true)
	}
	json := newCommandHarness(f, SchemeJSON, true)
	sp := newCommandHarness(f, SchemeSparkplug, true)
	var pl sparkplug.Payload
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	f.Fuzz(func(t *testing.T, topic string, payload []byte, useSparkplug, retained bool) {
		h, want, isCommand := json, 0, false
		if strings.HasPrefix(topic, set[:len(set)-1]+"/") {
			want, isCommand = 1, true
		}
		if useSparkplug {
			h, want, isCommand = sp, 0, false
			if tp, ok := sparkplug.ParseTopic(topic); ok && tp.Group == harnessGroup && tp.Node == harnessNode {
				decoded := sparkplug.DecodePayload(payload, &pl) == nil
				switch tp.Type {
				case sparkplug.DCMD:
					want, isCommand = 1, true
					if decoded && len(pl.Metrics) <= maxDCMDMetrics {
						want = len(pl.Metrics)
					}
				case sparkplug.NCMD:
					isCommand = true
					if decoded && pl.Timestamp != 0 && staleCommand(sparkplugSent(&pl), time.Now()) != nil {
						want = 1
					}
				}
			}
		}
		if retained && isCommand {
			want = 1
		}
		h.reset()
		// runtime/metrics instead of ReadMemStats, which stops the world
		// twice per input; it misses what the per-P caches hold (well
		// under a MiB), noise against commandAllocLimit.
		metrics.Read(allocs)
		before := allocs[0].Value.Uint64()
		h.p.message(topic, payload, retained, false)
		metrics.Read(allocs)
		if n := allocs[0].Value.Uint64() - before; len(topic)+len(payload) <= 4096 && n > commandAllocLimit {
			t.Fatalf("a command of %d bytes allocated %d bytes", len(topic)+len(payload), n)
		}
		refused := h.log.take()
		for _, r := range refused {
			if !knownRejectCodes[r.Code] || r.Reason == "" {
				t.Fatalf("refusal %+v", r)
			}
			if retained && isCommand && r.Code != RejectRetained {
				t.Fatalf("a retained command refused as %+v, not as retained", r)
			}
		}
		if retained && isCommand && h.p.session.rebirth.Load() {
			t.Fatal("a retained NCMD asked for a rebirth")
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
	h.p.session.rebirth.Store(false)
	h.p.recent.forget()
}
