package mqtt

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Commands delivered twice. MQTT delivers a QoS 1 publication at least
// once: a sender that misses the broker's PUBACK publishes it again (its
// DUP flag is not passed on to subscribers, §3.3.1.1), and two bridges or
// a bridge loop deliver one command twice. A command runs once or not at
// all, so the publisher refuses a second copy:
//
//   - a stamped command (the JSON scheme's "ts", Sparkplug's payload
//     timestamp) whose topic and payload, stamp included, equal one taken
//     within duplicateWindow is refused as a duplicate. Two commands meant
//     apart carry different stamps; copies of one carry the same. Beyond
//     the window a copy is refused anyway: its stamp is older than
//     MaxCommandAge (stale).
//   - a delivery with the DUP flag set (the broker delivers again a packet
//     it sent before, which the agent may have taken) is refused unless it
//     is stamped and no copy was taken: without a stamp, nothing tells
//     whether the first delivery ran.
//
// An unstamped command delivered twice without the DUP flag cannot be told
// from two commands; docs/mqtt.md asks senders to stamp theirs.

// duplicateWindow is how long a stamped command is remembered: a copy is
// taken only while its stamp lies within MaxCommandAge of the agent's
// clock, so two copies taken arrive at most twice that apart.
const duplicateWindow = 2*MaxCommandAge + time.Second

// maxRemembered bounds the stamped commands remembered; more within
// duplicateWindow are refused (queue_full) rather than run untracked.
const maxRemembered = 4096

// commandKey identifies a command: a digest of its topic and payload.
type commandKey [sha256.Size]byte

func keyOf(topic string, payload []byte) commandKey {
	h := sha256.New()
	h.Write([]byte(topic))
	h.Write([]byte{0})
	h.Write(payload)
	var k commandKey
	h.Sum(k[:0])
	return k
}

// taken is a stamped command remembered until expires.
type taken struct {
	key     commandKey
	at      time.Time
	expires time.Time
}

// recentCommands remembers the stamped commands taken within
// duplicateWindow. Safe for concurrent use.
type recentCommands struct {
	mu    sync.Mutex
	at    map[commandKey]time.Time // when each was taken
	order []taken                  // oldest first
}

// take records the stamped command key arriving at now. It returns the
// time an identical copy was taken (dup true), or, when the command is new
// but maxRemembered others are still within the window, full true.
func (r *recentCommands) take(key commandKey, now time.Time) (first time.Time, dup, full bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expireLocked(now)
	if at, ok := r.at[key]; ok {
		return at, true, false
	}
	if len(r.order) >= maxRemembered {
		return time.Time{}, false, true
	}
	if r.at == nil {
		r.at = make(map[commandKey]time.Time)
	}
	r.at[key] = now
	r.order = append(r.order, taken{key: key, at: now, expires: now.Add(duplicateWindow)})
	return time.Time{}, false, false
}

// expireLocked forgets the commands whose window has passed.
func (r *recentCommands) expireLocked(now time.Time) {
	n := 0
	for n < len(r.order) && !now.Before(r.order[n].expires) {
		delete(r.at, r.order[n].key)
		n++
	}
	if n > 0 {
		r.order = append(r.order[:0], r.order[n:]...)
	}
}

// duplicateReason is the reason of a refused copy of a command taken at
// first.
func duplicateReason(first time.Time) *RejectError {
	return reject(RejectDuplicate, "duplicate command: the same topic and payload, time stamp included, arrived at %s and was taken then; "+
		"this copy is not run (a sender repeating a QoS 1 publication, or two bridges, deliver a command twice)",
		first.UTC().Format(time.RFC3339Nano))
}

// dupFlagReason is the reason of a refused unstamped redelivery.
var dupFlagReason = "duplicate command: the broker delivers it again (DUP flag) and it carries no time stamp that would tell " +
	"whether the first delivery ran; it is not run. Stamp commands (JSON \"ts\", the Sparkplug payload timestamp)"
