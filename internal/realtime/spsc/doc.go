// Package spsc holds the two wait-free pieces the real-time cycle shares
// with other threads: Ring, a bounded single-producer single-consumer
// queue of values, and Signal, a wake-up that the notifying side sends
// without ever blocking or taking a lock.
//
// They exist because the cycle thread must never wait on anything other
// code holds. A Go channel is guarded by a runtime lock that the other
// side holds while it sends or receives; should that side be preempted
// there, a cycle thread that touches the channel waits for it — on a
// real-time core, behind a thread of lower priority. Ring and Signal
// touch only atomics on the cycle's side (and, for Signal, one
// timerfd_settime per parked waiter, or a futex wake, when somebody
// waits).
package spsc
