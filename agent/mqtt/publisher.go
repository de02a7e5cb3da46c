package mqtt

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/shm"
)

// The publisher itself: its configuration and counters, creating,
// starting and closing it, and the calls of the agent. It is made of
// parts, each a type of its own with its own lock: the sampler
// (sampler.go: the bus being published), the writes (writes.go), the
// refusals (refusals.go), the sequencer (sequence.go: the numbered
// messages) and the session (session.go: the broker connection); the
// Renderer (render.go) renders, the outbox (outbox.go) holds what waits
// for the broker.

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
	QoS byte
	// Scheme selects one of the schemes ecagent ships; Renderer, when
	// set, is another, and Scheme is then not used.
	Scheme   Scheme
	Renderer Renderer
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

// Publisher publishes one bus to one broker. Create it with New, start it
// with Start, give it the bus with SetBus (and its state with
// SetBusModel), and stop it with Close. Its methods are safe for
// concurrent use.
//
// Its parts each guard their own state, and the locks are taken in one
// order: the sampler's (the bus being sampled), the writes' (the writes
// waiting for the cycle's answer), the refusals', the sequencer's (the
// numbering of events and statistics), the outbox's. The session holds
// none of them while it talks to the broker.
type Publisher struct {
	cfg Config
	log *slog.Logger
	out *outbox
	r   Renderer

	sampler   sampler
	writes    writes
	refusals  refusals
	recent    recentCommands // stamped commands taken lately (duplicate.go)
	sequencer sequencer
	session   session

	droppedBefore, bufferCorrupt uint64 // from the write-ahead log's replay

	startOnce, closeOnce sync.Once
	closing              chan struct{}
}

// New returns a publisher for cfg. It loads cfg.BufferFile, if any, and
// the last bdSeq from cfg.StateDir (Sparkplug).
func New(cfg Config) (*Publisher, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	p := &Publisher{cfg: cfg, log: cfg.Logger, out: newOutbox(cfg.Buffer), closing: make(chan struct{})}
	bdSeq := &bdSeqStore{}
	switch {
	case cfg.Renderer != nil:
		p.r = cfg.Renderer
	case cfg.Scheme == SchemeSparkplug:
		store, err := openBdSeq(cfg.StateDir, cfg.Group, cfg.Node)
		if err != nil {
			return nil, err
		}
		bdSeq = store
		p.r = NewSparkplugRenderer(SparkplugOptions{Group: cfg.Group, Node: cfg.Node, Root: cfg.Root, Logger: p.log})
	default:
		p.r = NewJSONRenderer(JSONOptions{Root: cfg.Root, QoS: cfg.QoS, Logger: p.log})
	}
	p.assemble(bdSeq)
	if cfg.BufferFile != "" {
		if err := p.replay(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// normalize checks cfg and fills in its defaults.
func (cfg *Config) normalize() error {
	if cfg.Scheme == SchemeInvalid && cfg.Renderer == nil {
		return errors.New("mqtt: no scheme")
	}
	if cfg.Broker == "" {
		return errors.New("mqtt: no broker URL")
	}
	if cfg.QoS > 2 {
		return fmt.Errorf("mqtt: QoS %d, want 0, 1 or 2", cfg.QoS)
	}
	cfg.Buffer = max(cfg.Buffer, 1)
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = 100 * time.Millisecond
	}
	capped := cfg.ReconnectMax > MaxReconnect
	cfg.ReconnectMin = min(cfg.ReconnectMin, MaxReconnect)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if capped {
		cfg.Logger.Info("mqtt: the reconnect back-off is capped, so that the agent follows the broker back within seconds",
			"reconnectmax", cfg.ReconnectMax, "cap", MaxReconnect)
	}
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
	return nil
}

// assemble wires the parts of p together.
func (p *Publisher) assemble(bdSeq *bdSeqStore) {
	connected := &p.session.connected

	q := &p.sequencer
	q.r, q.out, q.connected = p.r, p.out, connected

	f := &p.refusals
	f.log, f.r, f.out, f.seq, f.connected = p.log, p.r, p.out, q, connected
	f.rejected = map[RejectCode]uint64{}
	f.gate = refusalGate{interval: p.cfg.RefusalInterval, burst: p.cfg.RefusalBurst}

	w := &p.writes
	w.enabled, w.ref, w.seq, w.bus = p.cfg.WritesEnabled, f, q, &p.sampler.current
	w.pending = map[uint64]pendingWrite{}

	sm := &p.sampler
	sm.rules, sm.scan, sm.log, sm.r, sm.out = p.cfg.Rules, p.cfg.Scan, p.log, p.r, p.out
	sm.seq, sm.ref, sm.wr, sm.connected = q, f, w, connected
	sm.retick, sm.poke, sm.samplerDone = make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
	sm.tick = sm.tickFor(nil)

	ss := &p.session
	ss.cfg, ss.log, ss.r, ss.out, ss.sampler, ss.seq, ss.bdSeq = &p.cfg, p.log, p.r, p.out, sm, q, bdSeq
	ss.onMessage, ss.closing = p.message, p.closing
	ss.wake, ss.sessionDone = make(chan struct{}, 1), make(chan struct{})
}

// Start starts connecting and publishing. It returns at once.
func (p *Publisher) Start() {
	p.startOnce.Do(func() {
		go p.sampler.run(p.closing)
		go p.session.run()
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
		p.startOnce.Do(func() { close(p.sampler.samplerDone); close(p.session.sessionDone) })
		p.session.grace = grace
		close(p.closing)
		<-p.sampler.samplerDone
		// goodbye flushes for grace and waits goodbyeAck for the last
		// message; a write to a broker that stopped reading can still
		// block for mqtt.timeout. Past the bound the connection is cut,
		// which ends that write: what was not acknowledged stays in the
		// outbox for the buffer file, and the broker publishes the will.
		t := time.NewTimer(grace + goodbyeAck + time.Second)
		defer t.Stop()
		select {
		case <-p.session.sessionDone:
		case <-t.C:
			p.log.Warn("mqtt: the broker did not take the goodbye in time; closing the connection", "after", grace+goodbyeAck+time.Second)
			if c := p.session.conn.Load(); c != nil {
				c.Close()
			}
			t.Reset(time.Second)
			select {
			case <-p.session.sessionDone:
			case <-t.C:
				p.log.Warn("mqtt: the session did not stop in time")
			}
		}
		if p.cfg.BufferFile != "" {
			// Births are rendered when sent: the next run's connection
			// sends its own.
			ms := slices.DeleteFunc(p.out.drain(), func(m message) bool { return m.kind == KindBirth })
			err = p.out.wal.close(ms)
		}
	})
	return err
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() Stats {
	rejected, quiet := p.refusals.counts()
	return Stats{
		Published: p.session.published.Load(), Delivered: p.session.delivered.Load(), Buffered: p.out.Len(),
		Dropped: p.out.Dropped(), Reconnects: p.session.reconnects.Load(), Connected: p.session.connected.Load(),
		Accepted: p.writes.accepted.Load(), Rejected: rejected, RejectedQuiet: quiet,
		DroppedBeforeRestart: p.droppedBefore, BufferCorrupt: p.bufferCorrupt, Takeovers: p.session.takeovers.Load(),
	}
}

// SetBusModel gives the publisher the state of the bus: every message
// then shows each slave's presence, AL state and data quality as state
// holds them, and changes of it are published within a scan interval.
// Without one, every slave is shown present in OP with good data. Set it
// before SetBus, or at any time: the next scan renders the change.
func (p *Publisher) SetBusModel(state *busstate.Model) { p.sampler.setBusModel(state) }

// SetBus makes the publisher publish model (see NewModel), reading the
// process image from image and writing commands to commands (which may
// be nil: writes are then refused). What the renderer starts a bus with —
// the retained meta (JSON), the DBIRTHs (Sparkplug) — is queued.
func (p *Publisher) SetBus(model *Model, image ImageSource, commands CommandSink) {
	p.sampler.setBus(model, image, commands)
}

// Detach stops reading the current image and command ring (the cycle
// process is going away: its memory will be unmapped). Each device's data
// is then stale: JSON shows it so, Sparkplug devices get their DDEATH;
// the writes still waiting for the cycle's answer are refused.
func (p *Publisher) Detach(reason string) {
	if at, ok := p.sampler.detach(reason); ok {
		p.writes.abandon(at, reason)
	}
}

// Window publishes the statistics of one metrics window: on …/stats
// (JSON) or as NDATA (Sparkplug).
func (p *Publisher) Window(r *cyclestats.Report, at time.Time) { p.sequencer.window(r, at) }
