package busstate

import (
	"testing"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/ethercat/esc"
)

// TestEveryEffectApplies applies an event of every row of the catalogue
// that has an effect, after the event that makes the effect a change, and
// fails for one that changes nothing: its effect is not folded (or the
// row's scope is not the effect's). An event of a row without an effect
// changes nothing.
func TestEveryEffectApplies(t *testing.T) {
	// before is the event that puts the slave or bus in the state the
	// effect changes.
	before := map[contract.Effect]contract.EventKind{
		contract.EffectFound:        contract.EventSlaveLost,
		contract.EffectBackInOP:     contract.EventSlaveLost,
		contract.EffectAlarmCleared: contract.EventBusAlarm,
		contract.EffectLinkUp:       contract.EventLinkDown,
	}
	for _, e := range contract.Events() {
		if e.Origin != contract.OriginCycle {
			continue
		}
		m := New((&clock{}).now)
		m.Reset([]SlaveInfo{{0, "EK1100"}, {1, "EL2004"}})
		if k, ok := before[e.Effect]; ok {
			ev := event(k, 1, 0, 0, contract.AlarmFramesLost)
			m.Apply(&ev)
		}
		ev := event(e.Kind, 1, alWord(esc.StateSafeOp, true), 0x001B, "EL9999")
		if changed := m.Apply(&ev); changed != (e.Effect != contract.EffectNone) {
			t.Errorf("%s (effect %d): Apply changed the model: %v", e.Name, e.Effect, changed)
		}
	}
}
