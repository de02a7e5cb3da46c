package master

import (
	"sync"

	"github.com/ecagent/ecagent/ethercat/coe"
)

// EmergencyQueueLen is how many emergency messages the master keeps until
// Emergencies takes them; when more arrive, the oldest are dropped and
// counted in Stats.EmergenciesDropped.
const EmergencyQueueLen = 64

// SlaveEmergency is a CoE emergency message and the slave that sent it.
type SlaveEmergency struct {
	// Position is the sending slave's ring position.
	Position int
	// StationAddress is its configured station address.
	StationAddress uint16
	// Time is when the master read the message, from Config.Clock (ns).
	Time int64
	// Emergency is the message.
	Emergency coe.Emergency
}

// emergencyQueue is a fixed ring of emergency messages: the cycle adds to
// it without allocating, another goroutine drains it.
type emergencyQueue struct {
	mu   sync.Mutex
	buf  [EmergencyQueueLen]SlaveEmergency
	head int // index of the oldest
	n    int
}

// push adds e, dropping the oldest when full; it reports whether one was
// dropped.
func (q *emergencyQueue) push(e SlaveEmergency) (dropped bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == len(q.buf) {
		q.head = (q.head + 1) % len(q.buf)
		q.n--
		dropped = true
	}
	q.buf[(q.head+q.n)%len(q.buf)] = e
	q.n++
	return dropped
}

// drain appends the queued messages, oldest first, to dst and empties the
// queue.
func (q *emergencyQueue) drain(dst []SlaveEmergency) []SlaveEmergency {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range q.n {
		dst = append(dst, q.buf[(q.head+i)%len(q.buf)])
	}
	q.head, q.n = 0, 0
	return dst
}

// noteEmergency records an emergency message slave s sent: it is counted
// (Stats.Emergencies) and queued for Emergencies. It does not allocate, so
// the cyclic exchange may call it; callers outside the cycle also log it.
func (m *Master) noteEmergency(s *Slave, e coe.Emergency) {
	m.counters.emergencies.Add(1)
	if m.emergencies.push(SlaveEmergency{Position: s.Position, StationAddress: s.StationAddress,
		Time: m.cfg.Clock(), Emergency: e}) {
		m.counters.emergenciesDropped.Add(1)
	}
}

// Emergencies appends the CoE emergency messages received since the last
// call (at most EmergencyQueueLen, oldest first) to dst and returns it.
// It is safe to call from any goroutine, also while the cycle runs.
func (m *Master) Emergencies(dst []SlaveEmergency) []SlaveEmergency {
	return m.emergencies.drain(dst)
}
