package sim_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"strings"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
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
		t.Run(strings.Join(devices, ","), func(t *testing.T) {
			devs, _, masterEnd := simbus.Serve(t, devices)
			m, err := master.New(masterEnd, &master.Config{Timeout: time.Second, SIITimeout: time.Second,
				StateTimeout: 10 * time.Second, CycleTimeout: time.Second,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			err = m.BringUp(ctx)
			cancel()
			if err != nil {
				t.Errorf("BringUp: %v", err)
			}
			for i, d := range devs {
				if st, code := d.ALStatus(); err == nil && (st.State != esc.StateOp || st.Error) {
					t.Errorf("device %d (%s) %+v code %v, want OP", i, d.Name(), st, code)
				}
			}
		})
	}
}
