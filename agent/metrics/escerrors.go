package metrics

import "fmt"

// ESCErrorCounterBytes is the size of the ESC error counter block
// 0x0300–0x0313, which a master reads in one FPRD.
const ESCErrorCounterBytes = 0x14

// DecodeESCErrorCounters takes apart the error counter block 0x0300–0x0313
// as one read returns it (ET1100 datasheet section II): per port p the
// invalid frame counter at 0x0300+2p, the RX error counter at 0x0301+2p,
// the forwarded RX error counter at 0x0308+p and the lost link counter at
// 0x0310+p; the ECAT processing unit (0x030C) and PDI (0x030D) error
// counters. What the cycle reads periodically goes to
// Registry.SetSlaveErrorCounters.
func DecodeESCErrorCounters(b []byte) (ESCErrorCounters, error) {
	if len(b) < ESCErrorCounterBytes {
		return ESCErrorCounters{}, fmt.Errorf("metrics: ESC error counters: %d bytes, want %d (0x0300-0x0313)", len(b), ESCErrorCounterBytes)
	}
	var c ESCErrorCounters
	for p := range c.Ports {
		c.Ports[p] = PortErrorCounters{InvalidFrame: b[2*p], RXError: b[2*p+1], ForwardedRXError: b[0x08+p], LostLink: b[0x10+p]}
	}
	c.ProcessingUnit, c.PDI = b[0x0C], b[0x0D]
	return c, nil
}
