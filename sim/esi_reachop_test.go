package sim_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
)

// TestESIDevicesReachOP brings devices the simulator has no model of,
// simulated from their ESI files alone (an analog input terminal and a
// CiA 402 drive), to OP with the project's master, and reads the
// terminal's inputs through the master's process image.
func TestESIDevicesReachOP(t *testing.T) {
	devices := []string{"EK1100", "../testdata/esi/example-ea3102.xml", "../ethercat/esi/testdata/cia402-drive.xml:ED402"}
	devs, _, masterEnd := simbus.Serve(t, devices)
	m, err := master.New(masterEnd, &master.Config{Timeout: time.Second, SIITimeout: time.Second,
		StateTimeout: 10 * time.Second, CycleTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.BringUp(ctx); err != nil {
		t.Fatalf("BringUp: %v", err)
	}
	for i, d := range devs {
		if st, code := d.ALStatus(); st.State != esc.StateOp || st.Error {
			t.Errorf("device %d (%s) %+v code %v, want OP", i, d.Name(), st, code)
		}
	}
	slaves := m.Slaves()
	if len(slaves) != 3 {
		t.Fatalf("%d slaves", len(slaves))
	}
	ai := slaves[1]
	if ai.Identity.VendorID != 0x00ECA901 || ai.Identity.ProductCode != 0x0C1E0EA1 || ai.InputBits != 64 || ai.OutputBits != 0 {
		t.Errorf("the analog input terminal as the master sees it: %+v", ai)
	}
	drive := slaves[2]
	if drive.InputBits != 16*8 || drive.OutputBits != 14*8 {
		t.Errorf("the drive as the master sees it: %d input bits, %d output bits; want the ESI's 128, 112", drive.InputBits, drive.OutputBits)
	}
}
