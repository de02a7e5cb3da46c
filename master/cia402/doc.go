// Package cia402 drives a CiA 402 servo drive (IEC 61800-7-201, the
// "drive profile" of CANopen over EtherCAT) from the master's cycle.
//
// It has three layers, each usable on its own:
//
//   - the words: the statusword (0x6041), the state it encodes and the
//     controlword (0x6040) commands come from package
//     [github.com/ecagent/ecagent/ethercat/cia402/state], the one
//     definition the simulator and the metrics share; this package adds
//     the object indexes and [Mode] (0x6060, 0x6061);
//   - the [Walker], a pure function of the statusword that chooses the
//     controlword which walks the drive's state machine to "operation
//     enabled" (shutdown 0x06, switch on 0x07, enable operation 0x0F) and
//     resets faults with a rising edge of bit 7;
//   - the [Drive], bound to one slave's mapped PDO entries in the process
//     image, which once per cycle reads the statusword and actual values,
//     runs the walker, and writes the controlword, the mode and a target
//     computed by a [Profile] (constant, ramp or sine over the time since
//     the drive became operational).
//
// The drive logic knows nothing of frames: a [Process] reads and writes
// one slave's process data, and [Entries] says where each object is
// mapped, so tests drive it with a fake. [BindSlave] binds to a slave of
// the master's process image once it is mapped ([SlaveImage] and
// [SlaveEntries] are the adapters it uses).
//
// Typical use in the cycle engine, one Drive per configured drive:
//
//	d, err := cia402.BindSlave(m.Image(), slave, cia402.Config{
//		Mode: cia402.ModeCSV, Profile: cia402.Sine(0, 1<<20, 2*time.Second),
//	})
//	...
//	// every cycle, before the exchange:
//	if ev, ok := d.Cycle(now); ok {
//		// report ev
//	}
package cia402
