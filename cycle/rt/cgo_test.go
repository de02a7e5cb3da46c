package rt

// The test binary links the C library where cgo is on (net's resolver
// brings it in), so that TestLockMemoryOnFault checks the cycle program
// as it is built with cgo: threads with C stacks.
import _ "net"
