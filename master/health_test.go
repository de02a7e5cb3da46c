package master_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/sim"
)

// TestCheckSlaves injects one fault at a time into a segment in OP and
// checks what CheckSlaves and CountSlaves report. Needs sim.Faults.
func TestCheckSlaves(t *testing.T) {
	healthy := func(pos int) master.SlaveHealth {
		return master.SlaveHealth{Position: pos, Address: uint16(0x1001 + pos), Present: true,
			State: esc.ALStatus{State: esc.StateOp}}
	}
	tests := []struct {
		name  string
		fault func(f *sim.Faults) error
		count int
		want  []master.SlaveHealth // Ports not compared here
	}{
		{"all well", func(*sim.Faults) error { return nil }, 3,
			[]master.SlaveHealth{healthy(0), healthy(1), healthy(2)}},
		{"AL error with its code", func(f *sim.Faults) error { return f.ALError(1, uint16(esc.ALSyncManagerWatchdog)) }, 3,
			[]master.SlaveHealth{healthy(0), {Position: 1, Address: 0x1002, Present: true,
				State: esc.ALStatus{State: esc.StateSafeOp, Error: true}, Code: esc.ALSyncManagerWatchdog}, healthy(2)}},
		{"last slave unplugged", func(f *sim.Faults) error { return f.Disappear(2) }, 2,
			[]master.SlaveHealth{healthy(0), healthy(1), {Position: 2, Address: 0x1003}}},
		{"slave back with power but not configured", func(f *sim.Faults) error {
			if err := f.Disappear(2); err != nil {
				return err
			}
			return f.Return(2)
		}, 3, []master.SlaveHealth{healthy(0), healthy(1), {Position: 2, Address: 0x1003}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := sim.NewSegment(newDevices(t, "EK1100", "EL4132", "EL1014"))
			m, _ := linkedMaster(t, seg, master.Config{})
			if err := tt.fault(seg.Faults()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := m.CheckSlaves(ctx, make([]master.SlaveHealth, 5))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d entries, want %d", len(got), len(tt.want))
			}
			for i, h := range got {
				h.Ports = [4]bool{}
				if h != tt.want[i] {
					t.Errorf("position %d: %+v, want %+v", i, h, tt.want[i])
				}
				if h.Present && m.Slaves()[i].Status() != h.State {
					t.Errorf("position %d: recorded status %v, checked %v", i, m.Slaves()[i].Status(), h.State)
				}
			}
			if n, err := m.CountSlaves(ctx); err != nil || n != tt.count {
				t.Errorf("CountSlaves = %d, %v; want %d", n, err, tt.count)
			}
		})
	}
}

// TestCheckSlavesRecordsCodeAndPorts checks that an AL error reaches the
// Slave's recorded status and that an unplugged slave closes its
// neighbour's port in the DL status. Needs sim.Faults.
func TestCheckSlavesRecordsCodeAndPorts(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL4132", "EL1014"))
	m, _ := linkedMaster(t, seg, master.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := m.CheckSlaves(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !h[1].Ports[1] || !h[1].Ports[0] {
		t.Fatalf("EL4132 ports %v at start, want 0 and 1 open", h[1].Ports)
	}
	if err := seg.Faults().ALError(1, uint16(esc.ALSyncManagerWatchdog)); err != nil {
		t.Fatal(err)
	}
	if err := seg.Faults().Disappear(2); err != nil {
		t.Fatal(err)
	}
	if h, err = m.CheckSlaves(ctx, h); err != nil {
		t.Fatal(err)
	}
	s := m.Slaves()[1]
	if s.State() != esc.StateSafeOp || !s.Status().Error || s.StatusCode() != esc.ALSyncManagerWatchdog {
		t.Errorf("recorded %v code %v, want SAFEOP+ERROR code %v", s.Status(), s.StatusCode(), esc.ALSyncManagerWatchdog)
	}
	if h[1].Ports[1] {
		t.Errorf("EL4132 port 1 still open after its neighbour was unplugged: %v", h[1].Ports)
	}
	if h[2].Present {
		t.Errorf("unplugged slave reported present: %+v", h[2])
	}
	if h[2].Healthy(esc.StateOp) || !h[0].Healthy(esc.StateOp) {
		t.Errorf("Healthy: %v %v", h[0].Healthy(esc.StateOp), h[2].Healthy(esc.StateOp))
	}
}

// TestCheckSlavesAfterLinkLoss loses every frame, as a broken cable would:
// CheckSlaves fails with ErrNoResponse; once frames come back again it
// reports every slave healthy. Needs sim.Faults.
func TestCheckSlavesAfterLinkLoss(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004", "EL1014"))
	m, _ := linkedMaster(t, seg, master.Config{})
	startCycle(t, m, time.Millisecond) // RecoveryTimeout applies: keep the lost frames short
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seg.Faults().DropPercent(100)
	if _, err := m.CheckSlaves(ctx, nil); !errors.Is(err, master.ErrNoResponse) {
		t.Fatalf("CheckSlaves without link: %v, want ErrNoResponse", err)
	}
	if _, err := m.CountSlaves(ctx); !errors.Is(err, master.ErrNoResponse) {
		t.Fatalf("CountSlaves without link: %v, want ErrNoResponse", err)
	}
	seg.Faults().DropOff()
	h, err := m.CheckSlaves(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range h {
		if !s.Healthy(esc.StateOp) {
			t.Errorf("after the link returned: %+v", s)
		}
	}
}
