package mqtt

import "time"

// BringUpFailed publishes that a cycle process could not bring the bus up:
// a "bring-up-failed" event on …/events with the reason (link, no-answer,
// not-as-configured, failed), the cycle process's error, the failures in
// a row and when the agent tries again; and, from the bus model (which the
// caller updated first), the bus's state — not ready, and why — on the
// retained state topic (JSON) or the node's Bus metrics (Sparkplug),
// although no bus is attached.
func (p *Publisher) BringUpFailed(reason, text string, failures int, retryIn time.Duration, at time.Time) {
	p.sequencer.event(at, "bring-up-failed", func(o *jsonObject) {
		o.string("reason", reason)
		o.string("error", text)
		o.int("failures", int64(failures))
		o.int("retry_in_ms", retryIn.Milliseconds())
	})
	p.BusStateChanged()
}

// BusStateChanged makes the publisher render the bus model's state now,
// also while no bus is attached (SetBus): a cycle process starting or
// failing to bring the bus up changes what the state says before there
// is a bus to publish.
func (p *Publisher) BusStateChanged() { p.sampler.pokeState() }
