package process

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// cutShortFake is a segment whose slave 1 was lost and whose first
// reconnect loses its last frames: the call returns ErrNoResponse after
// it wrote the station address, and leaves the device where the lost
// frames took it (left). A device that kept its configuration (kept) is
// at its address in SAFEOP before any reconnect ran.
type cutShortFake struct {
	*fakeBus
	mu        sync.Mutex
	left      esc.ALState // where the cut-short reconnect left the device
	addressed bool        // the reconnect reports it wrote the address
	kept      bool        // the device returns configured by itself
	state     esc.ALState // slave 1's state once present
	recovers  int
}

func (b *cutShortFake) CheckSlaves(ctx context.Context, dst []master.SlaveHealth) ([]master.SlaveHealth, error) {
	dst, _ = b.fakeBus.CheckSlaves(ctx, dst)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kept && !b.fakeBus.present[1] && b.fakeBus.calls[1] > 0 {
		// It comes back by itself while the reconnects look for it.
		b.fakeBus.present[1], b.state = true, esc.StateSafeOp
	}
	if dst[1].Present = b.fakeBus.present[1]; dst[1].Present {
		dst[1].State = esc.ALStatus{State: b.state}
	}
	return dst, nil
}

func (b *cutShortFake) Reconnect(ctx context.Context, pos int) (master.ReconnectReport, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fakeBus.calls[pos]++
	rep := master.ReconnectReport{Position: pos}
	switch {
	case b.fakeBus.present[pos] && (b.state == esc.StateSafeOp || b.state == esc.StateOp):
		return rep, fmt.Errorf("master: reconnect: in %v: %w", b.state, master.ErrStillConfigured)
	case b.kept:
		return rep, master.ErrSlaveAbsent
	case b.fakeBus.calls[pos] == 1:
		rep.Addressed = b.addressed
		b.fakeBus.present[pos], b.state = true, b.left
		return rep, fmt.Errorf("master: reconnect: request OP: %w", master.ErrNoResponse)
	}
	b.fakeBus.present[pos], b.state = true, esc.StateOp
	rep.Took = time.Millisecond
	return rep, nil
}

func (b *cutShortFake) Recover(ctx context.Context, s *master.Slave, target esc.ALState) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recovers++
	b.state = esc.StateOp
	return nil
}

// TestRecoveryCutShortReconnectIsAReconnect: a slave that lost power
// comes back, and the reconnect's last frames are lost (seen under
// stress: the OP request's answer lost while every frame was). The
// device is then at its address in SAFEOP or OP — configured by us, not
// a device that kept its configuration — and its return is one
// slave-reconnected, not a slave-found. A device that did keep its
// configuration is still found.
func TestRecoveryCutShortReconnectIsAReconnect(t *testing.T) {
	for _, tc := range []struct {
		name string
		bus  *cutShortFake
		want map[shm.EventKind]int
		// recovers is how many returns to OP the worker asked for.
		recovers int
	}{{
		name:     "left in SAFEOP",
		bus:      &cutShortFake{left: esc.StateSafeOp, addressed: true},
		want:     map[shm.EventKind]int{shm.EventSlaveLost: 1, shm.EventSlaveReconnected: 1},
		recovers: 1,
	}, {
		name: "left in OP",
		bus:  &cutShortFake{left: esc.StateOp, addressed: true},
		want: map[shm.EventKind]int{shm.EventSlaveLost: 1, shm.EventSlaveReconnected: 1},
	}, {
		name: "left in PREOP: reconnected again",
		bus:  &cutShortFake{left: esc.StatePreOp, addressed: true},
		want: map[shm.EventKind]int{shm.EventSlaveLost: 1, shm.EventSlaveReconnected: 1},
	}, {
		name:     "kept its configuration",
		bus:      &cutShortFake{kept: true},
		want:     map[shm.EventKind]int{shm.EventSlaveLost: 1, shm.EventSlaveFound: 1, shm.EventALAcknowledged: 1},
		recovers: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.bus.fakeBus = newFakeBus(3)
			tc.bus.fakeBus.present[1] = false
			cyc := &fakeCycle{events: make(chan shm.Event, 64)}
			r := newRecovererOf(tc.bus, cyc, slog.New(slog.NewTextHandler(io.Discard, nil)))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r.episode(ctx)
			r.steps.Wait()
			if ctx.Err() != nil {
				t.Fatal("the episode did not end")
			}
			counts := map[shm.EventKind]int{}
			for len(cyc.events) > 0 {
				ev := <-cyc.events
				if ev.Kind == shm.EventSlaveState {
					continue // the states read on the way, not counted here
				}
				if ev.Slave != 1 {
					t.Errorf("%v event for slave %d", ev.Kind, ev.Slave)
				}
				counts[ev.Kind]++
			}
			if fmt.Sprint(counts) != fmt.Sprint(tc.want) {
				t.Errorf("events %v, want %v", counts, tc.want)
			}
			if tc.bus.recovers != tc.recovers {
				t.Errorf("%d returns to OP, want %d", tc.bus.recovers, tc.recovers)
			}
		})
	}
}
