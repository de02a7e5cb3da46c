// Package sim simulates an EtherCAT segment: a line of Beckhoff devices that
// answer real EtherCAT frames the way the real devices do, so that any
// master (ecagent's, SOEM, IgH, ethercrab, TwinCAT) can be pointed at it for
// demos and for testing plant configurations without hardware.
//
// Each [Device] emulates an EtherCAT slave controller (ESC): its register
// file with the access rights of the real controller family (a read or write
// of a register the controller does not have leaves the datagram alone and
// does not count in the working counter; a write to a read-only register
// does not count either), the process RAM, SyncManagers (3-buffer process
// data committed when one datagram has written a buffer from its first
// byte to its last, mailboxes that accept a write only when empty and a
// read only when full), FMMUs with bit granularity,
// the SII EEPROM interface (0x0500–0x050F) over an image built with package
// sii, DL status from the line topology and the loop settings of DL
// control, and distributed clocks (receive time latching, live system time,
// offset, delay, difference). Devices with an application controller add
// the state machine's rules and refusal codes, and a mailbox that answers
// CoE SDO requests from an object dictionary derived from the SII.
//
// A device has as many process-data SyncManagers per direction as its SII
// describes (the EL2889 has two output SyncManagers of 8 bits, the EL2262
// two of 53), each sized by the PDOs assigned to it: the object
// dictionary's 0x1C12/0x1C13 (0x1C10+n) for a device with CoE, the SII's
// RxPDO/TxPDO categories otherwise. Before SAFEOP an application
// controller checks every one of them. [Device.Outputs], [Device.Inputs]
// and [Device.SetInputs] see a direction's process data as the bits of its
// SyncManagers one after the other in SyncManager order, without padding
// between them: bit i is the i-th bit a master maps for the device.
//
// A [Segment] carries frames through its devices in order ([Segment.Process],
// allocation free) and serves a [link.Link] ([Segment.Serve]); [Run] is
// the entry point of `ecagent sim`.
//
// The behaviour comes from the real captures in
// testdata/real-hw/captures: the ESC information blocks, DL status
// values, SII control values and busy times, the device emulation of
// simple terminals (AL status mirrors AL control), the working counters of
// broadcast clears over missing FMMUs, SyncManagers and DC units, and the
// mailbox timing of an EL3004. The replay test feeds each capture's
// requests through a segment of the same devices and compares every answer.
package sim
