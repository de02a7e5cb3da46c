package process

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// TestRecoveryLeavesAHeldSlaveAlone: a slave held for maintenance
// (master.Slave.Hold) and out of OP is left where it is; given back, it
// is taken to OP again.
func TestRecoveryLeavesAHeldSlaveAlone(t *testing.T) {
	m, _ := simbus.Start(t, []string{"EK1100", "EL2004", "EL1014"}, master.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := m.Slaves()[1]
	s.Hold(true)
	if err := m.RequestSlaveState(ctx, s, esc.StatePreOp); err != nil {
		t.Fatal(err)
	}
	rec := newRecovererOf(m, &fakeCycle{events: make(chan shm.Event, 64)}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for range 3 {
		if rec.pass(ctx) {
			t.Fatal("a pass with a held slave out of OP reports all well")
		}
	}
	rec.steps.Wait()
	if err := m.ReadStates(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.State(); st != esc.StatePreOp {
		t.Fatalf("held slave in %v, want PREOP: recovery did not leave it alone", st)
	}
	s.Hold(false)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		rec.pass(ctx)
		rec.steps.Wait()
		if err := m.ReadStates(ctx); err == nil && s.State() == esc.StateOp {
			return
		}
	}
	t.Errorf("given back, the slave is in %v, want OP", s.State())
}
