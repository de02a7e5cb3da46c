package sim

import (
	"encoding/binary"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// mailboxHeaderBytes is the length of the mailbox header that precedes a
// message's data (ETG.1000.4: length, address, channel/priority, type).
const mailboxHeaderBytes = 6

// UndefinedBytes marks, in undef (as long as the datagram's data), the
// bytes of a read whose value no model can know, and returns how many it
// marked. req is the datagram as the master sent it (command and
// address), real the data the real devices answered. Two kinds of bytes
// are undefined:
//
//   - past the message in a read of a whole send mailbox (APRD or FPRD
//     from the start of an enabled SyncManager in mailbox mode that the
//     master reads): the bytes after the mailbox header and the length
//     it states, in the real answer, are the buffer's stale contents;
//   - reserved registers (below 0x1000, not in the register map of the
//     addressed device's controller; for BRD, of every device's), which
//     the real chips fill with whatever their silicon returns.
//
// Every other byte is defined, the mailbox header included, so a wrong
// length is still a difference. The caller holds no lock.
func (s *Segment) UndefinedBytes(req *wire.Datagram, real []byte, undef []bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(undef)
	n := min(len(real), len(undef))
	var devs []*Device
	switch req.Command {
	case wire.APRD:
		if pos := int(-int16(req.ADP())); pos >= 0 && pos < len(s.devices) {
			devs = s.devices[pos : pos+1]
		}
	case wire.FPRD:
		for i, d := range s.devices {
			if d.isAddressed(req.ADP()) {
				devs = s.devices[i : i+1]
				break
			}
		}
	case wire.BRD:
		devs = s.devices
	}
	if len(devs) == 0 {
		return 0
	}
	ado := int(req.ADO())
	marked := 0
	if len(devs) == 1 && req.Command != wire.BRD {
		marked += devs[0].undefinedMailboxBytes(ado, real[:n], undef)
	}
	for i := range n {
		a := ado + i
		if a >= 0x1000 || undef[i] {
			continue
		}
		reserved := true
		for _, d := range devs {
			if !d.off && d.mem.acc[a]&accRead != 0 {
				reserved = false
				break
			}
		}
		if reserved {
			undef[i] = true
			marked++
		}
	}
	return marked
}

// undefinedMailboxBytes marks the bytes past the message of a read of the
// send mailbox from its first byte at ado (see UndefinedBytes).
func (d *Device) undefinedMailboxBytes(ado int, real []byte, undef []bool) int {
	if len(real) < mailboxHeaderBytes {
		return 0
	}
	for i := range d.nsm {
		s := &d.sms[i]
		if !s.on || !s.mailbox || s.ecatWrite || s.start != ado {
			continue
		}
		end := mailboxHeaderBytes + int(binary.LittleEndian.Uint16(real))
		marked := 0
		for k := end; k < min(len(real), s.end-s.start); k++ {
			undef[k] = true
			marked++
		}
		return marked
	}
	return 0
}
