package master_test

import (
	"context"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/sim"
)

// The acyclic queue on a loaded host: a cycle the host delays, and bursts
// of frames whose answers come too late, delay transactions but do not
// fail them.

// TestQueuedTransactionWaitsForAStarvedCycle: a host that lets the cycle
// run only every 30 ms, ten times its queue's wait, delays a transaction
// but loses none of its tries: each datagram waits until the cycle comes
// round and carries it.
func TestQueuedTransactionWaitsForAStarvedCycle(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004"))
	m, _ := linkedMaster(t, seg, master.Config{RecoveryTimeout: 2 * time.Millisecond, Retries: 1})
	m.QueueAcyclic(true, time.Millisecond) // the queue's wait: 5 ms
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			m.ExchangeUntil(time.Now().Add(time.Second))
		}
	}()
	defer func() { close(stop); <-done; m.QueueAcyclic(false, 0) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := m.Stats()
	for i := range 5 {
		n, err := m.CountSlaves(ctx)
		if err != nil || n != 2 {
			t.Fatalf("CountSlaves %d beside a starved cycle: %d, %v; want 2", i, n, err)
		}
	}
	if got := m.Stats().Retries - before.Retries; got != 0 {
		t.Errorf("%d retries: a try the cycle did not come round to carry counted as lost", got)
	}
}

// TestQueuedTransactionOutlastsABurstOfLosses: on a loaded host the
// cycle's answers come late for tens of milliseconds in a row; a
// transaction through the cycle outlasts 700 ms of every frame lost,
// backing off between its tries, instead of failing after four lost
// frames.
func TestQueuedTransactionOutlastsABurstOfLosses(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004"))
	m, _ := linkedMaster(t, seg, master.Config{})
	cy := startCycle(t, m, time.Millisecond)
	cy.waitWKC(t, m.Cyclic().ExpectedWKC(), 5*time.Second)
	before := m.Stats()
	seg.Faults().DropPercent(100)
	go func() {
		time.Sleep(700 * time.Millisecond)
		seg.Faults().DropOff()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	n, err := m.CountSlaves(ctx)
	if err != nil || n != 2 {
		t.Fatalf("CountSlaves through 700 ms of lost frames: %d, %v; want 2", n, err)
	}
	if took, retries := time.Since(start), m.Stats().Retries-before.Retries; took < 650*time.Millisecond || retries < 4 {
		t.Errorf("answered after %v and %d retries: the frames were not lost", took, retries)
	}
}

// TestQueuedSDOUploadOutlastsABurstOfLosses: recovery's mailbox
// operations (a returning slave's PDO assignment read over SDO) ride in
// the cycle's frames; 700 ms of every frame lost (a loaded host) delays an
// SDO upload but does not fail it.
func TestQueuedSDOUploadOutlastsABurstOfLosses(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL4132"))
	m, _ := linkedMaster(t, seg, master.Config{})
	cy := startCycle(t, m, time.Millisecond)
	cy.waitWKC(t, m.Cyclic().ExpectedWKC(), 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	analog := m.Slaves()[1]
	want, err := m.SDOUpload(ctx, analog, 0x1018, 1)
	if err != nil {
		t.Fatal(err)
	}
	seg.Faults().DropPercent(100)
	go func() {
		time.Sleep(700 * time.Millisecond)
		seg.Faults().DropOff()
	}()
	got, err := m.SDOUpload(ctx, analog, 0x1018, 1)
	if err != nil || string(got) != string(want) {
		t.Fatalf("SDO upload 0x1018:01 through 700 ms of lost frames: % x, %v; want % x", got, err, want)
	}
}
