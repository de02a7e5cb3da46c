package mqtt

import (
	"encoding/json"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// CycleSpike publishes an explained late cycle on …/events: kind
// cycle-spike, the cycle, its lateness and the causes largest first, as
// contract.SpikeView shows them (the same fields as /spikes and ecagent
// spikes --json).
func (p *Publisher) CycleSpike(sp *contract.CycleSpike, at time.Time) {
	causes, err := json.Marshal(sp.View().Causes)
	if err != nil {
		return // plain strings and numbers: cannot fail
	}
	v := sp.View()
	p.sequencer.event(at, contract.EventCycleSpike.String(), func(o *jsonObject) {
		o.uint("cycle", v.Cycle)
		o.string("cause", v.Top)
		o.float("late_us", v.LateUS)
		o.float("excess_us", v.ExcessUS)
		o.bool("overrun", v.Overrun)
		if v.StealUS > 0 {
			o.float("steal_us", v.StealUS)
		}
		if v.Incomplete {
			o.bool("incomplete", true)
		}
		o.key("causes")
		o.b = append(o.b, causes...)
	})
}
