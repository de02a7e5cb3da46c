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

// TestRecoverReturnsToOP drops a slave to SAFEOP+ERROR while the cycle
// runs in another goroutine through a gate; Recover acknowledges it and
// takes it back to OP, and the cycle's working counter is whole again.
// Needs sim.Faults.
func TestRecoverReturnsToOP(t *testing.T) {
	seg, m, cy, want := cyclingSegment(t, time.Millisecond, "EK1100", "EL4132", "EL2004", "EL1014")

	if err := seg.Faults().ALError(1, uint16(esc.ALSyncManagerWatchdog)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := m.Slaves()[1]
	if err := m.Recover(ctx, s, esc.StateOp); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if st, code := seg.Devices()[1].ALStatus(); st != (esc.ALStatus{State: esc.StateOp}) || code != esc.ALNoError {
		t.Errorf("device after Recover: %v code %v, want OP without error", st, code)
	}
	if s.Status() != (esc.ALStatus{State: esc.StateOp}) {
		t.Errorf("recorded status %v, want OP", s.Status())
	}
	cy.waitWKC(t, want, 5*time.Second)
	// A slave in its state without error: Recover has nothing to do.
	if err := m.Recover(ctx, s, esc.StateOp); err != nil {
		t.Errorf("Recover of a healthy slave: %v", err)
	}
}

// TestRecoverRefusedAgain changes a slave's PDO assignment behind the
// master's back, so that it refuses PREOP→SAFEOP with the mapped
// SyncManager size each time: Recover returns a *RecoveryError with the
// code and its name, attempt after attempt.
func TestRecoverRefusedAgain(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL4132"))
	m, _ := linkedMaster(t, seg, master.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := m.Slaves()[1]
	if s.OutputBits != 32 {
		t.Fatalf("EL4132 maps %d output bits, want 32 (two channels)", s.OutputBits)
	}
	if err := m.RequestSlaveState(ctx, s, esc.StatePreOp); err != nil {
		t.Fatal(err)
	}
	// Assign one channel only: 16 bits where 32 are mapped.
	for _, w := range []struct {
		sub  uint8
		data []byte
	}{{0, []byte{0}}, {1, []byte{0x00, 0x16}}, {0, []byte{1}}} {
		if err := m.SDODownload(ctx, s, 0x1C12, w.sub, w.data); err != nil {
			t.Fatalf("SDO download 0x1C12:%d: %v", w.sub, err)
		}
	}
	for attempt := 1; attempt <= 2; attempt++ {
		err := m.Recover(ctx, s, esc.StateOp)
		var re *master.RecoveryError
		if !errors.As(err, &re) {
			t.Fatalf("attempt %d: Recover = %v, want a *RecoveryError", attempt, err)
		}
		if re.Code != esc.ALInvalidOutputConfig || re.CodeName != "invalid output configuration" ||
			re.Position != 1 || re.Target != esc.StateOp {
			t.Errorf("attempt %d: %+v, want code %v with its name at position 1", attempt, re, esc.ALInvalidOutputConfig)
		}
		var ale *master.ALStateError
		if !errors.As(err, &ale) || ale.Requested != esc.StateSafeOp {
			t.Errorf("attempt %d: underlying error %v, want the refused PREOP→SAFEOP", attempt, err)
		}
		if st := seg.Devices()[1].State(); st != esc.StatePreOp {
			t.Errorf("attempt %d: device in %v, want PREOP", attempt, st)
		}
	}
}

// TestRecoverRejectsForeignSlave checks the argument checks.
func TestRecoverRejectsForeignSlave(t *testing.T) {
	seg := sim.NewSegment(newDevices(t, "EK1100", "EL2004"))
	m, _ := linkedMaster(t, seg, master.Config{})
	ctx := context.Background()
	if err := m.Recover(ctx, &master.Slave{Position: 1}, esc.StateOp); err == nil {
		t.Error("Recover of a slave of no scan: no error")
	}
	if err := m.Recover(ctx, m.Slaves()[1], esc.StateBootstrap); err == nil {
		t.Error("Recover to BOOT: no error")
	}
}
