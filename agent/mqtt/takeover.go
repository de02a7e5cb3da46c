package mqtt

import (
	"errors"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn"
)

// Session takeover. A broker that admits a second connection with a
// client's identifier ends the first one (MQTT 3.1.1 §3.1.4): a client
// connecting as ecagent-<site>-<host> disconnects the agent, whose will
// flips its status offline; the agent reconnects at once and disconnects
// that client in turn, and two clients that both reconnect keep each
// other flapping. MQTT 3.1.1 does not say why a broker closed a
// connection, so the agent infers it: a connection the broker closes
// within takeoverWindow of being made, takeoverStreak times in a row, was
// taken over. Then the agent stops fighting for the identifier: it raises
// a session-takeover event, counts it (ecagent_mqtt_session_takeovers_total),
// logs an error and waits TakeoverBackoff before it connects again,
// doubling the wait at each further takeover up to maxTakeoverBackoff. A
// connection that lasts, or a broker that cannot be reached (a restart),
// ends the streak. The broker's configuration is what prevents takeovers
// (docs/mqtt.md); this bounds the flapping where it does not.

// The takeover rule.
const (
	// takeoverWindow: a connection the broker closes sooner was cut short.
	takeoverWindow = 10 * time.Second
	// takeoverStreak connections cut short in a row are a takeover.
	takeoverStreak = 3
	// defaultTakeoverBackoff is the first wait after a takeover.
	defaultTakeoverBackoff = 10 * time.Second
	// maxTakeoverBackoff caps the wait.
	maxTakeoverBackoff = 5 * time.Minute
)

// takeoverWatch follows the connections' ends for takeovers; the session
// goroutine owns it.
type takeoverWatch struct {
	cut  int           // connections cut short in a row
	wait time.Duration // the next back-off; 0: the first
	last time.Duration // how long the last connection lasted
}

// reset ends the streak (a connection attempt failed: the broker is away,
// not contested).
func (w *takeoverWatch) reset() { w.cut, w.wait = 0, 0 }

// ended takes the end of a connection that lasted lived with err, and
// reports whether the session is taken over, and how long to wait then.
func (w *takeoverWatch) ended(err error, lived, first time.Duration) (time.Duration, bool) {
	if !errors.Is(err, mqttconn.ErrClosedByBroker) || lived >= takeoverWindow {
		w.reset()
		return 0, false
	}
	w.cut++
	w.last = lived
	if w.cut < takeoverStreak {
		return 0, false
	}
	if w.wait == 0 {
		w.wait = first
	} else {
		w.wait = min(2*w.wait, maxTakeoverBackoff)
	}
	return reconnectWait(w.wait), true
}

// takenOver counts a takeover, logs it and queues its event; the session
// then waits wait.
func (s *session) takenOver(w *takeoverWatch, wait time.Duration) {
	n := s.takeovers.Add(1)
	now := time.Now()
	s.log.Error("mqtt: the broker keeps closing the agent's connection right after it is made: another client is probably "+
		"connecting with the agent's client id and taking its session over; backing off (see docs/mqtt.md for the broker's configuration)",
		"client_id", s.cfg.ClientID, "cut_short_in_a_row", w.cut, "last_lasted", w.last.Round(time.Millisecond),
		"retry_in", wait.Round(time.Millisecond), "takeovers", n)
	s.seq.event(now, "session-takeover", func(o *jsonObject) {
		o.string("client_id", s.cfg.ClientID)
		o.int("connections", int64(w.cut))
		o.int("lasted_ms", w.last.Milliseconds())
		o.int("retry_in_ms", wait.Milliseconds())
		o.uint("takeovers", n)
	})
}
