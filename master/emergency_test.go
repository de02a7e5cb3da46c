package master

import (
	"testing"

	"github.com/ecagent/ecagent/ethercat/coe"
)

func TestEmergencyQueueKeepsNewestAndCountsDrops(t *testing.T) {
	tests := []struct {
		name     string
		pushed   int
		wantKept int
		wantDrop int
	}{
		{"empty", 0, 0, 0},
		{"one", 1, 1, 0},
		{"full", EmergencyQueueLen, EmergencyQueueLen, 0},
		{"overflow by three", EmergencyQueueLen + 3, EmergencyQueueLen, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var q emergencyQueue
			drops := 0
			for i := range tc.pushed {
				if q.push(SlaveEmergency{Position: i, Emergency: coe.Emergency{ErrorCode: uint16(i)}}) {
					drops++
				}
			}
			got := q.drain(nil)
			if len(got) != tc.wantKept || drops != tc.wantDrop {
				t.Fatalf("kept %d dropped %d, want %d and %d", len(got), drops, tc.wantKept, tc.wantDrop)
			}
			for i, e := range got {
				if want := tc.pushed - tc.wantKept + i; e.Position != want {
					t.Fatalf("entry %d is message %d, want %d (oldest first, newest kept)", i, e.Position, want)
				}
			}
			if again := q.drain(nil); len(again) != 0 {
				t.Fatalf("second drain returned %d messages, want none", len(again))
			}
		})
	}
}

func TestEmergencyQueuePushDoesNotAllocate(t *testing.T) {
	var q emergencyQueue
	e := SlaveEmergency{Position: 1, Emergency: coe.Emergency{ErrorCode: 0x8611}}
	if n := testing.AllocsPerRun(1000, func() { q.push(e) }); n != 0 {
		t.Fatalf("push allocates %v times", n)
	}
}
