package process

import (
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/master"
)

// TestMasterConfig: the configuration reaches the master as written: DC
// with no drift frames is the master's -1, nil PDO lists (keep the slave's
// assignment) stay apart from empty ones (assign none).
func TestMasterConfig(t *testing.T) {
	c := contract.Default()
	c.Bus.DC = contract.DC{Enabled: true, Sync0Shift: contract.Duration(100 * time.Microsecond),
		Sync1: contract.Duration(200 * time.Microsecond), StartDelay: contract.Duration(50 * time.Millisecond)}
	c.Bus.PDO = []contract.SlavePDOs{
		{Slave: 1, RxPDOs: []contract.PDO{{Index: 0x1600, Entries: []contract.PDOEntry{{Index: 0x6040, Bits: 16}, {Bits: 8}}}}},
		{Slave: 2, RxPDOs: []contract.PDO{}, TxPDOs: []contract.PDO{{Index: 0x1A00}}},
	}
	c.Cycle.Period = contract.Duration(250 * time.Microsecond)
	mc := MasterConfig(c, quiet)
	if mc.DC == nil || mc.DC.DriftFrames != -1 || mc.DC.Sync0 != 250*time.Microsecond || len(mc.PDO) != 2 ||
		mc.PDO[0].TxPDOs != nil || mc.PDO[1].RxPDOs == nil || mc.PDO[0].RxPDOs[0].Entries[0] != (master.PDOEntryConfig{Index: 0x6040, Bits: 16}) {
		t.Errorf("master configuration %+v", mc)
	}
}

func TestDriveConfig(t *testing.T) {
	for _, d := range []contract.Drive{
		{Mode: "csp", Target: contract.Target{Kind: "constant", Value: 100}, FaultReset: "manual"},
		{Mode: "csv", Target: contract.Target{Kind: "ramp", From: 0, To: 10, Duration: contract.Duration(time.Second)}, FaultReset: "auto"},
		{Mode: "cst", Target: contract.Target{Kind: "sine", Amplitude: 5, Period: contract.Duration(time.Second)}, FaultReset: "manual"},
	} {
		if _, err := driveConfig(d); err != nil {
			t.Errorf("%+v: %v", d, err)
		}
	}
	if _, err := driveConfig(contract.Drive{Mode: "csp", Target: contract.Target{Kind: "step"}}); err == nil {
		t.Error("an unknown target kind translated")
	}
}
