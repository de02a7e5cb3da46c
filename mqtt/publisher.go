package mqtt

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/master/cia402/state"
	"github.com/ecagent/ecagent/metrics"
	"github.com/ecagent/ecagent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/shm"
)

// Scheme selects the topics and payloads.
type Scheme uint8

// Schemes. The zero value is invalid.
const (
	SchemeInvalid Scheme = iota
	SchemeJSON
	SchemeSparkplug
)

// ParseScheme parses "json" or "sparkplug".
func ParseScheme(s string) (Scheme, error) {
	switch s {
	case "json":
		return SchemeJSON, nil
	case "sparkplug":
		return SchemeSparkplug, nil
	}
	return SchemeInvalid, fmt.Errorf("mqtt: unknown scheme %q (want json or sparkplug)", s)
}

// Config configures a Publisher.
type Config struct {
	// Broker is the broker's URL, e.g. tcp://127.0.0.1:1883.
	Broker   string
	ClientID string
	Username string
	Password string
	// TLS is used for ssl:// and wss:// brokers; nil uses Go's defaults.
	TLS *tls.Config
	// QoS is the quality of service of the JSON scheme's messages.
	QoS    byte
	Scheme Scheme
	// Root is the JSON scheme's topic root, <prefix>/<site>/<host>.
	Root string
	// Group and Node are the Sparkplug group and edge node ids.
	Group, Node string
	// Rules name, rate and scale what is published and allow writes.
	Rules Rules
	// Scan is how often the process image is checked for changes.
	Scan time.Duration
	// Buffer bounds the outbox (messages).
	Buffer int
	// BufferFile, when set, keeps the outbox across a Close and a New.
	BufferFile string
	// Timeout bounds connecting and each acknowledgement.
	Timeout time.Duration
	// ReconnectMin and ReconnectMax bound the reconnect back-off.
	ReconnectMin, ReconnectMax time.Duration
	// WritesEnabled accepts writes (to allowed outputs) at all.
	WritesEnabled bool
	// Logger receives the publisher's log; nil discards it.
	Logger *slog.Logger
}

// ImageSource is where the publisher snapshots the process image: the
// shared-memory snapshot the cycle publishes (*shm.Image).
type ImageSource interface {
	Snapshot(dst []byte) (cycle uint64, ok bool)
}

// CommandSink takes validated writes: the shared-memory command ring
// (*shm.Ring[shm.Command]). Push never blocks; false means full.
type CommandSink interface {
	Push(*shm.Command) bool
}

// Stats are the publisher's counters.
type Stats struct {
	// Published counts messages handed to the MQTT client.
	Published uint64
	// Delivered counts messages the broker acknowledged (QoS 1, 2) or
	// that were written to the connection (QoS 0).
	Delivered uint64
	// Buffered is the number of messages waiting in the outbox.
	Buffered int
	// Dropped counts messages dropped because the outbox was full.
	Dropped uint64
	// Reconnects counts connections made after the first one.
	Reconnects uint64
	// Connected reports a live connection to the broker.
	Connected bool
	// Accepted counts writes passed to the cycle; Rejected counts refused
	// writes by reason.
	Accepted uint64
	Rejected map[RejectCode]uint64
}

// maxPending bounds the writes remembered until the cycle answers them.
const maxPending = 1024

// pendingWrite is a write handed to the cycle, until its answer comes.
type pendingWrite struct {
	slave, signal string
	value         float64
	topic         string
}

// deviceState is what the sampler keeps per device between snapshots.
type deviceState struct {
	next      time.Time // when the next periodic publication is due
	published bool
	seq       uint64
	last      []uint64 // raw values last published
	lastF     []float64
	pdTopic   string // JSON pd topic or Sparkplug DDATA topic
}

// Publisher publishes one bus to one broker. Create it with New, start it
// with Start, give it the bus with SetBus, and stop it with Close. Its
// methods are safe for concurrent use.
type Publisher struct {
	cfg Config
	log *slog.Logger
	out *outbox

	published, delivered, reconnects, accepted atomic.Uint64
	connected                                  atomic.Bool
	rebirth                                    atomic.Bool

	rejectMu sync.Mutex
	rejected map[RejectCode]uint64

	mu       sync.Mutex // guards the bus and everything derived from it
	model    *Model
	image    ImageSource
	commands CommandSink
	img      []byte
	states   []deviceState
	pending  map[uint64]pendingWrite
	cmdSeq   uint64
	nodeStat []sparkplug.Metric // last window's statistics (Sparkplug)
	statsSeq uint64             // stats messages so far
	eventSeq uint64             // events so far
	tick     time.Duration
	retick   chan struct{}
	wake     chan struct{} // wakes the session for a rebirth

	startOnce, closeOnce sync.Once
	closing              chan struct{}
	grace                time.Duration // set by Close before closing: how long goodbye may flush
	samplerDone          chan struct{}
	sessionDone          chan struct{}
	bdSeq                uint64
}

// New returns a publisher for cfg. It loads cfg.BufferFile, if any.
func New(cfg Config) (*Publisher, error) {
	if cfg.Scheme == SchemeInvalid {
		return nil, errors.New("mqtt: no scheme")
	}
	if cfg.Broker == "" {
		return nil, errors.New("mqtt: no broker URL")
	}
	if cfg.QoS > 2 {
		return nil, fmt.Errorf("mqtt: QoS %d, want 0, 1 or 2", cfg.QoS)
	}
	cfg.Buffer = max(cfg.Buffer, 1)
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = 100 * time.Millisecond
	}
	cfg.ReconnectMax = max(cfg.ReconnectMax, cfg.ReconnectMin)
	if cfg.Scan <= 0 {
		cfg.Scan = 10 * time.Millisecond
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{
		cfg: cfg, log: log, out: newOutbox(cfg.Buffer),
		rejected: map[RejectCode]uint64{}, pending: map[uint64]pendingWrite{},
		retick: make(chan struct{}, 1), wake: make(chan struct{}, 1),
		closing: make(chan struct{}), samplerDone: make(chan struct{}), sessionDone: make(chan struct{}),
	}
	p.tick = p.tickFor(nil)
	if cfg.BufferFile != "" {
		ms, err := loadOutbox(cfg.BufferFile)
		if err != nil {
			return nil, err
		}
		if len(ms) > 0 {
			log.Info("mqtt: messages kept from the last run", "messages", len(ms), "file", cfg.BufferFile)
		}
		for _, m := range ms {
			p.out.push(m)
		}
	}
	return p, nil
}

// Start starts connecting and publishing. It returns at once.
func (p *Publisher) Start() {
	p.startOnce.Do(func() {
		go p.runSampler()
		go p.runSession()
	})
}

// Close stops sampling, tries for up to grace to deliver what is
// buffered, says goodbye (status offline, or NDEATH), disconnects, and
// saves what is still undelivered to the buffer file when one is
// configured. It is safe to call more than once.
func (p *Publisher) Close(grace time.Duration) error {
	var err error
	p.closeOnce.Do(func() {
		p.startOnce.Do(func() { close(p.samplerDone); close(p.sessionDone) })
		p.grace = grace
		close(p.closing)
		<-p.samplerDone
		select {
		case <-p.sessionDone:
		case <-time.After(grace + 2*p.cfg.Timeout):
			p.log.Warn("mqtt: the session did not stop in time")
		}
		if p.cfg.BufferFile != "" {
			err = saveOutbox(p.cfg.BufferFile, p.out.drain())
		}
	})
	return err
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() Stats {
	s := Stats{
		Published: p.published.Load(), Delivered: p.delivered.Load(), Buffered: p.out.Len(),
		Dropped: p.out.Dropped(), Reconnects: p.reconnects.Load(), Connected: p.connected.Load(),
		Accepted: p.accepted.Load(), Rejected: map[RejectCode]uint64{},
	}
	p.rejectMu.Lock()
	for k, v := range p.rejected {
		s.Rejected[k] = v
	}
	p.rejectMu.Unlock()
	return s
}

// SetBus makes the publisher publish model (see NewModel), reading the
// process image from image and writing commands to commands (which may
// be nil: writes are then refused). The retained meta (JSON) or the
// DBIRTHs (Sparkplug) of the new bus are queued.
func (p *Publisher) SetBus(model *Model, image ImageSource, commands CommandSink) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.model, p.image, p.commands = model, image, commands
	p.img = make([]byte, model.ImageBytes)
	p.states = make([]deviceState, len(model.Devices))
	now := time.Now()
	for i := range model.Devices {
		d := &model.Devices[i]
		st := &p.states[i]
		st.next = now
		st.last = make([]uint64, len(d.Signals))
		st.lastF = make([]float64, len(d.Signals))
		if p.cfg.Scheme == SchemeSparkplug {
			st.pdTopic = sparkplug.DeviceTopic(p.cfg.Group, sparkplug.DDATA, p.cfg.Node, d.Name)
		} else {
			st.pdTopic = p.cfg.Root + "/pd/" + d.Name
		}
	}
	cycle, ok := image.Snapshot(p.img)
	if !ok {
		clear(p.img)
	}
	if p.cfg.Scheme == SchemeSparkplug {
		for i := range model.Devices {
			p.queueLocked(sparkplug.DeviceTopic(p.cfg.Group, sparkplug.DBIRTH, p.cfg.Node, model.Devices[i].Name),
				p.deviceBirth(p.out.buffer(), &model.Devices[i], now), 0, false, true, now)
		}
	} else {
		for i := range model.Devices {
			d := &model.Devices[i]
			b, err := metaJSON(d, p.states[i].pdTopic, p.setTopic(d))
			if err != nil {
				p.log.Error("mqtt: meta", "err", err)
				continue
			}
			p.queueLocked(p.cfg.Root+"/meta/"+d.Name, b, 1, true, false, now)
		}
		p.eventLocked(now, func(o *jsonObject) {
			o.string("kind", "bus-attached")
			o.int("slaves", int64(len(model.Devices)))
			o.uint("cycle", cycle)
		})
	}
	p.tick = p.tickFor(model)
	select {
	case p.retick <- struct{}{}:
	default:
	}
}

// Detach stops reading the current image and command ring (the cycle
// process is going away: its memory will be unmapped). Sparkplug devices
// get their DDEATH.
func (p *Publisher) Detach(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.model == nil {
		return
	}
	now := time.Now()
	if p.cfg.Scheme == SchemeSparkplug {
		for i := range p.model.Devices {
			var pl sparkplug.Payload
			pl.Timestamp = uint64(now.UnixMilli())
			p.queueLocked(sparkplug.DeviceTopic(p.cfg.Group, sparkplug.DDEATH, p.cfg.Node, p.model.Devices[i].Name),
				sparkplug.AppendPayload(p.out.buffer(), &pl), 0, false, true, now)
		}
	}
	p.eventLocked(now, func(o *jsonObject) {
		o.string("kind", "bus-detached")
		o.string("reason", reason)
	})
	p.model, p.image, p.commands = nil, nil, nil
	for seq, w := range p.pending {
		p.rejectLocked(now, reject(RejectCycleDown, "the cycle process stopped before applying it: %s", reason), w.slave, w.signal, w.topic)
		delete(p.pending, seq)
	}
}

// tickFor returns the sampling period for model: the scan interval when a
// device publishes on change, else the shortest device interval.
func (p *Publisher) tickFor(model *Model) time.Duration {
	t := p.cfg.Rules.Interval
	if p.cfg.Rules.OnChange || t <= 0 {
		t = p.cfg.Scan
	}
	if model == nil {
		return t
	}
	for _, d := range model.Devices {
		if d.OnChange {
			t = min(t, p.cfg.Scan)
		}
		if d.Interval > 0 {
			t = min(t, d.Interval)
		}
	}
	return max(t, time.Millisecond)
}

func (p *Publisher) setTopic(d *Device) string {
	if p.cfg.Scheme == SchemeSparkplug {
		return sparkplug.DeviceTopic(p.cfg.Group, sparkplug.DCMD, p.cfg.Node, d.Name)
	}
	return p.cfg.Root + "/set/" + d.Name
}

// runSampler snapshots the image every tick and queues what is due.
func (p *Publisher) runSampler() {
	defer close(p.samplerDone)
	p.mu.Lock()
	tick := p.tick
	p.mu.Unlock()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.closing:
			return
		case <-p.retick:
			p.mu.Lock()
			tick = p.tick
			p.mu.Unlock()
			t.Reset(tick)
		case now := <-t.C:
			p.sample(now, tick)
		}
	}
}

// sample takes one snapshot and queues the messages of the devices that
// are due (their interval passed) or changed (on-change devices).
func (p *Publisher) sample(now time.Time, tick time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.model == nil {
		return
	}
	cycle, ok := p.image.Snapshot(p.img)
	if !ok {
		return
	}
	historical := !p.connected.Load()
	for i := range p.model.Devices {
		d := &p.model.Devices[i]
		st := &p.states[i]
		if len(d.Signals) == 0 {
			continue // a coupler: nothing to publish but its meta
		}
		due := !st.published || (d.Interval > 0 && now.After(st.next.Add(-tick/2)))
		if !due && d.OnChange {
			due = p.changed(d, st)
		}
		if !due {
			continue
		}
		if d.Interval > 0 {
			st.next = st.next.Add(d.Interval)
			if st.next.Before(now) {
				st.next = now.Add(d.Interval)
			}
		}
		for k := range d.Signals {
			s := &d.Signals[k]
			raw := s.Raw(p.img)
			st.last[k], st.lastF[k] = raw, s.Float(raw)
		}
		st.published = true
		st.seq++
		b := p.out.buffer()
		if p.cfg.Scheme == SchemeSparkplug {
			b = p.deviceData(b, d, now, historical)
			p.queueLocked(st.pdTopic, b, 0, false, true, now)
		} else {
			b = appendProcessData(b, d, p.img, now.UnixMilli(), st.seq, cycle)
			p.queueLocked(st.pdTopic, b, p.cfg.QoS, false, false, now)
		}
	}
}

// changed reports whether a signal of d moved beyond its deadband since it
// was last published.
func (p *Publisher) changed(d *Device, st *deviceState) bool {
	for k := range d.Signals {
		s := &d.Signals[k]
		raw := s.Raw(p.img)
		if s.Deadband == 0 {
			if raw != st.last[k] {
				return true
			}
			continue
		}
		if f := s.Float(raw); f-st.lastF[k] > s.Deadband || st.lastF[k]-f > s.Deadband {
			return true
		}
	}
	return false
}

func (p *Publisher) queueLocked(topic string, payload []byte, qos byte, retain, sp bool, made time.Time) {
	p.out.push(message{topic: topic, payload: payload, qos: qos, retain: retain, sparkplug: sp, made: made.UnixNano()})
}

// Window publishes the statistics of one metrics window: on …/stats
// (JSON) or as NDATA (Sparkplug).
func (p *Publisher) Window(r *metrics.WindowReport, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Scheme == SchemeSparkplug {
		p.nodeStat = nodeStats(p.nodeStat[:0], r)
		var pl sparkplug.Payload
		pl.Timestamp = uint64(at.UnixMilli())
		b := sparkplug.AppendPayload(p.out.buffer(), &pl)
		historical := !p.connected.Load()
		for i := range p.nodeStat {
			m := p.nodeStat[i]
			m.Name, m.HasAlias, m.Alias, m.Historical = "", true, nodeStatAlias(i), historical
			b = sparkplug.AppendMetric(b, &m)
		}
		p.queueLocked(sparkplug.NodeTopic(p.cfg.Group, sparkplug.NDATA, p.cfg.Node), b, 0, false, true, at)
		return
	}
	p.statsSeq++
	p.queueLocked(p.cfg.Root+"/stats", appendStats(p.out.buffer(), r, at.UnixMilli(), p.statsSeq), p.cfg.QoS, false, false, at)
}

// Event publishes an event of the cycle on …/events; the answers to writes
// are matched to the writes.
func (p *Publisher) Event(ev *shm.Event, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Kind {
	case shm.EventCommandDone, shm.EventCommandRejected:
		w, ok := p.pending[ev.Value]
		if !ok {
			return // not one of ours
		}
		delete(p.pending, ev.Value)
		if ev.Kind == shm.EventCommandRejected {
			p.rejectLocked(at, reject(RejectCycleRefused, "the cycle refused it: %s", ev.TextString()), w.slave, w.signal, w.topic)
			return
		}
		p.eventLocked(at, func(o *jsonObject) {
			o.string("kind", "command-done")
			o.uint("cycle", ev.Cycle)
			o.string("slave", w.slave)
			o.string("signal", w.signal)
			o.float("value", w.value)
			o.string("topic", w.topic)
		})
		return
	case shm.EventInvalid:
		return
	}
	p.eventLocked(at, func(o *jsonObject) { appendShmEvent(o, ev, p.model) })
}

// eventLocked queues one JSON event on …/events.
func (p *Publisher) eventLocked(at time.Time, fill func(o *jsonObject)) {
	p.eventSeq++
	o := beginObject(p.out.buffer())
	o.int("ts", at.UnixMilli())
	o.uint("seq", p.eventSeq)
	fill(&o)
	p.queueLocked(p.eventsTopic(), o.end(), p.qosEvents(), false, false, at)
}

func (p *Publisher) eventsTopic() string { return p.cfg.Root + "/events" }

func (p *Publisher) qosEvents() byte {
	if p.cfg.Scheme == SchemeSparkplug {
		return 1
	}
	return p.cfg.QoS
}

// rejectLocked counts a refused write and answers it on …/events.
func (p *Publisher) rejectLocked(at time.Time, re *RejectError, slave, signal, topic string) {
	p.rejectMu.Lock()
	p.rejected[re.Code]++
	p.rejectMu.Unlock()
	p.log.Info("mqtt: write rejected", "topic", topic, "code", string(re.Code), "reason", re.Reason)
	p.eventLocked(at, func(o *jsonObject) {
		o.string("kind", "command-rejected")
		o.string("code", string(re.Code))
		o.string("reason", re.Reason)
		o.string("slave", slave)
		o.string("signal", signal)
		o.string("topic", topic)
	})
}

// write validates one write (value as decoded from the payload) and hands
// it to the cycle; a refusal is answered on …/events.
func (p *Publisher) write(slave, signal, topic string, value func(*Signal) (float64, uint64, error)) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cfg.WritesEnabled {
		p.rejectLocked(now, reject(RejectDisabled, "writes from MQTT are disabled (mqtt.writes.enabled is false)"), slave, signal, topic)
		return
	}
	if p.model == nil {
		p.rejectLocked(now, reject(RejectCycleDown, "the cycle process is not running"), slave, signal, topic)
		return
	}
	d := p.model.Device(slave)
	if d == nil {
		p.rejectLocked(now, reject(RejectUnknown, "no slave %q", slave), slave, signal, topic)
		return
	}
	if signal == DriveFaultReset {
		p.resetDriveLocked(now, d, slave, topic)
		return
	}
	s := d.Signal(signal)
	if s == nil {
		p.rejectLocked(now, reject(RejectUnknown, "slave %s has no signal %q", slave, signal), slave, signal, topic)
		return
	}
	if !s.Output {
		p.rejectLocked(now, reject(RejectNotWritable, "%s/%s is an input", slave, signal), slave, signal, topic)
		return
	}
	if !s.Writable {
		p.rejectLocked(now, reject(RejectNotWritable, "%s/%s is not in mqtt.writes.allow", slave, signal), slave, signal, topic)
		return
	}
	v, raw, err := value(s)
	if err != nil {
		p.rejectLocked(now, asReject(err), slave, signal, topic)
		return
	}
	if p.commands == nil {
		p.rejectLocked(now, reject(RejectCycleDown, "the cycle process is not running"), slave, signal, topic)
		return
	}
	p.cmdSeq++
	cmd := shm.Command{Seq: p.cmdSeq, Value: raw, BitOffset: uint32(s.BitOffset), Kind: shm.CommandSetOutputs,
		Slave: uint16(d.Slave.Position), BitLen: uint16(s.Bits)}
	if !p.commands.Push(&cmd) {
		p.rejectLocked(now, reject(RejectQueueFull, "the command ring is full"), slave, signal, topic)
		return
	}
	p.accepted.Add(1)
	p.rememberLocked(pendingWrite{slave: slave, signal: signal, value: v, topic: topic})
}

// rememberLocked keeps the write just handed to the cycle (p.cmdSeq) until
// the cycle answers it, forgetting the oldest beyond maxPending.
func (p *Publisher) rememberLocked(w pendingWrite) {
	if len(p.pending) >= maxPending {
		oldest := p.cmdSeq
		for seq := range p.pending {
			oldest = min(oldest, seq)
		}
		delete(p.pending, oldest)
	}
	p.pending[p.cmdSeq] = w
}

// resetDriveLocked hands a drive fault reset to the cycle, whose drive
// helper for the slave answers it (a slave without one refuses).
func (p *Publisher) resetDriveLocked(now time.Time, d *Device, slave, topic string) {
	if !d.FaultReset {
		p.rejectLocked(now, reject(RejectNotWritable, "%s/%s is not in mqtt.writes.allow", slave, DriveFaultReset), slave, DriveFaultReset, topic)
		return
	}
	if p.commands == nil {
		p.rejectLocked(now, reject(RejectCycleDown, "the cycle process is not running"), slave, DriveFaultReset, topic)
		return
	}
	p.cmdSeq++
	cmd := shm.Command{Seq: p.cmdSeq, Kind: shm.CommandResetDriveFault, Slave: uint16(d.Slave.Position)}
	if !p.commands.Push(&cmd) {
		p.rejectLocked(now, reject(RejectQueueFull, "the command ring is full"), slave, DriveFaultReset, topic)
		return
	}
	p.accepted.Add(1)
	p.rememberLocked(pendingWrite{slave: slave, signal: DriveFaultReset, value: 1, topic: topic})
}

// handleJSONWrite takes a message on <root>/set/<slave>/<signal>.
func (p *Publisher) handleJSONWrite(topic string, payload []byte) {
	slave, signal, ok := commandTarget(topic[len(p.cfg.Root)+len("/set/"):])
	if !ok {
		p.mu.Lock()
		p.rejectLocked(time.Now(), reject(RejectUnknown, "want %s/set/<slave>/<signal>", p.cfg.Root), "", "", topic)
		p.mu.Unlock()
		return
	}
	p.write(slave, signal, topic, func(s *Signal) (float64, uint64, error) { return ParseCommandValue(payload, s) })
}

// appendShmEvent fills a JSON event from a cycle event. Events about one
// slave carry its position ("slave") and published name ("slave_name",
// when the bus model knows it); error codes are numbers with their
// "meaning" (see EmergencyMeaning).
func appendShmEvent(o *jsonObject, ev *shm.Event, model *Model) {
	o.string("kind", ev.Kind.String())
	o.uint("cycle", ev.Cycle)
	text := ev.TextString()
	switch ev.Kind {
	case shm.EventStateChange, shm.EventALError:
		st := alStatus(ev.ALState)
		o.string("state", st.State.String())
		o.bool("error", st.Error)
		o.int("al_status_code", int64(ev.ALStatusCode))
		if ev.ALStatusCode != 0 {
			o.string("al_status", alStatusCode(ev.ALStatusCode))
		}
	case shm.EventBusAlarm, shm.EventBusAlarmCleared:
		o.uint("cycles", ev.Value)
	case shm.EventLinkDown, shm.EventLinkUp, shm.EventCycleStarted:
	case shm.EventSlaveReconnected:
		appendSlave(o, ev, model)
		o.int("took_us", int64(ev.Value/1000))
	case shm.EventALAcknowledged, shm.EventRecoveryFailed:
		appendSlave(o, ev, model)
		o.int("al_status_code", int64(ev.ALStatusCode))
		if ev.ALStatusCode != 0 {
			o.string("al_status", alStatusCode(ev.ALStatusCode))
		}
		if ev.Kind == shm.EventRecoveryFailed {
			o.uint("attempts", ev.Value)
		}
	case shm.EventEmergency:
		appendSlave(o, ev, model)
		code, register, data := ev.Emergency()
		o.int("error_code", int64(code))
		o.int("error_register", int64(register))
		o.string("data", hexBytes(data))
		o.string("meaning", EmergencyMeaning(code))
	case shm.EventDriveState:
		appendSlave(o, ev, model)
		o.string("state", driveStateName(ev, text))
		o.uint("state_number", ev.Value)
		text = "" // the state's name, written above
	case shm.EventDriveFault:
		appendSlave(o, ev, model)
		code := uint16(ev.Value)
		o.int("error_code", int64(code))
		o.string("meaning", EmergencyMeaning(code))
		if text != "" {
			o.string("state", text)
		}
		text = ""
	default:
		appendSlave(o, ev, model)
	}
	if text != "" {
		o.string("text", text)
	}
}

// appendSlave adds the position and, when the bus model knows it, the
// published name of the slave an event is about.
func appendSlave(o *jsonObject, ev *shm.Event, model *Model) {
	o.int("slave", int64(ev.Slave))
	if model == nil {
		return
	}
	for i := range model.Devices {
		if model.Devices[i].Slave.Position == int(ev.Slave) {
			o.string("slave_name", model.Devices[i].Name)
		}
	}
}

// driveStateName is the name of a drive-state event's state: the name the
// cycle sent, else the standard one of its number (package state's); a
// number that names no state is written "DriveState(n)", n at most
// MaxInt32, as the events have always shown it.
func driveStateName(ev *shm.Event, text string) string {
	if text != "" {
		return text
	}
	if s, ok := state.FromNumber(ev.Value); ok {
		return s.String()
	}
	return fmt.Sprintf("DriveState(%d)", min(ev.Value, math.MaxInt32))
}

// hexBytes formats b as lower-case hexadecimal, two digits a byte.
func hexBytes(b [5]byte) string {
	const digits = "0123456789abcdef"
	var out [2 * len(b)]byte
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&0xF]
	}
	return string(out[:])
}
