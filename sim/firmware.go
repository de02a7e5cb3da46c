package sim

import (
	"math"
	"math/rand/v2"
)

// span is a time a device takes, in ns of segment time, as a distribution:
// the real device took between lo and hi, most often about typ. A segment
// without a seed (WithSeed) takes typ every time, so that tests can count
// on it; a seeded one draws each time from the triangular distribution
// (lo, typ, hi), reproducibly for one seed.
type span struct{ lo, typ, hi int64 }

// draw returns one time from s: typ without a generator, else a draw.
func (s span) draw(r *rand.Rand) int64 {
	if r == nil || s.lo >= s.hi {
		return s.typ
	}
	// Triangular distribution by inversion of its distribution function.
	lo, typ, hi := float64(s.lo), float64(s.typ), float64(s.hi)
	u := r.Float64()
	var v float64
	if c := (typ - lo) / (hi - lo); u < c {
		v = lo + math.Sqrt(u*(hi-lo)*(typ-lo))
	} else {
		v = hi - math.Sqrt((1-u)*(hi-lo)*(hi-typ))
	}
	return int64(v)
}

// afterRead is what the application controller leaves in the send
// mailbox's SyncManager status (0x0805 + 8·n) once the master has read a
// message.
type afterRead uint8

const (
	// keepReadEvent leaves the ESC's read event (bit 1, 0x02): most
	// devices (issue 16).
	keepReadEvent afterRead = iota
	// reopenMailbox opens the buffer for the next message at once: 0x80
	// (write buffer in use, ET1100 datasheet section II, 0x0805 bit 7),
	// the EL3004 in the ethercrab capture.
	reopenMailbox
	// clearReadEvent acknowledges the read, clearing bit 1: 0x00, the
	// real EK1914 (issue 37).
	clearReadEvent
)

// firmware is how fast a device's application controller (the
// microcontroller behind the ESC) reacts. Devices in device emulation (no
// controller) have none. Each time is what the named real devices showed
// (issue 37 lists the spreads measured on captures of other days and
// firmware; testdata/real-hw holds a few), measured between the frames as
// the master sent them; a master polling at any rate sees the same device.
type firmware struct {
	// esm is from an AL control write to AL status showing the outcome.
	// The controller reads AL control when it decides: until then a
	// further write is not taken (the AL control handshake, access.go).
	esm span
	// mailbox is from the master's request filling the receive mailbox
	// to the answer filling the send mailbox.
	mailbox span
	// afterRead is the send mailbox's status after the master read it.
	afterRead afterRead
}

// Firmware timings of the modelled devices.
var (
	// fwBeckhoffTerminal is a Beckhoff terminal with a controller, as the
	// EL3004: still INIT 0.29 ms after the PREOP request in
	// ethercrab-ek1914-el3004-mailbox, PREOP within 0.30 ms on the real
	// units of issue 37; SDO answers 0.44–0.85 ms after the request
	// (issue 37; not there 0.59 ms after, there 0.83 ms after in the
	// shipped capture).
	fwBeckhoffTerminal = firmware{esm: span{291_000, 296_000, 300_000}, mailbox: span{440_000, 700_000, 850_000},
		afterRead: keepReadEvent}
	// fwEL3004 is the EL3004's: the terminal timings, and the send mailbox
	// status 0x80 after the master's read.
	fwEL3004 = firmware{esm: fwBeckhoffTerminal.esm, mailbox: fwBeckhoffTerminal.mailbox, afterRead: reopenMailbox}
	// fwEK1914 is the EK1914's: still INIT 1.47 ms after the PREOP
	// request (the shipped capture), PREOP within 1.48 ms (issue 37);
	// mailbox answers 0.55–6.9 ms after the request, most near 0.7 ms
	// (issue 37; the shipped capture's all were); the read event cleared
	// after the master's read.
	fwEK1914 = firmware{esm: span{1_471_000, 1_475_000, 1_480_000}, mailbox: span{550_000, 700_000, 6_900_000},
		afterRead: clearReadEvent}
	// fwAKD is the AKD's: it stays in INIT up to 6.2 ms after a PREOP
	// request, and answers mailbox requests 1.41–2.94 ms after them
	// (issue 37). The lower end and the typical value of the state
	// change are ours: the captures give only the longest.
	fwAKD = firmware{esm: span{1_000_000, 3_000_000, 6_200_000}, mailbox: span{1_410_000, 2_000_000, 2_940_000}}
	// fwGeneric is a controller the captures do not show: the Beckhoff
	// terminal's timings, and the ESC's own SyncManager status after a
	// read.
	fwGeneric = fwBeckhoffTerminal
)
