package master_test

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
)

// syncBench brings dcCycleSegment up without DC and configures the clocks
// with a few drift frames, ready for ConfigureSync.
func syncBench(t *testing.T) (*bench, master.DCSetup) {
	t.Helper()
	b := newBench(t, dcCycleSegment, master.Config{})
	bringUp(t, b)
	setup, err := b.m.ConfigureDCWith(context.Background(), master.DCOptions{DriftFrames: 100})
	if err != nil {
		t.Fatal(err)
	}
	return b, setup
}

// systemTime reads a slave's system time.
func systemTime(t *testing.T, m *master.Master, s *master.Slave) uint64 {
	t.Helper()
	return binary.LittleEndian.Uint64(register(t, m, s, esc.RegDCSystemTime, 8))
}

func TestConfigureSync(t *testing.T) {
	const us = time.Microsecond
	tests := []struct {
		name       string
		opts       master.SyncOptions
		configured []int // positions
		activation uint8
	}{
		{name: "SYNC0 on every clock", opts: master.SyncOptions{Sync0: 1000 * us},
			configured: []int{0, 2, 4}, activation: 0x03},
		{name: "SYNC0 shifted and SYNC1", opts: master.SyncOptions{Sync0: 500 * us, Sync0Shift: -100 * us, Sync1: 200 * us, StartDelay: 50 * time.Millisecond},
			configured: []int{0, 2, 4}, activation: 0x07},
		{name: "one slave", opts: master.SyncOptions{Sync0: 2000 * us, Sync0Shift: 300 * us, Positions: []int{4}},
			configured: []int{4}, activation: 0x03},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, setup := syncBench(t)
			slaves := b.m.Slaves()
			before := systemTime(t, b.m, slaves[0])
			out, err := b.m.ConfigureSync(context.Background(), setup, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			after := systemTime(t, b.m, slaves[0])
			delay := tt.opts.StartDelay
			if delay == 0 {
				delay = master.DefaultSyncStartDelay
			}
			if out.Activation != tt.activation || out.Sync0 != tt.opts.Sync0 || out.Sync0Shift != tt.opts.Sync0Shift || out.Sync1 != tt.opts.Sync1 {
				t.Errorf("setup %+v, want activation %#02x and the options", out, tt.activation)
			}
			if len(out.Slaves) != len(tt.configured) {
				t.Fatalf("%d slaves configured, want %v", len(out.Slaves), tt.configured)
			}
			le := binary.LittleEndian
			for k, ss := range out.Slaves {
				s := ss.Slave
				if s.Position != tt.configured[k] {
					t.Errorf("slave %d configured is at %d, want %d", k, s.Position, tt.configured[k])
				}
				dev := b.devs[s.Position]
				if got := le.Uint64(dev.Register(uint16(esc.RegDCStartTime), 8)); got != ss.Start {
					t.Errorf("%v: 0x0990 holds %d, setup says %d", s, got, ss.Start)
				}
				if got := register(t, b.m, s, esc.RegDCActivation, 1)[0]; got != tt.activation {
					t.Errorf("%v: activation %#02x, want %#02x", s, got, tt.activation)
				}
				if got := register(t, b.m, s, esc.RegDCCyclicControl, 1)[0]; got != 0 {
					t.Errorf("%v: cyclic unit control %#02x, want 0", s, got)
				}
				if got := le.Uint32(register(t, b.m, s, esc.RegDCSync0Cycle, 4)); got != uint32(tt.opts.Sync0) {
					t.Errorf("%v: SYNC0 cycle %d, want %d", s, got, tt.opts.Sync0)
				}
				if got := le.Uint32(register(t, b.m, s, esc.RegDCSync1Cycle, 4)); got != uint32(tt.opts.Sync1) {
					t.Errorf("%v: SYNC1 cycle %d, want %d", s, got, tt.opts.Sync1)
				}
				// On the shared grid, in the future of the read that
				// preceded it and at most a cycle after the delay.
				if off := (int64(ss.Start) - int64(tt.opts.Sync0Shift)) % int64(tt.opts.Sync0); off != 0 {
					t.Errorf("%v: start %d is %d ns off the grid", s, ss.Start, off)
				}
				lo, hi := before+uint64(delay), after+uint64(delay)+uint64(tt.opts.Sync0)
				if ss.Start <= lo || ss.Start > hi {
					t.Errorf("%v: start %d outside (%d, %d]", s, ss.Start, lo, hi)
				}
			}
			for _, p := range []int{0, 2, 4} {
				configured := false
				for _, c := range tt.configured {
					configured = configured || c == p
				}
				if got := b.devs[p].Register(uint16(esc.RegDCActivation), 1)[0]; !configured && got != 0 {
					t.Errorf("slave %d not selected, yet activation %#02x", p, got)
				}
			}
		})
	}
}

func TestConfigureSyncRefuses(t *testing.T) {
	b, setup := syncBench(t)
	tests := []struct {
		name string
		opts master.SyncOptions
		is   error // nil: any error
	}{
		{name: "no cycle time", opts: master.SyncOptions{}},
		{name: "shift beyond the cycle", opts: master.SyncOptions{Sync0: time.Millisecond, Sync0Shift: 2 * time.Millisecond}},
		{name: "position without system time", opts: master.SyncOptions{Sync0: time.Millisecond, Positions: []int{1}}},
		{name: "position off the segment", opts: master.SyncOptions{Sync0: time.Millisecond, Positions: []int{9}}},
		// A start 1 µs ahead has passed by the time the activation, a
		// frame later, is written: the bug a too short delay causes.
		{name: "start passed", opts: master.SyncOptions{Sync0: time.Microsecond, StartDelay: 1}, is: master.ErrSyncStartPassed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.m.ConfigureSync(context.Background(), setup, tt.opts)
			if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("ConfigureSync: %v, want an error (matching %v)", err, tt.is)
			}
		})
	}
	unscanned := newBench(t, dcCycleSegment, master.Config{})
	if _, err := unscanned.m.ConfigureSync(context.Background(), setup, master.SyncOptions{Sync0: time.Millisecond}); !errors.Is(err, master.ErrNotScanned) {
		t.Errorf("ConfigureSync before Scan: %v, want ErrNotScanned", err)
	}
}

// TestSyncPulsesOnSim relies on the simulator's SYNC0 emulation: once
// cyclic operation has started, an ESC answers a read of 0x0990 with the
// system time of the next SYNC0 pulse, on the grid the start time began.
func TestSyncPulsesOnSim(t *testing.T) {
	b, setup := syncBench(t)
	const cycle = 500 * time.Microsecond
	out, err := b.m.ConfigureSync(context.Background(), setup, master.SyncOptions{Sync0: cycle, Sync0Shift: 100 * time.Microsecond, StartDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, ss := range out.Slaves {
		for systemTime(t, b.m, ss.Slave) < ss.Start+uint64(5*cycle) {
			time.Sleep(time.Millisecond)
		}
		next := binary.LittleEndian.Uint64(register(t, b.m, ss.Slave, esc.RegDCStartTime, 8))
		now := systemTime(t, b.m, ss.Slave)
		if next <= ss.Start || (next-ss.Start)%uint64(cycle) != 0 {
			t.Errorf("%v: next SYNC0 pulse %d, want a later point of the grid from %d by %v", ss.Slave, next, ss.Start, cycle)
		}
		// The read of 0x0990 came before the read of the time.
		if next+uint64(cycle) < now || next > now+uint64(cycle) {
			t.Errorf("%v: next SYNC0 pulse %d, system time %d: more than a cycle apart", ss.Slave, next, now)
		}
	}
}
