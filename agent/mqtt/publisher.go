package mqtt

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/mqtt/mqttconn"
	"github.com/ecagent/ecagent/shm"
)

// The publisher itself: its configuration, counters and state, creating,
// starting and closing it, and attaching and detaching a bus. What it
// publishes periodically is in sampler.go, the events in events.go, the
// writes from MQTT in writes.go, the broker connection in session.go.

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
	// BufferFile, when set, is the outbox's write-ahead log: what is
	// buffered while the broker is not reachable survives a crash (kill
	// -9, and a power cut but for the last walSyncEvery) and a Close, and
	// is sent by the next New (see wal.go).
	BufferFile string
	// Timeout bounds connecting and each acknowledgement.
	Timeout time.Duration
	// ReconnectMin and ReconnectMax bound the reconnect back-off; both
	// are capped at MaxReconnect.
	ReconnectMin, ReconnectMax time.Duration
	// StateDir is where the Sparkplug bdSeq is kept across restarts, so
	// that each NBIRTH pairs with its NDEATH; empty keeps it in memory.
	StateDir string
	// WritesEnabled accepts writes (to allowed outputs) at all.
	WritesEnabled bool
	// RefusalBurst refused writes per RefusalInterval are answered one by
	// one (a log line, an event); the others of the interval by one
	// summary. Zero values mean 10 per second.
	RefusalInterval time.Duration
	RefusalBurst    int
	// TakeoverBackoff is the first wait once the session is found taken
	// over (see takeover.go), doubled at each further takeover up to
	// maxTakeoverBackoff; zero means defaultTakeoverBackoff.
	TakeoverBackoff time.Duration
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
	// DroppedBeforeRestart counts the messages of the buffered backlog
	// that an earlier run dropped for room before it stopped without
	// delivering the rest (a crash): the write-ahead log recorded them.
	DroppedBeforeRestart uint64
	// BufferCorrupt counts damaged records of the write-ahead log skipped
	// at start (mqtt.bufferfile).
	BufferCorrupt uint64
	// RejectedQuiet counts the refused writes answered by a summary
	// rather than one by one (see Config.RefusalBurst).
	RejectedQuiet uint64
	// Takeovers counts the times the session was found taken over by
	// another client with the agent's client id, each followed by a
	// back-off (takeover.go).
	Takeovers uint64
}

// deviceState is what the sampler keeps per device between snapshots.
type deviceState struct {
	next      time.Time // when the next periodic publication is due
	published bool
	seq       uint64
	last      []uint64 // raw values last published: the last good ones
	cur       []uint64 // raw values of the current snapshot
	lastF     []float64
	pdTopic   string // JSON pd topic or Sparkplug DDATA topic
	// shown is the device's state as last rendered.
	shown busstate.Slave
}

// Publisher publishes one bus to one broker. Create it with New, start it
// with Start, give it the bus with SetBus (and its state with
// SetBusModel), and stop it with Close. Its methods are safe for
// concurrent use.
//
// Its locks are narrow: smu guards the bus being sampled, wmu the writes
// waiting for the cycle's answer, qmu the numbering of events and
// statistics; the session holds none of them while it talks to the
// broker, and the outbox has its own.
type Publisher struct {
	cfg Config
	log *slog.Logger
	out *outbox
	sch scheme

	published, delivered, reconnects, accepted atomic.Uint64
	takeovers                                  atomic.Uint64
	connected                                  atomic.Bool
	rebirth                                    atomic.Bool

	droppedBefore, bufferCorrupt uint64 // from the write-ahead log's replay

	rejectMu      sync.Mutex
	rejected      map[RejectCode]uint64
	refusals      refusalGate
	quietRejected atomic.Uint64

	// current is the published model, for readers that need no snapshot
	// (writes, events).
	current atomic.Pointer[Model]

	smu    sync.Mutex // guards the bus being sampled
	model  *Model
	image  ImageSource
	img    []byte
	states []deviceState
	gen    uint64          // counts SetBus calls
	state  *busstate.Model // the bus's state; nil shows every slave present
	shown  uint64          // the state's version last rendered
	dv     deviceView      // the sampler's view of the device it renders
	tick   time.Duration

	wmu      sync.Mutex // guards the writes
	commands CommandSink
	pending  map[uint64]pendingWrite
	cmdSeq   uint64

	qmu      sync.Mutex // orders the numbered messages with their seq
	statsSeq uint64     // stats messages so far
	eventSeq uint64     // events so far

	retick chan struct{}
	wake   chan struct{} // wakes the session for a rebirth
	poke   chan struct{} // wakes the sampler for a change of state

	startOnce, closeOnce sync.Once
	closing              chan struct{}
	grace                time.Duration                 // set by Close before closing: how long goodbye may flush
	conn                 atomic.Pointer[mqttconn.Conn] // the connection being served, or nil
	samplerDone          chan struct{}
	sessionDone          chan struct{}
	bdSeq                *bdSeqStore
}

// New returns a publisher for cfg. It loads cfg.BufferFile, if any, and
// the last bdSeq from cfg.StateDir (Sparkplug).
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
	var capped time.Duration // a ReconnectMax above MaxReconnect
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = 100 * time.Millisecond
	}
	if cfg.ReconnectMax > MaxReconnect {
		capped = cfg.ReconnectMax
	}
	cfg.ReconnectMin = min(cfg.ReconnectMin, MaxReconnect)
	cfg.ReconnectMax = min(max(cfg.ReconnectMax, cfg.ReconnectMin), MaxReconnect)
	if cfg.Scan <= 0 {
		cfg.Scan = 10 * time.Millisecond
	}
	if cfg.RefusalInterval <= 0 {
		cfg.RefusalInterval = defaultRefusalInterval
	}
	if cfg.RefusalBurst <= 0 {
		cfg.RefusalBurst = defaultRefusalBurst
	}
	if cfg.TakeoverBackoff <= 0 {
		cfg.TakeoverBackoff = defaultTakeoverBackoff
	}
	cfg.TakeoverBackoff = min(cfg.TakeoverBackoff, maxTakeoverBackoff)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if capped > 0 {
		log.Info("mqtt: the reconnect back-off is capped, so that the agent follows the broker back within seconds",
			"reconnectmax", capped, "cap", MaxReconnect)
	}
	p := &Publisher{
		cfg: cfg, log: log, out: newOutbox(cfg.Buffer),
		rejected: map[RejectCode]uint64{}, pending: map[uint64]pendingWrite{},
		retick: make(chan struct{}, 1), wake: make(chan struct{}, 1), poke: make(chan struct{}, 1),
		closing: make(chan struct{}), samplerDone: make(chan struct{}), sessionDone: make(chan struct{}),
		refusals: refusalGate{interval: cfg.RefusalInterval, burst: cfg.RefusalBurst},
	}
	switch cfg.Scheme {
	case SchemeSparkplug:
		store, err := openBdSeq(cfg.StateDir, cfg.Group, cfg.Node)
		if err != nil {
			return nil, err
		}
		p.bdSeq = store
		p.sch = newSparkplugScheme(p)
	default:
		p.bdSeq = &bdSeqStore{}
		p.sch = &jsonScheme{p: p}
	}
	p.tick = p.tickFor(nil)
	if cfg.BufferFile != "" {
		if err := p.replay(); err != nil {
			return nil, err
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

// goodbyeAck is how long stopping waits for the broker to acknowledge the
// goodbye (status offline, or NDEATH) after the grace for the buffer.
const goodbyeAck = time.Second

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
		// goodbye flushes for grace and waits goodbyeAck for the last
		// message; a write to a broker that stopped reading can still
		// block for mqtt.timeout. Past the bound the connection is cut,
		// which ends that write: what was not acknowledged stays in the
		// outbox for the buffer file, and the broker publishes the will.
		t := time.NewTimer(grace + goodbyeAck + time.Second)
		defer t.Stop()
		select {
		case <-p.sessionDone:
		case <-t.C:
			p.log.Warn("mqtt: the broker did not take the goodbye in time; closing the connection", "after", grace+goodbyeAck+time.Second)
			if c := p.conn.Load(); c != nil {
				c.Close()
			}
			t.Reset(time.Second)
			select {
			case <-p.sessionDone:
			case <-t.C:
				p.log.Warn("mqtt: the session did not stop in time")
			}
		}
		if p.cfg.BufferFile != "" {
			// Births are rendered when sent: the next run's connection
			// sends its own.
			ms := slices.DeleteFunc(p.out.drain(), func(m message) bool { return m.kind == kindBirth })
			err = p.out.wal.close(ms)
		}
	})
	return err
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() Stats {
	s := Stats{
		Published: p.published.Load(), Delivered: p.delivered.Load(), Buffered: p.out.Len(),
		Dropped: p.out.Dropped(), Reconnects: p.reconnects.Load(), Connected: p.connected.Load(),
		Accepted: p.accepted.Load(), Rejected: map[RejectCode]uint64{}, RejectedQuiet: p.quietRejected.Load(),
		DroppedBeforeRestart: p.droppedBefore, BufferCorrupt: p.bufferCorrupt, Takeovers: p.takeovers.Load(),
	}
	p.rejectMu.Lock()
	for k, v := range p.rejected {
		s.Rejected[k] = v
	}
	p.rejectMu.Unlock()
	return s
}

// SetBusModel gives the publisher the state of the bus: every message
// then shows each slave's presence, AL state and data quality as state
// holds them, and changes of it are published within a scan interval.
// Without one, every slave is shown present in OP with good data. Set it
// before SetBus, or at any time: the next scan renders the change.
func (p *Publisher) SetBusModel(state *busstate.Model) {
	p.smu.Lock()
	p.state = state
	p.shown = 0
	p.tick = p.tickFor(p.model)
	p.smu.Unlock()
	p.signalRetick()
}

// SetBus makes the publisher publish model (see NewModel), reading the
// process image from image and writing commands to commands (which may
// be nil: writes are then refused). The retained meta (JSON) or the
// DBIRTHs (Sparkplug) of the new bus are queued.
func (p *Publisher) SetBus(model *Model, image ImageSource, commands CommandSink) {
	p.smu.Lock()
	p.model, p.image = model, image
	p.gen++
	p.img = make([]byte, model.ImageBytes)
	p.states = make([]deviceState, len(model.Devices))
	cycle, ok := image.Snapshot(p.img)
	if !ok {
		clear(p.img)
	}
	v := p.viewLocked(time.Now(), cycle)
	for i := range model.Devices {
		d := &model.Devices[i]
		st := &p.states[i]
		st.next = v.now
		st.last = make([]uint64, len(d.Signals))
		st.cur = make([]uint64, len(d.Signals))
		st.lastF = make([]float64, len(d.Signals))
		st.pdTopic = p.sch.dataTopic(d)
		st.shown = p.slaveLocked(d, v.now)
		for k := range d.Signals {
			st.last[k] = d.Signals[k].Raw(p.img)
			st.lastF[k] = d.Signals[k].Float(st.last[k])
		}
	}
	p.shown = v.version
	p.current.Store(model)
	p.wmu.Lock()
	p.commands = commands
	p.wmu.Unlock()
	p.sch.attached(&v.busView)
	p.eventLocked(v.now, func(o *jsonObject) {
		o.string("kind", "bus-attached")
		o.int("slaves", int64(len(model.Devices)))
		o.uint("cycle", cycle)
	})
	p.tick = p.tickFor(model)
	p.smu.Unlock()
	p.signalRetick()
}

// Detach stops reading the current image and command ring (the cycle
// process is going away: its memory will be unmapped). Each device's data
// is then stale: JSON shows it so, Sparkplug devices get their DDEATH.
func (p *Publisher) Detach(reason string) {
	p.smu.Lock()
	if p.model == nil {
		p.smu.Unlock()
		return
	}
	v := p.viewLocked(time.Now(), 0)
	v.state.CycleRunning = false
	for i := range p.states {
		if st := &p.states[i]; st.shown.Quality == busstate.QualityGood {
			st.shown.Quality, st.shown.Since = busstate.QualityStale, v.now
		}
	}
	p.sch.detached(&v.busView, reason)
	p.eventLocked(v.now, func(o *jsonObject) {
		o.string("kind", "bus-detached")
		o.string("reason", reason)
	})
	p.model, p.image = nil, nil
	p.current.Store(nil)
	p.smu.Unlock()

	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.commands = nil
	for seq, w := range p.pending {
		p.rejectLocked(v.now, reject(RejectCycleDown, "the cycle process stopped before applying it: %s", reason), w.slave, w.signal, w.topic)
		delete(p.pending, seq)
	}
}

// snapshotView is a busView with the state version it was taken at.
type snapshotView struct {
	busView
	version uint64
}

// viewLocked returns the bus as the sampler holds it, with the bus's
// state read now. smu is held.
func (p *Publisher) viewLocked(now time.Time, cycle uint64) snapshotView {
	v := snapshotView{busView: busView{model: p.model, states: p.states, img: p.img, cycle: cycle, gen: p.gen, now: now}}
	if p.state != nil {
		v.version = p.state.Version()
		v.state, v.hasState = p.state.Snapshot(), true
	}
	return v
}

// slaveLocked returns device d's state from the bus model.
func (p *Publisher) slaveLocked(d *Device, now time.Time) busstate.Slave {
	if p.state != nil {
		if s, ok := p.state.Slave(d.Slave.Position); ok {
			return s
		}
	}
	return presentSlave(d, now)
}

func (p *Publisher) signalRetick() {
	select {
	case p.retick <- struct{}{}:
	default:
	}
}

// tickFor returns the sampling period for model: the scan interval when a
// device publishes on change, else the shortest device interval.
func (p *Publisher) tickFor(model *Model) time.Duration {
	t := p.cfg.Rules.Interval
	if p.cfg.Rules.OnChange || t <= 0 {
		t = p.cfg.Scan
	}
	if p.state != nil {
		t = min(t, p.cfg.Scan) // changes of state are noticed within a scan
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

// push queues m, made at made.
func (p *Publisher) push(m message, made time.Time) {
	m.made = made.UnixNano()
	p.out.push(m)
}
