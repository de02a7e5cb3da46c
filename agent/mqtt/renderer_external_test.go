package mqtt_test

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/mqtt"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/ruleparse"
	"github.com/ecagent/ecagent/shm"
)

// lineRenderer is a third payload scheme, written outside package mqtt
// with its exported API only: process data as text lines in the manner
// of InfluxDB's line protocol under <root>/pd/<slave>, the connection on
// <root>/up (retained 1, or 0 by will and goodbye), the windows' cycle
// counts on <root>/stats, the events as the publisher makes them on
// <root>/events, refusals on <root>/refused, and writes as plain numbers
// on <root>/write/<slave>/<signal>.
type lineRenderer struct{ root string }

var _ mqtt.Renderer = lineRenderer{}

func (l lineRenderer) up(payload string) mqtt.Message {
	return mqtt.Message{Topic: l.root + "/up", Payload: []byte(payload), QoS: 1, Retain: true}
}

func (l lineRenderer) Will(uint64) mqtt.Message    { return l.up("0") }
func (l lineRenderer) Goodbye(uint64) mqtt.Message { return l.up("0") }
func (l lineRenderer) Subscriptions() []mqtt.Subscription {
	return []mqtt.Subscription{{Filter: l.root + "/write/#", QoS: 1}}
}

func (l lineRenderer) Announce(ms []mqtt.Message, _ *mqtt.BusView, _ uint64) []mqtt.Message {
	return append(ms, l.up("1"))
}

func (l lineRenderer) Prepare(*mqtt.Message, *mqtt.DeviceView) bool { return true }

func (l lineRenderer) DataMessage(d *mqtt.Device) mqtt.Message {
	return mqtt.Message{Topic: l.root + "/pd/" + d.Name, QoS: 1, Kind: mqtt.KindData}
}

// Data renders "<slave> <signal>=<value>,… <unix ns>".
func (l lineRenderer) Data(b []byte, v *mqtt.DeviceView) []byte {
	b = append(b, v.Device.Name...)
	for k := range v.Device.Signals {
		s := &v.Device.Signals[k]
		sep := byte(',')
		if k == 0 {
			sep = ' '
		}
		b = append(b, sep)
		b = append(b, s.Name...)
		b = append(b, '=')
		b = strconv.AppendFloat(b, s.Float(v.Values[k]), 'g', -1, 64)
	}
	b = append(b, ' ')
	return strconv.AppendInt(b, v.Now.UnixNano(), 10)
}

func (l lineRenderer) Attached(ms []mqtt.Message, v *mqtt.BusView) []mqtt.Message {
	return append(ms, mqtt.Message{Topic: l.root + "/bus", QoS: 1, Retain: true,
		Payload: []byte("devices=" + strconv.Itoa(len(v.Model.Devices)))})
}

func (l lineRenderer) Detached(ms []mqtt.Message, _ *mqtt.BusView, reason string) []mqtt.Message {
	return append(ms, mqtt.Message{Topic: l.root + "/bus", QoS: 1, Retain: true, Payload: []byte("detached " + reason)})
}

func (l lineRenderer) Changed(ms []mqtt.Message, v *mqtt.DeviceView, _ busstate.Slave) []mqtt.Message {
	return append(ms, mqtt.Message{Topic: l.root + "/state/" + v.Device.Name, QoS: 1,
		Payload: []byte(v.Slave.Presence.String() + " " + v.Slave.Quality.String())})
}

func (l lineRenderer) BusChanged(ms []mqtt.Message, _ *mqtt.BusView) []mqtt.Message { return ms }

func (l lineRenderer) Window(ms []mqtt.Message, r *cyclestats.Report, s mqtt.Stamp) []mqtt.Message {
	line := "cycles=" + strconv.FormatInt(r.Counts[cyclestats.CounterCycles], 10) + " seq=" + strconv.FormatUint(s.Seq, 10)
	return append(ms, mqtt.Message{Topic: l.root + "/stats", Payload: []byte(line), QoS: 1})
}

func (l lineRenderer) Event(ms []mqtt.Message, e *mqtt.Event) []mqtt.Message {
	return append(ms, mqtt.Message{Topic: l.root + "/events", Payload: e.JSON, QoS: 1})
}

func (l lineRenderer) Refused(ms []mqtt.Message, r *mqtt.Refusal) []mqtt.Message {
	return append(ms, mqtt.Message{Topic: l.root + "/refused", QoS: 1,
		Payload: []byte(r.Slave + "/" + r.Signal + " " + string(r.Err.Code))})
}

func (l lineRenderer) Command(as []mqtt.Action, topic string, payload []byte, _ *mqtt.Model) []mqtt.Action {
	slave, signal, ok := l.CommandOf(topic)
	if !ok {
		return as
	}
	payload = bytes.Clone(payload)
	return append(as, mqtt.Action{Kind: mqtt.ActionWrite, Slave: slave, Signal: signal, Topic: topic,
		Value: func(s *mqtt.Signal) (float64, uint64, error) { return mqtt.ParseCommandValue(payload, s) }})
}

func (l lineRenderer) CommandOf(topic string) (slave, signal string, ok bool) {
	rest, ok := strings.CutPrefix(topic, l.root+"/write/")
	if !ok {
		return "", "", false
	}
	slave, signal, _ = strings.Cut(rest, "/")
	return slave, signal, true
}

// lineImage is a process image of one output byte and one input byte.
type lineImage struct {
	mu    sync.Mutex
	img   [2]byte
	cycle uint64
}

func (f *lineImage) Snapshot(dst []byte) (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	copy(dst, f.img[:])
	f.cycle++
	return f.cycle, true
}

// lineRing passes on the commands it is given.
type lineRing chan shm.Command

func (r lineRing) Push(c *shm.Command) bool {
	select {
	case r <- *c:
		return true
	default:
		return false
	}
}

// lineBus is a coupler, a 4-channel digital output terminal and a
// 4-channel digital input terminal.
func lineBus() mqtt.Bus {
	digital := func(pos int, order string, out bool) mqtt.Slave {
		s := mqtt.Slave{Position: pos, OrderCode: order, DeviceName: order + " test"}
		dir, idx := "Input", uint16(0x6000)
		if out {
			dir, idx = "Output", 0x7000
			s.OutputBits = 4
		} else {
			s.InputBits = 4
		}
		for c := range 4 {
			s.Entries = append(s.Entries, mqtt.Entry{Output: out, PDO: 0x1600 + uint16(c), PDOName: "Channel " + string(rune('1'+c)),
				Index: idx + uint16(0x10*c), SubIndex: 1, Name: dir, DataType: 1, Bits: 1, Offset: c})
		}
		return s
	}
	return mqtt.Bus{OutputBytes: 1, InputBytes: 1, Slaves: []mqtt.Slave{
		{Position: 0, OrderCode: "EK1100"}, digital(1, "EL2004", true), digital(2, "EL1014", false)}}
}

// TestThirdRenderer runs a publisher with a renderer written outside
// package mqtt against mosquitto: the publisher samples, numbers, queues,
// connects and validates writes, the renderer only says what the
// messages are, and what it says reaches the broker.
func TestThirdRenderer(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	const root = "lines/edge"
	sub, _ := mqtttest.Subscribe(t, broker.URL(), "sub", root+"/#", false)
	allow, err := ruleparse.ParseWriteRule("EL2004-1/*")
	if err != nil {
		t.Fatal(err)
	}
	rules := mqtt.Rules{Interval: 20 * time.Millisecond, Writes: []ruleparse.WriteRule{allow}}
	p, err := mqtt.New(mqtt.Config{Broker: broker.URL(), ClientID: "lines", Renderer: lineRenderer{root: root},
		Rules: rules, Buffer: 100, WritesEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	model, errs := mqtt.NewModel(lineBus(), rules)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	img, ring := &lineImage{}, make(lineRing, 4)
	img.img[1] = 0b0001 // EL1014-2 channel 1 on
	p.SetBus(model, img, ring)
	p.Start()
	defer p.Close(time.Second)

	const within = 5 * time.Second
	if m := sub.WaitFrom(t, 0, "/up", within, nil); string(m.Payload) != "1" {
		t.Errorf("up %q, want 1", m.Payload)
	}
	if m := sub.WaitFrom(t, 0, "/bus", within, nil); string(m.Payload) != "devices=3" {
		t.Errorf("bus %q, want devices=3", m.Payload)
	}
	in := model.Device("EL1014-2")
	if in == nil || len(in.Signals) != 4 {
		t.Fatalf("EL1014-2 in the model: %+v", in)
	}
	want := "EL1014-2 " + in.Signals[0].Name + "=1," + in.Signals[1].Name + "=0,"
	if m := sub.WaitFrom(t, 0, "/pd/EL1014-2", within, nil); !strings.HasPrefix(string(m.Payload), want) {
		t.Errorf("pd %q, want it to start %q", m.Payload, want)
	}

	// The publisher numbers the windows and the events; the renderer
	// renders what it is given.
	r := cyclestats.Report{Target: 1e6}
	r.Counts[cyclestats.CounterCycles] = 10
	p.Window(&r, time.Now())
	if m := sub.WaitFrom(t, 0, "/stats", within, nil); string(m.Payload) != "cycles=10 seq=1" {
		t.Errorf("stats %q, want cycles=10 seq=1", m.Payload)
	}
	ev := shm.Event{Kind: shm.EventSlaveLost, Cycle: 7, Slave: 2}
	p.Event(&ev, time.Now())
	m := sub.WaitFrom(t, 0, "/events", within, func(m mqtttest.Message) bool { return bytes.Contains(m.Payload, []byte(`"kind":"slave-lost"`)) })
	if !bytes.Contains(m.Payload, []byte(`"slave":2,"slave_name":"EL1014-2"`)) {
		t.Errorf("event %s", m.Payload)
	}

	// A write the renderer decodes goes to the cycle once the publisher
	// has checked it; one to an input is refused, on the renderer's
	// topic too.
	out := model.Device("EL2004-1")
	if out == nil || len(out.Signals) == 0 {
		t.Fatalf("EL2004-1 in the model: %+v", out)
	}
	c, err := mqtttest.Connect(t, broker.URL(), "writer", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if tok := c.Publish(root+"/write/EL2004-1/"+out.Signals[0].Name, 1, false, "1"); !tok.WaitTimeout(within) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	if tok := c.Publish(root+"/write/EL1014-2/"+in.Signals[0].Name, 1, false, "1"); !tok.WaitTimeout(within) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	if m := sub.WaitFrom(t, 0, "/refused", within, nil); string(m.Payload) != "EL1014-2/"+in.Signals[0].Name+" not_writable" {
		t.Errorf("refused %q", m.Payload)
	}
	select {
	case cmd := <-ring:
		if cmd.Kind != shm.CommandSetOutputs || cmd.Slave != 1 || cmd.Value != 1 || cmd.BitLen != 1 {
			t.Errorf("command %+v, want EL2004-1's first output set to 1", cmd)
		}
	case <-time.After(within):
		t.Fatal("the write did not reach the cycle")
	}
	if len(ring) != 0 {
		t.Errorf("%d more commands reached the cycle, want none", len(ring))
	}
	if s := p.Stats(); s.Accepted != 1 || s.Rejected[mqtt.RejectNotWritable] != 1 {
		t.Errorf("stats %+v: want 1 accepted, 1 not-writable", s)
	}

	if err := p.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	late, _ := mqtttest.Subscribe(t, broker.URL(), "late", root+"/up", false)
	if m := late.WaitFrom(t, 0, "/up", within, nil); string(m.Payload) != "0" || !m.Retained {
		t.Errorf("up after Close %q retained %v, want 0 retained", m.Payload, m.Retained)
	}
}
