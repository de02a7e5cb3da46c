package test

import (
	"bytes"
	"context"
	bin "encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/cia402"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/sim"
)

// countsPerRev is the simulated AKD's encoder resolution (0x608F).
const countsPerRev = 1 << 20

// servoBus serves an EK1100 and a simulated AKD on a veth pair and brings
// the bus to OP with distributed clocks at the given period.
func servoBus(t *testing.T, period time.Duration) (*master.Master, *sim.Device) {
	t.Helper()
	w := newWire(t, "srv")
	ek, err := sim.NewDevice("EK1100")
	if err != nil {
		t.Fatal(err)
	}
	akd, err := sim.NewDevice("AKD")
	if err != nil {
		t.Fatal(err)
	}
	simOnWire(t, w, []*sim.Device{ek, akd})
	m := masterOnWireWith(t, w, master.Config{Timeout: 50 * time.Millisecond, SIITimeout: time.Second,
		DC: &master.DCConfig{Sync0: period, Sync0Shift: period / 2}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.BringUp(ctx); err != nil {
		t.Fatal(err)
	}
	return m, akd
}

// masterOnWireWith opens the master's end with cfg.
func masterOnWireWith(t *testing.T, w wire, cfg master.Config) *master.Master {
	t.Helper()
	lc := link.DefaultConfig()
	lc.QdiscBypass = false
	l, err := link.Open(w.MasterEnd, lc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := master.New(l, &cfg)
	if err != nil {
		_ = l.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(); _ = l.Close() })
	return m
}

// TestServoSDOOverVeth exercises the CoE mailbox against the simulated
// drive: expedited, normal and segmented transfers both ways, and an
// abort reported with its code and meaning.
func TestServoSDOOverVeth(t *testing.T) {
	m, _ := servoBus(t, time.Millisecond)
	s := m.Slaves()[1]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Expedited: the device type says "CiA 402 servo drive".
	b, err := m.SDOUpload(ctx, s, 0x1000, 0)
	if err != nil || len(b) != 4 || bin.LittleEndian.Uint32(b) != 0x00020192 {
		t.Fatalf("0x1000 = % x, %v; want 0x00020192", b, err)
	}
	// Expedited download and read back.
	if err := m.SDODownload(ctx, s, 0x6065, 0, bin.LittleEndian.AppendUint32(nil, 100_000)); err != nil {
		t.Fatalf("write following error window: %v", err)
	}
	if b, err := m.SDOUpload(ctx, s, 0x6065, 0); err != nil || bin.LittleEndian.Uint32(b) != 100_000 {
		t.Fatalf("following error window reads % x, %v; want 100000", b, err)
	}
	// Segmented both ways: the motor name does not fit the 128-byte
	// mailbox.
	name, err := m.SDOUpload(ctx, s, 0x2000, 0)
	if err != nil || len(name) <= 112 || !strings.HasPrefix(string(name), "AKM24D") {
		t.Fatalf("motor name (segmented upload): %q, %v", name, err)
	}
	long := bytes.Repeat([]byte("segmented download over veth; "), 8)
	if err := m.SDODownload(ctx, s, 0x2000, 0, long); err != nil {
		t.Fatalf("segmented download of %d bytes: %v", len(long), err)
	}
	if back, err := m.SDOUpload(ctx, s, 0x2000, 0); err != nil || !bytes.Equal(back, long) {
		t.Fatalf("read back %q, %v; want what was written", back, err)
	}
	// An abort names its code and meaning.
	err = m.SDODownload(ctx, s, 0x6041, 0, []byte{0, 0})
	var abort *coe.AbortError
	if !errors.As(err, &abort) || abort.Code != 0x06010002 || !strings.Contains(err.Error(), "attempt to write a read-only object") {
		t.Fatalf("writing the statusword: %v; want abort 0x06010002 (read only object)", err)
	}
}

// driveRun runs drive d every period for n cycles against the bus and
// returns the drive events.
func driveRun(t *testing.T, m *master.Master, d *cia402.Drive, period time.Duration, n int, each func(i int)) []cia402.Event {
	t.Helper()
	var events []cia402.Event
	next := rt.Now()
	for i := range n {
		next += int64(period)
		rt.SleepUntil(next)
		if ev, ok := d.Cycle(rt.Now()); ok {
			events = append(events, ev)
		}
		m.ExchangeUntil(time.Now().Add(period - period/10))
		if each != nil {
			each(i)
		}
	}
	return events
}

// TestServoDrivesOverVeth runs the seeds' servo demos against the
// simulated AKD: CSV at 1 ms and CST at 125 µs with distributed clocks.
// The drive must reach operation enabled and follow its target; a fault
// is reported with its code (also as a CoE emergency) and reset.
func TestServoDrivesOverVeth(t *testing.T) {
	t.Run("CSV 1 ms, velocity follows the target", func(t *testing.T) {
		const period = time.Millisecond
		m, akd := servoBus(t, period)
		const target = countsPerRev // 1 rev/s
		d, err := cia402.BindSlave(m.Image(), m.Slaves()[1], cia402.Config{Mode: cia402.ModeCSV,
			Profile: cia402.Constant(target), SettleCycles: 10})
		if err != nil {
			t.Fatal(err)
		}
		enabledAt := -1
		events := driveRun(t, m, d, period, 600, func(i int) {
			if enabledAt < 0 && d.State() == state.OperationEnabled {
				enabledAt = i
			}
		})
		if enabledAt < 0 || enabledAt > 50 {
			t.Fatalf("operation enabled at cycle %d (events %v), want within 50 cycles", enabledAt, events)
		}
		if st := akd.DriveState(); st != state.OperationEnabled {
			t.Fatalf("simulated drive in %v", st)
		}
		_, vel, _ := akd.DriveActual()
		if diff := float64(vel-target) / target; diff > 0.02 || diff < -0.02 {
			t.Errorf("actual velocity %d counts/s, target %d: off by %.1f %%", vel, target, 100*diff)
		}
		if _, v, _ := d.Actual(); v != vel && (v-vel > target/50 || vel-v > target/50) {
			t.Errorf("the master reads %d counts/s, the drive has %d", v, vel)
		}

		// A fault: reported with its code by the drive helper and as an
		// emergency through the cyclic mailbox polling; then reset.
		if err := akd.InjectDriveFault(0x8611); err != nil {
			t.Fatal(err)
		}
		events = driveRun(t, m, d, period, 50, nil)
		if !hasFault(events, 0x8611) {
			t.Fatalf("after an injected following error: events %v, want a fault with 0x8611", events)
		}
		if ems := m.Emergencies(nil); !hasEmergency(ems, 0x8611) {
			t.Errorf("emergencies %+v, want 0x8611 from slave 1", ems)
		}
		d.ResetFault()
		events = driveRun(t, m, d, period, 100, nil)
		if d.State() != state.OperationEnabled || !hasKind(events, cia402.EventFaultCleared) {
			t.Fatalf("after the reset: state %v, events %v; want the fault cleared and operation enabled again", d.State(), events)
		}
	})

	t.Run("CST 125 µs, torque accelerates", func(t *testing.T) {
		const period = 125 * time.Microsecond
		m, akd := servoBus(t, period)
		d, err := cia402.BindSlave(m.Image(), m.Slaves()[1], cia402.Config{Mode: cia402.ModeCST,
			Profile: cia402.Constant(100), SettleCycles: 80})
		if err != nil {
			t.Fatal(err)
		}
		var v1, v2 int32
		driveRun(t, m, d, period, 2400, func(i int) {
			switch i {
			case 1600:
				_, v1, _ = akd.DriveActual()
			case 2399:
				_, v2, _ = akd.DriveActual()
			}
		})
		if st := akd.DriveState(); st != state.OperationEnabled {
			t.Fatalf("simulated drive in %v", st)
		}
		_, _, torque := akd.DriveActual()
		if torque < 90 || torque > 110 || v2 <= v1 || v1 <= 0 {
			t.Errorf("torque %d ‰ (want 100), velocity %d then %d counts/s (want rising)", torque, v1, v2)
		}
	})

	t.Run("CSV target jump faults the drive", func(t *testing.T) {
		const period = time.Millisecond
		m, _ := servoBus(t, period)
		d, err := cia402.BindSlave(m.Image(), m.Slaves()[1], cia402.Config{Mode: cia402.ModeCSV,
			Profile: cia402.Constant(20 * countsPerRev), SettleCycles: 10}) // 0 → 20 rev/s in one cycle
		if err != nil {
			t.Fatal(err)
		}
		events := driveRun(t, m, d, period, 100, nil)
		if !hasFault(events, 0x8400) {
			t.Fatalf("events %v, want a fault with 0x8400 (velocity step beyond 0x60C5)", events)
		}
	})
}

func hasFault(events []cia402.Event, code uint16) bool {
	for _, e := range events {
		if e.Kind == cia402.EventFault && e.ErrorCode == code {
			return true
		}
	}
	return false
}

func hasKind(events []cia402.Event, k cia402.EventKind) bool {
	for _, e := range events {
		if e.Kind == k {
			return true
		}
	}
	return false
}

func hasEmergency(ems []master.SlaveEmergency, code uint16) bool {
	for _, e := range ems {
		if e.Position == 1 && e.Emergency.ErrorCode == code {
			return true
		}
	}
	return false
}
