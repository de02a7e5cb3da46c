package mqtt

import (
	"strings"
	"sync"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn"
)

// Clearing the retained meta of slaves that left: <root>/meta/<slave> is
// retained, so a slave gone from the bus (a new configuration, a slave
// removed) would go on being described forever. The publisher subscribes
// to <root>/meta/+: the broker hands it the retained meta there, and
// every meta topic no device of the attached bus has is cleared (an
// empty retained message). So is the meta of a device a new bus (SetBus)
// no longer has. Nothing is cleared before a bus is attached, nor when
// it is detached (its cycle process is restarting; the slaves did not
// leave).

// metaKeeper tracks the meta topics retained at the broker and those of
// the attached bus. Safe for concurrent use.
type metaKeeper struct {
	mu       sync.Mutex
	retained map[string]bool // meta topics seen retained, with a payload
	current  map[string]bool // the attached bus's; nil before the first
}

// metaWatcher is a scheme that keeps its retained meta tidy.
type metaWatcher interface {
	// metaFilter is the filter of its retained meta topics.
	metaFilter() string
}

func (j *jsonScheme) metaFilter() string { return j.root() + "/meta/+" }

// subscribeMeta subscribes to the scheme's retained meta, if it has any.
// A broker that refuses is logged, not fatal: the meta of slaves that
// left is then not cleared.
func (p *Publisher) subscribeMeta(c *mqttconn.Conn) {
	w, ok := p.sch.(metaWatcher)
	if !ok {
		return
	}
	if err := c.Subscribe(map[string]byte{w.metaFilter(): 1}); err != nil {
		p.log.Warn("mqtt: the retained meta of slaves that left cannot be cleared", "err", err)
	}
}

// metaSeen takes a message on <root>/meta/+: a retained meta the broker
// holds (or an echo of the publisher's own), cleared at once when no
// device of the attached bus has it.
func (j *jsonScheme) metaSeen(topic string, payload []byte) {
	k := &j.metas
	k.mu.Lock()
	if len(payload) == 0 {
		delete(k.retained, topic)
		k.mu.Unlock()
		return
	}
	if k.retained == nil {
		k.retained = map[string]bool{}
	}
	k.retained[topic] = true
	left := k.current != nil && !k.current[topic]
	k.mu.Unlock()
	if left {
		j.clearMeta(topic, time.Now())
	}
}

// metaAttached notes the meta topics of a new bus and clears those of
// the previous bus, and those retained at the broker, that it has not.
func (j *jsonScheme) metaAttached(v *busView) {
	k := &j.metas
	k.mu.Lock()
	gone := map[string]bool{}
	for t := range k.current {
		gone[t] = true
	}
	for t := range k.retained {
		gone[t] = true
	}
	k.current = map[string]bool{}
	for i := range v.model.Devices {
		t := j.metaTopic(&v.model.Devices[i])
		k.current[t] = true
		delete(gone, t)
	}
	k.mu.Unlock()
	for t := range gone {
		j.clearMeta(t, v.now)
	}
}

// clearMeta clears a retained meta topic.
func (j *jsonScheme) clearMeta(topic string, at time.Time) {
	j.p.log.Info("mqtt: clearing the retained meta of a slave that left", "topic", topic)
	j.p.push(message{topic: topic, payload: []byte{}, qos: 1, retain: true}, at)
	k := &j.metas
	k.mu.Lock()
	delete(k.retained, topic)
	k.mu.Unlock()
}

// isMetaTopic reports whether topic is one of the scheme's meta topics.
func (j *jsonScheme) isMetaTopic(topic string) bool {
	rest, ok := strings.CutPrefix(topic, j.root()+"/meta/")
	return ok && rest != "" && !strings.Contains(rest, "/")
}
