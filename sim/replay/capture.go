// Package replay plays a capture of a real master talking to real devices
// against a simulated segment, in-process, on a virtual clock driven by the
// capture's own timestamps, and scores how many datagrams the simulator
// answers as the real devices did. The score does not depend on the host:
// the same capture and devices give the same result on every run.
//
// Requests and answers are paired by their datagrams (command, index and
// length, in frame order), not by their neighbourhood in the capture: a
// master such as TwinCAT keeps several frames in flight, and their answers
// come back after later requests.
package replay

import (
	"encoding/binary"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// Exchange is one frame a master sent and the frame the real devices
// returned for it.
type Exchange struct {
	Sent     int64  // capture time of the request, ns since Capture.Start
	Returned int64  // capture time of the answer, ns since Capture.Start
	Request  []byte // the request as the master sent it (aliases the capture)
	Answer   []byte // the answer the devices gave (aliases the capture)
}

// Capture is the exchanges of a capture, in the order the master sent the
// requests.
type Capture struct {
	Start     int64 // capture time of the first EtherCAT frame, ns since the epoch
	Exchanges []Exchange
	// Lost counts requests the capture holds no answer for (a frame lost
	// on the wire, or the capture ended first); they are not replayed.
	Lost int
	// Strays counts answers that match no request in flight (the capture
	// began after the master sent it).
	Strays int
}

// Frame is one captured frame: its capture time, in ns on any time base
// (a pcapng reader gives ns since the epoch), and its bytes from the
// Ethernet header on.
type Frame struct {
	Time int64
	Data []byte
}

// isAnswer tells a frame that went through devices: they set bit 1 of the
// first source MAC byte (locally administered) on the way.
func isAnswer(frame []byte) bool { return frame[6]&0x02 != 0 }

// frameKey is what a device leaves unchanged in a frame: each datagram's
// command, index and length, in order (devices change addresses, data and
// working counters).
type frameKey string

func keyOf(frame []byte) (frameKey, bool) {
	var f wire.Frame
	if f.Decode(frame) != nil || f.Header.Length == 0 {
		return "", false
	}
	var b []byte
	var d wire.Datagram
	it := f.Datagrams()
	for it.Next(&d) {
		b = append(b, byte(d.Command), d.Index)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(d.Data)))
	}
	if it.Err() != nil || len(b) == 0 {
		return "", false
	}
	return frameKey(b), true
}

// FromFrames pairs the EtherCAT frames of a capture: each answer belongs
// to the latest request in flight with the same datagrams (command, index,
// length). Earlier requests with the same datagrams still in flight are
// counted lost: a master resends a frame it got no answer for, and never
// has two frames in flight it could not tell apart.
func FromFrames(frames []Frame) *Capture {
	c := &Capture{}
	type pending struct {
		key  frameKey
		at   int64
		data []byte
		ex   int // index in c.Exchanges
	}
	var inFlight []pending
	first := true
	for _, p := range frames {
		if len(p.Data) < 16 {
			continue
		}
		key, ok := keyOf(p.Data) // EtherCAT, also behind VLAN tags
		if !ok {
			continue
		}
		if first {
			c.Start, first = p.Time, false
		}
		at := p.Time - c.Start
		if !isAnswer(p.Data) {
			inFlight = append(inFlight, pending{key: key, at: at, data: p.Data, ex: -1})
			continue
		}
		match := -1
		for i := len(inFlight) - 1; i >= 0; i-- {
			if inFlight[i].key == key {
				match = i
				break
			}
		}
		if match < 0 {
			c.Strays++
			continue
		}
		rq := inFlight[match]
		c.Exchanges = append(c.Exchanges, Exchange{Sent: rq.at, Returned: at, Request: rq.data, Answer: p.Data})
		kept := inFlight[:0]
		for i, q := range inFlight {
			switch {
			case i == match:
			case i < match && q.key == key:
				c.Lost++
			default:
				kept = append(kept, q)
			}
		}
		inFlight = kept
	}
	c.Lost += len(inFlight)
	sortBySent(c.Exchanges)
	return c
}

// sortBySent orders exchanges by request time, keeping capture order among
// equal times (insertion sort: they are nearly sorted already).
func sortBySent(ex []Exchange) {
	for i := 1; i < len(ex); i++ {
		for j := i; j > 0 && ex[j].Sent < ex[j-1].Sent; j-- {
			ex[j], ex[j-1] = ex[j-1], ex[j]
		}
	}
}

// Setup is where a capture that begins in the middle of a session found
// the devices: station addresses from FirstStation on, in ring order, and
// the state a master had requested.
type Setup struct {
	FirstStation uint16
	State        esc.ALState
}

// MidSession tells whether the capture begins after a master configured
// the devices: it addresses them by configured station address before it
// assigns any (a write to 0x0010). The setup then has the lowest station
// address the capture uses, and the state in the first AL status a device
// answered (PREOP when that is not INIT or PREOP, the highest state a
// segment can be preset to).
func (c *Capture) MidSession() (Setup, bool) {
	var s Setup
	assigned := false
	for _, ex := range c.Exchanges {
		for _, d := range datagrams(ex.Answer) {
			switch d.Command.Addressing() {
			case wire.AddressingPosition, wire.AddressingBroadcast:
				if d.Command.Writes() && d.ADO() <= uint16(esc.RegStationAddress) &&
					int(d.ADO())+len(d.Data) > int(esc.RegStationAddress) {
					assigned = true
				}
			case wire.AddressingConfigured:
				if assigned || d.WKC == 0 {
					continue
				}
				if s.FirstStation == 0 || d.ADP() < s.FirstStation {
					s.FirstStation = d.ADP()
				}
				if s.State == 0 && d.Command.Reads() && d.ADO() == uint16(esc.RegALStatus) && len(d.Data) >= 1 {
					s.State = esc.ALState(d.Data[0] & 0x0F)
				}
			}
		}
	}
	if s.FirstStation == 0 {
		return Setup{}, false
	}
	if s.State != esc.StateInit {
		s.State = esc.StatePreOp
	}
	return s, true
}

// datagrams decodes a frame's datagrams; their data alias the frame.
func datagrams(frame []byte) []wire.Datagram {
	var f wire.Frame
	if f.Decode(frame) != nil {
		return nil
	}
	var out []wire.Datagram
	var d wire.Datagram
	it := f.Datagrams()
	for it.Next(&d) {
		out = append(out, d)
	}
	return out
}
