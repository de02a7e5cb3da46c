package master_test

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/dc"
)

// dcSegment mixes clocks with a system time unit (EK1100, EL2889) and
// ET1200 terminals whose DC unit only latches port times (EL2004 here, the
// EL2828 in the real capture).
var dcSegment = []string{"EK1100", "EL2004", filepath.Join(realSII, "el2889.bin"), "EL2004", filepath.Join(realSII, "el2889.bin")}

// dcDiffBound is the largest system time difference (0x092C) accepted after
// static drift compensation. Before it, a clock's system time lags the
// reference by its propagation delay (the offsets leave it out, as SOEM and
// ethercrab do), a few hundred ns on this line. Each FRMW lets the
// simulated control loop remove half the difference, so after 15 000
// frames what is left is integer rounding: 10 ns covers it while staying
// far below the lag the test checks it starts from.
const dcDiffBound = 10

// systemTimeDiff decodes 0x092C into local copy minus received system
// time: bit 31 set when the local copy is smaller, the magnitude in the
// low 31 bits.
func systemTimeDiff(b []byte) int64 {
	v := binary.LittleEndian.Uint32(b)
	mag := int64(v & (1<<31 - 1))
	if v&(1<<31) != 0 {
		return -mag
	}
	return mag
}

func TestConfigureDC(t *testing.T) {
	tests := []struct {
		name    string
		frames  int
		settled bool // every difference within dcDiffBound
	}{
		{name: "one drift frame shows the delay lag", frames: 1},
		{name: "default drift compensation", frames: 0, settled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := simbus.Start(t, dcSegment, master.Config{Logger: slog.New(slog.DiscardHandler)})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			setup, err := m.ConfigureDCWith(ctx, master.DCOptions{DriftFrames: tt.frames, Now: func() time.Time { return start }})
			if err != nil {
				t.Fatal(err)
			}
			slaves := m.Slaves()
			if setup.Reference != slaves[0] {
				t.Fatalf("reference %v, want the EK1100", setup.Reference)
			}
			var got []int
			for _, c := range setup.Clocks {
				got = append(got, c.Slave.Position)
			}
			if want := []int{0, 2, 4}; len(got) != len(want) || got[0] != 0 || got[1] != 2 || got[2] != 4 {
				t.Fatalf("clocks with a system time at %v, want %v", got, want)
			}
			bus := m.Bus()
			prev := uint32(0)
			for i, c := range setup.Clocks {
				// What the master wrote is what it reports.
				var off [8]byte
				var dly [4]byte
				if err := bus.FPRD(ctx, c.Slave.StationAddress, uint16(esc.RegDCSystemOffset), off[:]); err != nil {
					t.Fatal(err)
				}
				if err := bus.FPRD(ctx, c.Slave.StationAddress, uint16(esc.RegDCSystemDelay), dly[:]); err != nil {
					t.Fatal(err)
				}
				if binary.LittleEndian.Uint64(off[:]) != c.Offset || binary.LittleEndian.Uint32(dly[:]) != c.Delay {
					t.Errorf("%v: registers hold offset %#x delay %d, setup says %#x, %d", c.Slave,
						binary.LittleEndian.Uint64(off[:]), binary.LittleEndian.Uint32(dly[:]), c.Offset, c.Delay)
				}
				// Delays grow along the line, by E-bus-sized steps of
				// 50–500 ns per terminal.
				if i > 0 {
					hops := uint32(c.Slave.Position - setup.Clocks[i-1].Slave.Position)
					if step := c.Delay - prev; c.Delay <= prev || step < 50*hops || step > 500*hops {
						t.Errorf("%v: delay %d ns after %d ns %d terminals before", c.Slave, c.Delay, prev, hops)
					}
				}
				prev = c.Delay
				if i == 0 {
					continue // the reference reads, its difference is not updated
				}
				read := func() int64 {
					var diff [4]byte
					if err := bus.FPRD(ctx, c.Slave.StationAddress, uint16(esc.RegDCSystemDiff), diff[:]); err != nil {
						t.Fatal(err)
					}
					return systemTimeDiff(diff[:])
				}
				d := read()
				// The simulated clocks run on the host's time: a pause of
				// the host between the drift frames (a loaded machine)
				// leaves a difference the ESC's loop takes out with the
				// next frames, as on a real bus after a lost frame. A
				// settled segment settles again within a few hundred; a
				// host that keeps pausing takes longer, so frames go on
				// until it is settled or the deadline.
				var sys [8]byte
				ref := wire.PhysicalAddress(setup.Reference.StationAddress, uint16(esc.RegDCSystemTime))
				settleBy := time.Now().Add(10 * time.Second)
				for n := 0; tt.settled && (d < -dcDiffBound || d > dcDiffBound) && time.Now().Before(settleBy); n++ {
					if _, err := bus.Transact(ctx, wire.FRMW, ref, sys[:]); err != nil {
						t.Fatal(err)
					}
					if n%50 == 49 {
						d = read()
					}
				}
				t.Logf("%v: delay %d ns, system time difference %d ns", c.Slave, c.Delay, d)
				within := d >= -dcDiffBound && d <= dcDiffBound
				if within != tt.settled {
					t.Errorf("%v: system time difference %d ns, within ±%d ns: %v, want %v", c.Slave, d, dcDiffBound, within, tt.settled)
				}
			}
			// System time counts from the chosen start: the reference's
			// is its latch instant plus the little time since.
			var sys [8]byte
			if err := bus.FPRD(ctx, slaves[0].StationAddress, uint16(esc.RegDCSystemTime), sys[:]); err != nil {
				t.Fatal(err)
			}
			epoch := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
			if since := time.Duration(binary.LittleEndian.Uint64(sys[:])) - start.Sub(epoch); since < 0 || since > time.Minute {
				t.Errorf("reference system time %v after the latch", since)
			}
		})
	}
}

func TestConfigureDCWithoutSystemTime(t *testing.T) {
	m, _ := simbus.Start(t, []string{"EL2004", "EL2004"}, master.Config{Logger: slog.New(slog.DiscardHandler)})
	err := m.ConfigureDC(context.Background())
	if !errors.Is(err, dc.ErrNoReference) {
		t.Fatalf("error %v, want dc.ErrNoReference", err)
	}
}
