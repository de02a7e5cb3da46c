package mqtt

import (
	"sync"
	"sync/atomic"
)

// message is one MQTT publication waiting in the outbox or in flight.
type message struct {
	topic   string
	payload []byte
	qos     byte
	retain  bool
	// sparkplug messages get their seq appended when they are sent (the
	// sequence is per connection and counts what was actually sent).
	sparkplug bool
	// made is when the message was produced (Unix nanoseconds), for the
	// publish delay.
	made int64
	// kind says what the renderer makes of the message at send time
	// (Renderer.Prepare); device names the device a device message is about
	// ("" for messages of an earlier run, read from the buffer file), and
	// dev and gen locate it in the bus attached by the gen-th SetBus.
	kind   MessageKind
	device string
	dev    int
	gen    uint64
	// wseq is the message's record in the write-ahead log, 0 if it has
	// none.
	wseq uint64
}

// outbox is the bounded FIFO of messages waiting for the broker. When it
// is full, pushing drops the oldest message and counts it: a dropped
// message was never sent, so it is lost, no doubt about it. Retained
// plain messages (status, state, meta: what a topic says now) are kept
// apart, the latest per topic, and never dropped for room: a newer one
// supersedes the one still waiting, which no subscriber would have kept
// anyway, and they go out before the FIFO. Messages that
// were sent but not acknowledged when a connection broke (at most
// maxInflight) go back in front of the others and are not dropped for
// room: the broker may have them, and counting them as lost could be
// wrong. It recycles payload buffers, so that a steady flow of messages
// allocates no new ones. Safe for concurrent use; the zero value is not
// usable (newOutbox).
type outbox struct {
	mu    sync.Mutex
	retry []message // sent once, unacknowledged: they go first
	// retained holds the latest retained plain message per topic, in
	// the order the topics first came (retainedOrder).
	retained      map[string]message
	retainedOrder []string
	ring          []message
	head          int // index of the oldest message
	n             int
	free          [][]byte
	ready         chan struct{} // signalled (never blocking) when a message arrives
	// wal, when set, logs what the outbox takes while logging is on (the
	// broker is not reachable), and what becomes of it.
	wal     *wal
	logging bool

	dropped atomic.Uint64
	length  atomic.Int64
}

// maxFreeBuffers bounds the recycled payload buffers kept.
const maxFreeBuffers = 4096

func newOutbox(bound int) *outbox {
	return &outbox{ring: make([]message, max(bound, 1)), ready: make(chan struct{}, 1), retained: map[string]message{}}
}

// lengthLocked is the number of queued messages.
func (o *outbox) lengthLocked() int64 { return int64(len(o.retry) + len(o.retainedOrder) + o.n) }

// buffer returns an empty payload buffer, recycled if one is free.
func (o *outbox) buffer() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := len(o.free); n > 0 {
		b := o.free[n-1]
		o.free[n-1] = nil
		o.free = o.free[:n-1]
		return b[:0]
	}
	return make([]byte, 0, 256)
}

// recycle takes back a payload buffer nobody uses any more.
func (o *outbox) recycle(b []byte) {
	if b == nil {
		return
	}
	o.mu.Lock()
	o.recycleLocked(b)
	o.mu.Unlock()
}

func (o *outbox) recycleLocked(b []byte) {
	if len(o.free) < maxFreeBuffers && cap(b) <= 64<<10 {
		o.free = append(o.free, b)
	}
}

// push appends m, dropping (and counting) the oldest message when the
// outbox is full. It never blocks.
func (o *outbox) push(m message) {
	o.mu.Lock()
	o.logLocked(&m)
	if m.retain && m.kind == 0 {
		if old, ok := o.retained[m.topic]; ok {
			o.settle(old, false)
			o.recycleLocked(old.payload) // superseded: the topic says m now
		} else {
			o.retainedOrder = append(o.retainedOrder, m.topic)
		}
		o.retained[m.topic] = m
		o.length.Store(o.lengthLocked())
		o.mu.Unlock()
		o.signal()
		return
	}
	if o.n == len(o.ring) {
		o.dropOldestLocked()
	}
	o.ring[(o.head+o.n)%len(o.ring)] = m
	o.n++
	o.length.Store(o.lengthLocked())
	o.mu.Unlock()
	o.signal()
}

// requeue puts messages that were sent but not acknowledged back in front
// of the others, oldest first, so they go out again in their order.
func (o *outbox) requeue(ms []message) {
	if len(ms) == 0 {
		return
	}
	o.mu.Lock()
	o.retry = append(append(make([]message, 0, len(ms)+len(o.retry)), ms...), o.retry...)
	o.length.Store(o.lengthLocked())
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) signal() {
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

func (o *outbox) dropOldestLocked() {
	m := &o.ring[o.head]
	if o.wal != nil {
		o.wal.drop(m.wseq)
	}
	o.recycleLocked(m.payload)
	*m = message{}
	o.head = (o.head + 1) % len(o.ring)
	o.n--
	o.dropped.Add(1)
}

// pop removes and returns the oldest message.
func (o *outbox) pop() (message, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.retry) > 0 {
		m := o.retry[0]
		o.retry[0] = message{}
		o.retry = o.retry[1:]
		if len(o.retry) == 0 {
			o.retry = nil
		}
		o.length.Store(o.lengthLocked())
		return m, true
	}
	if len(o.retainedOrder) > 0 {
		topic := o.retainedOrder[0]
		o.retainedOrder = o.retainedOrder[1:]
		m := o.retained[topic]
		delete(o.retained, topic)
		o.length.Store(o.lengthLocked())
		return m, true
	}
	if o.n == 0 {
		return message{}, false
	}
	m := o.ring[o.head]
	o.ring[o.head] = message{}
	o.head = (o.head + 1) % len(o.ring)
	o.n--
	o.length.Store(o.lengthLocked())
	return m, true
}

// drain removes and returns every queued message, oldest first.
func (o *outbox) drain() []message {
	var out []message
	for {
		m, ok := o.pop()
		if !ok {
			return out
		}
		out = append(out, m)
	}
}

// Len returns the number of queued messages.
func (o *outbox) Len() int { return int(o.length.Load()) }

// Dropped returns how many messages were dropped for lack of room.
func (o *outbox) Dropped() uint64 { return o.dropped.Load() }

// logLocked logs m in the write-ahead log when logging is on (births are
// rendered when sent, and never logged).
func (o *outbox) logLocked(m *message) {
	if o.wal != nil && o.logging && m.wseq == 0 && m.kind != KindBirth {
		m.wseq = o.wal.append(m)
	}
}

// settle records in the write-ahead log that m was delivered (or
// superseded), or dropped; recycle its payload separately.
func (o *outbox) settle(m message, dropped bool) {
	if o.wal == nil || m.wseq == 0 {
		return
	}
	if dropped {
		o.wal.drop(m.wseq)
		return
	}
	o.wal.done(m.wseq)
}

// finish takes back a message that was delivered, or discarded at send
// time: its record is settled and its payload recycled.
func (o *outbox) finish(m message) {
	o.settle(m, false)
	o.recycle(m.payload)
}

// setLogging turns the write-ahead log on (the broker is not reachable:
// what is queued now, and what comes, is logged) or off.
func (o *outbox) setLogging(on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.wal == nil || o.logging == on {
		return
	}
	o.logging = on
	if !on {
		return
	}
	for i := range o.retry {
		o.logLocked(&o.retry[i])
	}
	for _, t := range o.retainedOrder {
		m := o.retained[t]
		o.logLocked(&m)
		o.retained[t] = m
	}
	for i := range o.n {
		o.logLocked(&o.ring[(o.head+i)%len(o.ring)])
	}
}
