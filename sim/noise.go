package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/sim/faultcmd"
)

// A noisy cable (Faults.Noisy) is modelled at the receive side of one port
// of one device, as the ESC counts it (ET1100 datasheet section II,
// registers 0x0300–0x0313):
//
//   - Noise events come at a fixed rate in segment time. Each event is one
//     RX error on the wire (0x0301+2·port, coupled to RX_ER of the
//     MII/E-bus interface). A frame that crosses the port while events
//     are pending carries a CRC error: the port's invalid frame counter
//     (0x0300+2·port) counts it once, whatever the number of events.
//   - The ESC forwards the damaged frame (it processes on the fly and cannot
//     hold it back) with its error marked: every later port that receives
//     it counts a forwarded RX error (0x0308+port) instead, so the first
//     port with invalid frames locates the bad cable.
//   - On its way out, a damaged frame is not processed from the device that
//     received it on: the ESC commits writes and SyncManager buffer changes
//     only for a frame with a correct FCS; the detecting device's ECAT
//     processing unit error counter (0x030C) counts it. On its way back
//     every device has already processed it.
//   - The master's NIC discards the frame (bad FCS): it is lost, counted
//     in Stats.Dropped and FaultCounts.CRCErrors.
//
// All counters stop at 0xFF.

// noisyPort is one armed noise source.
type noisyPort struct {
	pos, port int
	every     int64 // ns between noise events
	next      int64 // segment time of the next event
}

// Noisy makes the cable at port of the device at pos noisy: rate CRC
// errors a second, in segment time, from now on (rate 0 switches it off;
// at most faultcmd.MaxNoiseRate, one error a microsecond).
// Port 0 faces the master and sees the frames on their way out; port 1
// leads to the next device and sees them on their way back. The noise
// stays through power cycles of the devices: it is the cable's.
func (f *Faults) Noisy(pos, port int, rate float64) error {
	s := f.seg
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.deviceAt(pos, "noisy")
	if err != nil {
		return err
	}
	if port != 0 && port != d.downPort {
		return fmt.Errorf("sim: noisy %d port %d: a line uses ports 0 and %d only", pos, port, d.downPort)
	}
	if math.IsNaN(rate) || rate < 0 || rate > faultcmd.MaxNoiseRate {
		return fmt.Errorf("sim: noisy %d port %d: rate %g: want 0 to %g a second", pos, port, rate, float64(faultcmd.MaxNoiseRate))
	}
	f.noise = slices.DeleteFunc(f.noise, func(n noisyPort) bool { return n.pos == pos && n.port == port })
	if rate == 0 {
		return nil
	}
	every := max(int64(1e9/rate), 1)
	f.noise = append(f.noise, noisyPort{pos: pos, port: port, every: every, next: s.now() + every})
	return nil
}

// events returns how many noise events of n fell by time t, and consumes
// them.
func (n *noisyPort) events(t int64) int64 {
	if t < n.next {
		return 0
	}
	k := (t-n.next)/n.every + 1
	n.next += k * n.every
	return k
}

// frameNoise carries the frame's receptions through the noise sources:
// outbound, port 0 of devices 0 to visited-1 at their arrival times; it
// returns the first device that received the frame damaged (visited when
// none did). The caller holds the segment's lock and has set each
// visited device's ctx.
func (f *Faults) noiseOut(visited int) int {
	cut := visited
	for k := range visited {
		d := f.seg.devices[k]
		if f.receive(k, 0, d.ctx.arrival, cut < visited) && cut == visited {
			cut = k
			bumpCounter(d.mem.b[:], int(esc.RegProcessingError), 1)
		}
	}
	return cut
}

// noiseBack carries the frame back through the downstream ports of
// devices visited-2 to 0; damaged says it was already damaged on its way
// out. It reports whether the frame reaches the master damaged.
func (f *Faults) noiseBack(visited int, damaged bool) bool {
	for k := visited - 2; k >= 0; k-- {
		d := f.seg.devices[k]
		if f.receive(k, d.downPort, d.ctx.back, damaged) {
			damaged = true
		}
	}
	return damaged
}

// receive counts one reception of the frame on port of the device at pos
// at time t. It reports whether the frame is damaged after it: marked
// says it arrived with its error marked by an earlier port.
func (f *Faults) receive(pos, port int, t int64, marked bool) bool {
	regs := f.seg.devices[pos].mem.b[:]
	if marked {
		bumpCounter(regs, int(esc.RegFwdRxErrorCounter)+port, 1)
	}
	hit := false
	for i := range f.noise {
		n := &f.noise[i]
		if n.pos != pos || n.port != port {
			continue
		}
		if k := n.events(t); k > 0 {
			bumpCounter(regs, int(esc.RegRxErrorCounter)+2*port+1, k)
			hit = true
		}
	}
	if hit && !marked {
		bumpCounter(regs, int(esc.RegRxErrorCounter)+2*port, 1)
	}
	return marked || hit
}

// bumpCounter adds k to the error counter byte at a, stopping at 0xFF.
func bumpCounter(regs []byte, a int, k int64) {
	regs[a] = byte(min(int64(regs[a])+k, 0xFF))
}
