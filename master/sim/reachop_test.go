package sim_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/sim"
)

// TestMasterReachesOP brings segments of every kind of model to OP with
// the project's master over a pipe, the segment on the monotonic clock:
// the devices' own timings (EEPROM, controllers, mailboxes) and rules (AL
// control as a mailbox) must not stop an ordinary master.
func TestMasterReachesOP(t *testing.T) {
	for _, devices := range [][]string{
		{"EK1100", "LAN9252", "LAN9252"},
		{"EK1100", "EL3004", "EL4132", "AKD"},
		{"EK1914", "EL3004", "EL2004", "EL1014"},
	} {
		devs, err := sim.ParseDevices(devices)
		if err != nil {
			t.Fatal(err)
		}
		seg := sim.NewSegment(devs)
		masterEnd, simEnd := link.NewPipe()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = seg.Serve(ctx, simEnd)
		}()
		m, err := master.New(masterEnd, &master.Config{Timeout: time.Second, SIITimeout: time.Second,
			StateTimeout: 10 * time.Second, CycleTimeout: time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		bctx, bcancel := context.WithTimeout(ctx, 60*time.Second)
		err = m.BringUp(bctx)
		bcancel()
		if err != nil {
			t.Errorf("%v: BringUp: %v", devices, err)
		}
		for i, d := range devs {
			if st, code := d.ALStatus(); err == nil && (st.State != esc.StateOp || st.Error) {
				t.Errorf("%v: device %d (%s) %+v code %v, want OP", devices, i, d.Name(), st, code)
			}
		}
		_ = m.Close()
		cancel()
		_ = simEnd.Close()
		wg.Wait()
	}
}
