package sim

// application is what runs on a device's application controller beyond
// the generic parts (state machine, mailbox, input patterns): a drive's
// control loop and motor model, for instance. Its methods run with the
// segment's lock held and must not allocate.
type application interface {
	// processData runs once per frame that carries logical (process
	// data) datagrams, before the frame passes the device, at segment
	// time now (ns): the application takes the outputs the master wrote
	// earlier and writes its inputs for this frame to read.
	processData(now int64)
}
