// Package capexec starts a program holding no capability but those it
// is given: the agent starts the cycle process (and the simulated
// segment) with it, so that a capability the agent holds for itself —
// CAP_SYS_ADMIN for the forensics' tracefs — never reaches the process
// that drives the plant's bus.
//
// Linux keeps capabilities per thread, and a child starts with the
// credentials of the thread that forked it. [Start] forks from a thread
// of its own whose sets it first narrows to what the child may keep,
// then lets that thread end with its goroutine (runtime.LockOSThread,
// never unlocked): the agent's other threads keep what they hold.
package capexec
