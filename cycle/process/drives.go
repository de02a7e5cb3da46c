package process

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"

	"github.com/ecagent/ecagent/cycle"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/cia402"
	"github.com/ecagent/ecagent/shm"
)

// driveJob runs one CiA 402 drive in the cycle (cycle.Job).
type driveJob struct {
	slave uint16
	drive *cia402.Drive
}

var _ cycle.Job = (*driveJob)(nil)

// Cycle steps the drive and turns what happened into an event: a fault
// with its error code, the fault cleared, or the new state. The texts are
// constant strings: nothing allocates.
func (j *driveJob) Cycle(now int64, ev *shm.Event) bool {
	de, ok := j.drive.Cycle(now)
	if !ok {
		return false
	}
	ev.Slave = j.slave
	switch de.Kind {
	case cia402.EventFault:
		ev.Kind, ev.Value = shm.EventDriveFault, uint64(de.ErrorCode)
	case cia402.EventFaultCleared:
		ev.Kind, ev.Value = shm.EventDriveFaultCleared, uint64(de.State)
	default:
		ev.Kind, ev.Value = shm.EventDriveState, uint64(de.State)
	}
	ev.SetText(de.State.String())
	return true
}

// Command takes the drive fault reset meant for this drive.
func (j *driveJob) Command(c *shm.Command) (bool, string) {
	if c.Kind != shm.CommandResetDriveFault || c.Slave != j.slave {
		return false, ""
	}
	if !j.drive.State().Faulted() {
		return true, "drive not in fault"
	}
	j.drive.ResetFault()
	return true, ""
}

// bindDrives binds the configured drives to their slaves once the bus is
// mapped, does the SDO writes a drive needs before cyclic operation (the
// mode, when 0x6060 is not in the PDOs), and returns the cycle jobs.
func bindDrives(ctx context.Context, m *master.Master, drives []Drive, log *slog.Logger) ([]cycle.Job, error) {
	var jobs []cycle.Job
	for i, d := range drives {
		if d.Slave >= len(m.Slaves()) {
			return nil, fmt.Errorf("drives[%d].slave = %d: the segment has %d slaves", i, d.Slave, len(m.Slaves()))
		}
		s := m.Slaves()[d.Slave]
		cfg, err := driveConfig(d)
		if err != nil {
			return nil, fmt.Errorf("drives[%d]: %w", i, err)
		}
		drv, err := cia402.BindSlave(m.Image(), s, cfg)
		if err != nil {
			return nil, fmt.Errorf("drives[%d]: %v: %w", i, s, err)
		}
		for _, w := range drv.SetupWrites() {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], w.Value)
			if err := m.SDODownload(ctx, s, w.Index, w.SubIndex, b[:(w.Bits+7)/8]); err != nil {
				return nil, fmt.Errorf("drives[%d]: %v: set %#04x:%02x: %w", i, s, w.Index, w.SubIndex, err)
			}
		}
		log.Info("drive bound", "slave", s.String(), "mode", cfg.Mode.String(), "target", d.Target.Kind,
			"fault_reset", d.FaultReset)
		jobs = append(jobs, &driveJob{slave: uint16(d.Slave), drive: drv})
	}
	return jobs, nil
}

// driveConfig translates a drives item (validated by Config.Validate).
func driveConfig(d Drive) (cia402.Config, error) {
	mode, err := cia402.ParseMode(d.Mode)
	if err != nil {
		return cia402.Config{}, err
	}
	var p cia402.Profile
	switch t := d.Target; t.Kind {
	case "constant":
		p = cia402.Constant(float64(t.Value))
	case "ramp":
		p = cia402.Ramp(float64(t.From), float64(t.To), time.Duration(t.Duration))
	case "sine":
		p = cia402.Sine(float64(t.Offset), float64(t.Amplitude), time.Duration(t.Period))
	default:
		return cia402.Config{}, fmt.Errorf("target kind %q: want constant, ramp or sine", t.Kind)
	}
	reset := cia402.ResetManual
	if d.FaultReset == "auto" {
		reset = cia402.ResetAuto
	}
	return cia402.Config{Mode: mode, Profile: p, FaultReset: reset, SettleCycles: d.SettleCycles}, nil
}
