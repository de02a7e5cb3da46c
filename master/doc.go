// Package master is an EtherCAT master: it talks to real devices through a
// link (an AF_PACKET raw socket) and, in tests, to the simulated segment.
//
// The work is split by concept:
//
//   - [Bus] (bus.go) sends frames and matches answers by datagram index,
//     with timeouts, retries and typed working-counter errors ([WKCError]);
//   - [Master.Scan] (scan.go, eeprom.go, topology.go) counts and addresses
//     the slaves and reads their ESC registers and SII EEPROM into [Slave];
//   - [Master.RequestState] (state.go, configure.go) drives the EtherCAT
//     state machine, configuring mailbox and process-data SyncManagers and
//     FMMUs on the way ([ALStateError] names a refusal and its AL status code);
//   - mapping.go lays out the bit-level logical process image, [ProcessImage]
//     (image.go) holds it, and [Cyclic] (cyclic.go) exchanges it with LRW
//     frames built once, allocating nothing per cycle;
//   - [Master.BringUp] (bringup.go) chains it all from power-on to OP.
//
// A typical program:
//
//	l, _ := link.Open("eth1", nil)
//	m, _ := master.New(l, &master.Config{ExpectedSlaves: 7})
//	defer m.Close()
//	if err := m.BringUp(ctx); err != nil { … }
//	for each cycle {
//		m.Image().SetOutputBit(m.Slaves()[1], 0, true)
//		r := m.Exchange()   // r.WKC, r.ExpectedWKC, r.Lost, r.Err
//	}
package master
