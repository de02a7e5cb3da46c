package mqtt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// TestDuplicateCommandsRunOnce: a stamped command delivered twice (a
// sender's QoS 1 retransmission, two bridges) runs once and its copy is
// refused as a duplicate; two commands stamped apart both run; an
// unstamped command cannot be told from a second one and runs each time,
// unless the broker flags the delivery DUP, which is refused unless it is
// stamped and new.
func TestDuplicateCommandsRunOnce(t *testing.T) {
	t.Parallel()
	const topic = harnessRoot + "/set/EL2004-1/channel_1.output"
	dcmd := sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, harnessNode, "EL2004-1")
	ncmd := sparkplug.NodeTopic(harnessGroup, sparkplug.NCMD, harnessNode)
	now := time.Now().UnixMilli()
	jsonAt := func(ms int64) []byte { return fmt.Appendf(nil, `{"value": true, "ts": %d}`, ms) }
	spAt := func(ms int64, m ...sparkplug.Metric) []byte {
		return sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(ms), Metrics: m})
	}
	ch := func(n int) sparkplug.Metric {
		return sparkplug.Metric{Name: fmt.Sprintf("channel_%d.output", n), DataType: sparkplug.Boolean, Bool: true, HasValue: true}
	}
	rebirth := sparkplug.Metric{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true, HasValue: true}
	type delivery struct {
		topic   string
		payload []byte
		dup     bool
	}
	tests := []struct {
		name       string
		scheme     Scheme
		deliveries []delivery
		writes     int // reaching the ring
		duplicates int // refused as duplicate
		rebirths   bool
	}{
		{"JSON stamped, twice", SchemeJSON, []delivery{{topic, jsonAt(now), false}, {topic, jsonAt(now), false}}, 1, 1, false},
		{"JSON stamped, three times", SchemeJSON, []delivery{{topic, jsonAt(now), false}, {topic, jsonAt(now), false}, {topic, jsonAt(now), true}}, 1, 2, false},
		{"JSON stamped apart", SchemeJSON, []delivery{{topic, jsonAt(now), false}, {topic, jsonAt(now + 1), false}}, 2, 0, false},
		{"JSON same stamp, other signal", SchemeJSON, []delivery{{topic, jsonAt(now), false}, {harnessRoot + "/set/EL2004-1/channel_2.output", jsonAt(now), false}}, 2, 0, false},
		{"JSON unstamped, twice", SchemeJSON, []delivery{{topic, []byte("true"), false}, {topic, []byte("true"), false}}, 2, 0, false},
		{"JSON unstamped, DUP flag", SchemeJSON, []delivery{{topic, []byte("true"), true}}, 0, 1, false},
		{"JSON stamped, DUP flag, first seen", SchemeJSON, []delivery{{topic, jsonAt(now), true}}, 1, 0, false},
		{"DCMD twice, two metrics", SchemeSparkplug, []delivery{{dcmd, spAt(now, ch(1), ch(2)), false}, {dcmd, spAt(now, ch(1), ch(2)), false}}, 2, 2, false},
		{"DCMD stamped apart", SchemeSparkplug, []delivery{{dcmd, spAt(now, ch(1)), false}, {dcmd, spAt(now+5, ch(1)), false}}, 2, 0, false},
		{"DCMD unstamped, DUP flag", SchemeSparkplug, []delivery{{dcmd, spPayload(ch(1)), true}}, 0, 1, false},
		{"NCMD rebirth twice", SchemeSparkplug, []delivery{{ncmd, spAt(now, rebirth), false}, {ncmd, spAt(now, rebirth), false}}, 0, 1, true},
		{"NCMD rebirth unstamped, DUP flag", SchemeSparkplug, []delivery{{ncmd, spPayload(rebirth), true}}, 0, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCommandHarness(t, tt.scheme, true)
			for _, d := range tt.deliveries {
				h.p.message(d.topic, d.payload, false, d.dup)
			}
			got := h.log.take()
			dups := 0
			for _, r := range got {
				if r.Code != RejectDuplicate || !strings.HasPrefix(r.Reason, "duplicate command: ") {
					t.Errorf("refusal %+v, want only duplicates", r)
				}
				dups++
			}
			if dups != tt.duplicates || len(h.ring.all()) != tt.writes {
				t.Errorf("%d writes reached the ring and %d duplicates were refused, want %d and %d", len(h.ring.all()), dups, tt.writes, tt.duplicates)
			}
			if n := h.p.Stats().Rejected[RejectDuplicate]; n != uint64(tt.duplicates) {
				t.Errorf("%d duplicates counted, want %d", n, tt.duplicates)
			}
			if r := h.p.session.rebirth.Load(); r != tt.rebirths {
				t.Errorf("rebirth asked: %v, want %v", r, tt.rebirths)
			}
			if tt.duplicates > 0 {
				ev := lastEvent(t, h.p)
				for _, want := range []string{`"kind":"command-rejected"`, `"code":"duplicate"`, `"topic":"` + tt.deliveries[0].topic + `"`} {
					if !strings.Contains(ev, want) {
						t.Errorf("event %s lacks %s", ev, want)
					}
				}
			}
		})
	}
}

// TestRecentCommandsWindow: a command is remembered for duplicateWindow
// and forgotten after; beyond maxRemembered within the window a new
// command is refused, never run untracked.
func TestRecentCommandsWindow(t *testing.T) {
	t.Parallel()
	var r recentCommands
	t0 := time.Unix(1_800_000_000, 0)
	a, b := keyOf("t", []byte("a")), keyOf("t", []byte("b"))
	if _, dup, full := r.take(a, t0); dup || full {
		t.Fatal("first take: duplicate or full")
	}
	if first, dup, _ := r.take(a, t0.Add(duplicateWindow-time.Millisecond)); !dup || !first.Equal(t0) {
		t.Errorf("a copy within the window: dup %v first %v, want true %v", dup, first, t0)
	}
	if _, dup, _ := r.take(a, t0.Add(duplicateWindow)); dup {
		t.Error("a copy after the window is still a duplicate (its stamp is stale by then anyway)")
	}
	if _, dup, _ := r.take(b, t0.Add(duplicateWindow)); dup {
		t.Error("another command is a duplicate")
	}
	t1 := t0.Add(time.Hour)
	for i := range maxRemembered {
		if _, dup, full := r.take(keyOf("t", fmt.Append(nil, i)), t1); dup || full {
			t.Fatalf("command %d: dup %v full %v", i, dup, full)
		}
	}
	if _, _, full := r.take(keyOf("t", []byte("one more")), t1); !full {
		t.Error("one command beyond the bound was taken untracked")
	}
	if _, _, full := r.take(keyOf("t", []byte("one more")), t1.Add(duplicateWindow)); full {
		t.Error("the bound still holds after the window")
	}
	if len(r.order) != 1 || len(r.at) != 1 {
		t.Errorf("%d/%d remembered after the window, want 1", len(r.order), len(r.at))
	}
}

// forget drops everything remembered (tests).
func (r *recentCommands) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.at)
	r.order = r.order[:0]
}
