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

// TestReconnectWhileCycling unplugs a slave, powers it up again and
// reconnects it while another goroutine keeps exchanging process data
// through a gate: the slave is back in OP at its station address, the
// cycle ran throughout, and its working counter is whole again. Needs
// sim.Faults.
func TestReconnectWhileCycling(t *testing.T) {
	tests := []struct {
		name     string
		position int
	}{
		{"last slave, no mailbox", 3},
		{"middle slave with CoE and PDO assignment read back", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg, m, cy, want := cyclingSegment(t, time.Millisecond, "EK1100", "EL2004", "EL4132", "EL1014")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			if err := seg.Faults().Disappear(tt.position); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Reconnect(ctx, tt.position); !errors.Is(err, master.ErrSlaveAbsent) {
				t.Fatalf("Reconnect while unplugged: %v, want ErrSlaveAbsent", err)
			}
			if err := seg.Faults().Return(tt.position); err != nil {
				t.Fatal(err)
			}
			h, err := m.CheckSlaves(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if h[tt.position].Present {
				t.Fatalf("powered-up slave answers at its old address: %+v", h[tt.position])
			}
			cy.waitWKCBelow(t, want, 5*time.Second)

			before := cy.cycles.Load()
			rep, err := m.Reconnect(ctx, tt.position)
			if err != nil {
				t.Fatalf("Reconnect: %v", err)
			}
			during := cy.cycles.Load() - before
			t.Logf("reconnect of position %d took %v, %d cycles ran meanwhile", tt.position, rep.Took, during)
			if rep.Replaced || rep.PreviousAddress != 0 || rep.Identity != m.Slaves()[tt.position].Identity {
				t.Errorf("report %+v, want the same device found at address 0", rep)
			}
			if rep.Took >= time.Second {
				t.Errorf("reconnect took %v, want well under 1 s", rep.Took)
			}
			d := seg.Devices()[tt.position]
			if d.StationAddress() != m.Slaves()[tt.position].StationAddress || d.State() != esc.StateOp {
				t.Errorf("device at %#04x in %v, want %#04x in OP", d.StationAddress(), d.State(), m.Slaves()[tt.position].StationAddress)
			}
			cy.waitWKC(t, want, 5*time.Second)
			if h, err = m.CheckSlaves(ctx, h); err != nil || !h[tt.position].Healthy(esc.StateOp) {
				t.Errorf("CheckSlaves after reconnect: %+v, %v", h[tt.position], err)
			}
		})
	}
}

// TestReconnectRefusesAnotherDevice plugs another model in where an
// EL2004 was: Reconnect refuses with an *IdentityMismatchError and writes
// no configuration to it.
func TestReconnectRefusesAnotherDevice(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004", "EL1014"))
	m, l := linkedMaster(t, seg, master.Config{})
	other := sim.NewSegment(newDevices(t, "EK1100", "EL1014", "EL1014"))
	l.swap(other)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, err := m.Reconnect(ctx, 1)
	var mis *master.IdentityMismatchError
	if !errors.As(err, &mis) {
		t.Fatalf("Reconnect: %v, want an *IdentityMismatchError", err)
	}
	if mis.Position != 1 || mis.Want != m.Slaves()[1].Identity || mis.Got.ProductCode != other.Devices()[1].Identity().ProductCode {
		t.Errorf("mismatch %+v", mis)
	}
	d := other.Devices()[1]
	if d.StationAddress() != 0 || d.State() != esc.StateInit {
		t.Errorf("other device at %#04x in %v, want untouched at 0 in INIT", d.StationAddress(), d.State())
	}
	for _, area := range []struct {
		name string
		reg  uint16
		n    int
	}{{"FMMUs", 0x0600, 3 * 16}, {"SyncManagers", 0x0800, 4 * 8}, {"SYNC activation", 0x0981, 1}} {
		for i, b := range d.Register(area.reg, area.n) {
			if b != 0 {
				t.Errorf("%s written: byte %d is %#02x", area.name, i, b)
				break
			}
		}
	}
}

// TestReconnectAcceptsReplacement plugs in an identical model with another
// serial number: accepted, reported, brought to OP.
func TestReconnectAcceptsReplacement(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004", "EL1014"))
	m, l := linkedMaster(t, seg, master.Config{})
	img := seg.Devices()[1].SII()
	img[0x1C], img[0x1D], img[0x1E], img[0x1F] = 0x78, 0x56, 0x34, 0x12 // serial number, word 0x0E
	spare, err := sim.DeviceFromSII(img, "EL2004")
	if err != nil {
		t.Fatal(err)
	}
	devs := newDevices(t, "EK1100", "EL1014")
	other := sim.NewSegment([]*sim.Device{devs[0], spare, devs[1]})
	if err := other.Preset(0x1001, esc.StateInit); err != nil {
		t.Fatal(err)
	}
	l.swap(other)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rep, err := m.Reconnect(ctx, 1)
	if err != nil {
		t.Fatalf("Reconnect: %v", err)
	}
	if !rep.Replaced || rep.Identity.SerialNumber != 0x12345678 || rep.PreviousAddress != 0x1002 {
		t.Errorf("report %+v, want a replacement with serial 0x12345678 found at 0x1002", rep)
	}
	if spare.State() != esc.StateOp {
		t.Errorf("replacement in %v, want OP", spare.State())
	}
}

// TestReconnectDistributedClock reconnects a slave of a segment with
// distributed clocks: its system time is aligned with the running
// reference clock and its SYNC0 runs again. Needs sim.Faults.
func TestReconnectDistributedClock(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, dcSegment...)) // the EL2889s have a system time
	m, _ := linkedMaster(t, seg, master.Config{DC: &master.DCConfig{Sync0: time.Millisecond, DriftFrames: 200,
		StartDelay: 20 * time.Millisecond}})
	cy := startCycle(t, m, time.Millisecond)
	want := m.Cyclic().ExpectedWKC()
	cy.waitWKC(t, want, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	const pos = 4
	if err := seg.Faults().Disappear(pos); err != nil {
		t.Fatal(err)
	}
	if err := seg.Faults().Return(pos); err != nil {
		t.Fatal(err)
	}
	rep, err := m.Reconnect(ctx, pos)
	if err != nil {
		t.Fatalf("Reconnect: %v", err)
	}
	t.Logf("reconnect with DC took %v", rep.Took)
	cy.waitWKC(t, want, 5*time.Second)
	d, ref := seg.Devices()[pos], seg.Devices()[0]
	// Read both clocks with the cycle paused, so no frame runs in between.
	// The offset written at the reconnect is as good as the frames that
	// measured it; a frame held up on a loaded host leaves some µs, which
	// the drift control (the cyclic reference time) takes out, as on real
	// slaves: wait for it, and fail only if it never comes within 10 µs.
	clockDiff := func() int64 {
		cy.pause.Lock()
		defer cy.pause.Unlock()
		return int64(d.SystemTime() - ref.SystemTime())
	}
	first, diff := clockDiff(), int64(0)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if diff = clockDiff(); diff >= -10_000 && diff <= 10_000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("returned clock differs from the reference by %d ns 5 s after the reconnect (%d ns at first), want within 10 µs", diff, first)
		}
	}
	t.Logf("returned clock %d ns from the reference after the reconnect, %d ns when checked", first, diff)
	deadline := time.Now().Add(2 * time.Second)
	for !d.Sync0Active() || d.Sync0Pulses() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("SYNC0 of the returned slave: active %v, %d pulses", d.Sync0Active(), d.Sync0Pulses())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReconnectOverPipe is TestReconnectWhileCycling over the pipe the
// other simulator tests use (the segment served by its own goroutine), at
// a 1 ms cycle, to measure a reconnect where frames take real round trips.
// Needs sim.Faults.
func TestReconnectOverPipe(t *testing.T) {
	b := newBench(t, []string{"EK1100", "EL2004", "EL4132", "EL1014"}, master.Config{RecoveryTimeout: 100 * time.Millisecond})
	bringUp(t, b)
	cy := startCycle(t, b.m, time.Millisecond)
	want := b.m.Cyclic().ExpectedWKC()
	cy.waitWKC(t, want, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const pos = 2 // the EL4132: SII, mailbox, PDO assignment over CoE
	if err := b.seg.Faults().Disappear(pos); err != nil {
		t.Fatal(err)
	}
	if err := b.seg.Faults().Return(pos); err != nil {
		t.Fatal(err)
	}
	cy.waitWKCBelow(t, want, 5*time.Second)
	rep, err := b.m.Reconnect(ctx, pos)
	if err != nil {
		t.Fatalf("Reconnect: %v", err)
	}
	t.Logf("reconnect over the pipe took %v, %d cycles", rep.Took, rep.Cycles)
	if rep.Took >= time.Second {
		t.Errorf("reconnect took %v, want well under 1 s", rep.Took)
	}
	// Every datagram rode in a cycle: at least one cycle each, and on a
	// busy host as many cycles as the time allowed, not more.
	if rep.Cycles == 0 || rep.Cycles > uint64(rep.Took/time.Millisecond)+2 {
		t.Errorf("reconnect spanned %d cycles of 1 ms in %v", rep.Cycles, rep.Took)
	}
	cy.waitWKC(t, want, 5*time.Second)
}

// TestSDOWhileCycling runs SDO uploads through the cycle while a cycle
// with mailbox polling runs flat out: the polling must leave the slave's
// mailbox alone while a transfer waits for its answer, so every upload
// gets its answer at once and no answer is read out and discarded by the
// cycle. (Before, the polling took some of the answers, and the upload
// waited for the mailbox timeout.)
func TestSDOWhileCycling(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL4132", "EL1014"))
	m, _ := linkedMaster(t, seg, master.Config{StateTimeout: 2 * time.Second})
	cy := startCycle(t, m, 0)
	cy.waitWKC(t, m.Cyclic().ExpectedWKC(), 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := m.Slaves()[1]
	before := m.Stats().MailboxDiscarded
	cycles := cy.cycles.Load()
	for i := range 200 {
		got, err := m.SDOUpload(ctx, s, 0x1018, 1)
		if err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
		if want := seg.Devices()[1].Identity().VendorID; len(got) != 4 || uint32(got[0])|uint32(got[1])<<8 != want&0xFFFF {
			t.Fatalf("upload %d: % x, want vendor %#x", i, got, want)
		}
	}
	if n := m.Stats().MailboxDiscarded - before; n != 0 {
		t.Errorf("the cyclic polling read out and discarded %d messages during the uploads", n)
	}
	if n := cy.cycles.Load() - cycles; n < 200 {
		t.Errorf("only %d cycles ran beside 200 uploads: the test did not interleave them", n)
	}
}

// TestReconnectLeavesAConfiguredSlave asks Reconnect for slaves that
// answer at their own station address: one in OP (it was behind a break
// in the line, or its cable was bumped) is left alone with
// ErrStillConfigured; one in INIT (a reconnect cut short) is configured
// again and brought to OP.
func TestReconnectLeavesAConfiguredSlave(t *testing.T) {
	seg, m, cy, want := cyclingSegment(t, time.Millisecond, "EK1100", "EL2004", "EL4132", "EL1014")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := seg.Devices()[2]
	transitions := d.Register(uint16(esc.RegALControl), 2)

	if _, err := m.Reconnect(ctx, 2); !errors.Is(err, master.ErrStillConfigured) {
		t.Fatalf("Reconnect of a slave in OP: %v, want ErrStillConfigured", err)
	}
	if d.State() != esc.StateOp || string(d.Register(uint16(esc.RegALControl), 2)) != string(transitions) {
		t.Errorf("slave in OP was touched: now in %v, AL control % x (was % x)", d.State(), d.Register(uint16(esc.RegALControl), 2), transitions)
	}

	if err := m.RequestSlaveState(ctx, m.Slaves()[2], esc.StateInit); err != nil {
		t.Fatal(err)
	}
	cy.waitWKCBelow(t, want, 5*time.Second)
	rep, err := m.Reconnect(ctx, 2)
	if err != nil {
		t.Fatalf("Reconnect of a slave in INIT at its address: %v", err)
	}
	if rep.PreviousAddress != m.Slaves()[2].StationAddress || d.State() != esc.StateOp {
		t.Errorf("report %+v, device in %v; want found at its address and back in OP", rep, d.State())
	}
	cy.waitWKC(t, want, 5*time.Second)
}

// TestReconnectThroughAStarvedCycle: the host stalls the cycle for
// longer than every try of a frame waits in the acyclic queue (4 tries of
// 3 periods + RecoveryTimeout: 212 ms here) just as a reconnect begins.
// No frame was lost — the cycle never got to carry them — so the
// reconnect must not fail for it: its steps are bounded in cycles the bus
// ran, and it completes once the cycle runs again.
func TestReconnectThroughAStarvedCycle(t *testing.T) {
	seg, m, cy, want := cyclingSegment(t, time.Millisecond, "EK1100", "EL2004", "EL1014")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const pos = 2
	if err := seg.Faults().Disappear(pos); err != nil {
		t.Fatal(err)
	}
	if err := seg.Faults().Return(pos); err != nil {
		t.Fatal(err)
	}
	cy.waitWKCBelow(t, want, 5*time.Second)

	const stall = 400 * time.Millisecond // the fault: a host that runs no cycle
	cy.pause.Lock()
	resumed := time.AfterFunc(stall, cy.pause.Unlock)
	defer func() {
		if resumed.Stop() {
			cy.pause.Unlock()
		}
	}()
	start := time.Now()
	rep, err := m.Reconnect(ctx, pos)
	if err != nil {
		t.Fatalf("Reconnect through a %v stall of the cycle: %v (after %v)", stall, err, time.Since(start))
	}
	t.Logf("reconnect through a %v stall took %v, %d cycles", stall, rep.Took, rep.Cycles)
	cy.waitWKC(t, want, 5*time.Second)
}
