package busstate

import (
	"log/slog"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/shm"
)

// TestEventFields checks the fields of each form as every output gets
// them, and that the log writes codes in hexadecimal.
func TestEventFields(t *testing.T) {
	emergency := shm.Event{Kind: shm.EventEmergency, Value: shm.EmergencyValue(0x8611, 0x81, [5]byte{1, 2, 0xab, 0, 0xff})}
	state := event(shm.EventSlaveState, 1, alWord(esc.StateSafeOp, true), 0x001B, "")
	drive := shm.Event{Kind: shm.EventDriveState, Value: 6}
	reconnected := shm.Event{Kind: shm.EventSlaveReconnected, Value: 2_500_000}
	for _, tt := range []struct {
		ev   shm.Event
		want []EventField
	}{
		{emergency, []EventField{{"error_code", Code(0x8611)}, {"error_register", Code(0x81)}, {"data", "0102ab00ff"}, {"meaning", "following error"}}},
		{state, []EventField{{"state", "SAFEOP"}, {"error", true}, {"al_status_code", Code(0x1B)}, {"al_status", "0x001b (sync manager watchdog)"}}},
		{drive, []EventField{{"state", "quick stop active"}, {"state_number", uint64(6)}}},
		{reconnected, []EventField{{"took_us", int64(2500)}}},
	} {
		e, _ := tt.ev.Kind.Info()
		got := AppendEventFields(nil, &tt.ev, e)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", e.Name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: field %d is %v, want %v", e.Name, i, got[i], tt.want[i])
			}
		}
	}
	if got := (EventField{"al_status_code", Code(0x1B)}).Attr(); got.Value.Resolve().String() != "0x001b" {
		t.Errorf("a code in the log: %v", got)
	}
	if got := (EventField{"cycles", uint64(7)}).Attr(); got.Value.Kind() != slog.KindUint64 {
		t.Errorf("a number in the log: %v", got)
	}
}
