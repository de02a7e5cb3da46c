package mqtt

import (
	"runtime"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
)

// idlePublisher is a publisher with a bus but no session: sample() runs
// and the outbox fills, nothing is sent.
func idlePublisher(t testing.TB, scheme Scheme) *Publisher {
	t.Helper()
	p, err := New(Config{Broker: "tcp://127.0.0.1:1", Scheme: scheme, Root: "r", Group: "g", Node: "n",
		Rules: Rules{Interval: time.Millisecond}, Buffer: 64})
	if err != nil {
		t.Fatal(err)
	}
	model, _ := NewModel(referenceBus(), p.cfg.Rules)
	p.SetBus(model, &fakeImage{img: make([]byte, model.ImageBytes)}, &fakeRing{})
	p.out.drain()
	return p
}

// TestSampleAllocatesNothing: in the steady state (payload buffers
// recycled as the session does once they are delivered), taking a
// snapshot and queueing every device's message allocates nothing.
func TestSampleAllocatesNothing(t *testing.T) {
	for _, scheme := range []Scheme{SchemeJSON, SchemeSparkplug} {
		p := idlePublisher(t, scheme)
		now := time.Now()
		step := func() {
			now = now.Add(time.Millisecond)
			p.sampler.sample(now, time.Millisecond)
			for {
				m, ok := p.out.pop()
				if !ok {
					break
				}
				p.out.recycle(m.payload)
			}
		}
		for range 10 {
			step() // grow the buffers once
		}
		if n := testing.AllocsPerRun(200, step); n != 0 {
			t.Errorf("scheme %d: a sample allocates %v times", scheme, n)
		}
		if p.sampler.states[1].seq < 200 {
			t.Fatalf("nothing was sampled (seq %d)", p.sampler.states[1].seq)
		}
	}
}

func BenchmarkSample(b *testing.B) {
	p := idlePublisher(b, SchemeJSON)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		p.sampler.sample(now, time.Millisecond)
		for {
			m, ok := p.out.pop()
			if !ok {
				break
			}
			p.out.recycle(m.payload)
		}
	}
}

// BenchmarkPublishToMosquitto measures the whole path of a pd message —
// snapshot, JSON, outbox, mqttconn, QoS 1 acknowledgement by a local
// mosquitto — and reports messages per second and heap allocations per
// message (of the whole process: the MQTT client's included).
func BenchmarkPublishToMosquitto(b *testing.B) {
	broker := mqtttest.StartMosquitto(b, mqtttest.MosquittoOptions{})
	p, err := New(Config{Broker: broker.URL(), ClientID: "bench", Scheme: SchemeJSON, QoS: 1, Root: "bench",
		Rules: Rules{Interval: time.Millisecond}, Buffer: 1 << 20, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	model, _ := NewModel(referenceBus(), p.cfg.Rules)
	p.SetBus(model, &fakeImage{img: make([]byte, model.ImageBytes)}, &fakeRing{})
	p.out.drain()
	go p.session.run()
	defer func() { close(p.closing); <-p.session.sessionDone }()
	for deadline := time.Now().Add(10 * time.Second); !p.session.connected.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("not connected to the broker within 10 s")
		}
	}
	base := p.session.delivered.Load()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	now := start
	b.ResetTimer()
	for range b.N {
		now = now.Add(time.Millisecond)
		p.sampler.sample(now, time.Millisecond)
		for p.out.Len() > 4096 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	want := base + uint64(b.N)*6
	for deadline := time.Now().Add(time.Minute); p.session.delivered.Load() < want; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d messages delivered a minute after the last was given", p.session.delivered.Load()-base, want-base)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	msgs := float64(b.N * 6)
	b.ReportMetric(msgs/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/msgs, "allocs/msg")
}
