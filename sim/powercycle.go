package sim

import (
	"errors"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// PowerCycle switches the whole segment off and on again, as when the
// machine's 24 V supply is cycled: every device comes back in its power-up
// state (AL status INIT, station address 0, SyncManagers, FMMUs, error
// counters and the distributed clock reset, mailbox empty) with its SII
// EEPROM contents as they were, including what a master wrote there. The
// ESC then loads its configuration from the EEPROM, so an alias written to
// SII word 4 shows in 0x0012 (ET1100 datasheet section I, "EEPROM
// loading"). Devices that had lost power (Disappear) come back too. Noisy
// cables stay noisy. A device whose EEPROM a master filled with an image
// that cannot be parsed stays off, and PowerCycle returns the error.
func (f *Faults) PowerCycle() error {
	s := f.seg
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for i, d := range s.devices {
		if err := d.powerUp(d.eeprom.image, d.spec); err != nil {
			d.off = true
			errs = append(errs, fmt.Errorf("sim: power cycle: device %d: %w", i, err))
			continue
		}
		s.adopt(d)
		if d.off {
			d.off = false
			f.counts.Returned++
		}
		s.states[i], s.codes[i] = esc.ALStatus{State: d.esm.state}, esc.ALNoError
	}
	s.relink()
	f.counts.PowerCycles++
	return errors.Join(errs...)
}
