// Package wire encodes and decodes EtherCAT frames (ETG.1000.4, EtherType
// 0x88A4): the Ethernet header, the two-byte EtherCAT header and the chain of
// datagrams (DLPDUs) that follows it, each with its command, address, data and
// working counter.
//
// Everything here works on caller-owned byte slices and allocates nothing:
// [Builder] writes datagrams into a buffer, [Frame] and [DatagramIter] decode
// in place, and a decoded [Datagram] aliases the frame it came from, so the
// simulated segment can update data and working counters where they lie.
package wire
