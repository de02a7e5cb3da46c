// Package shm is the shared memory between the cycle process and the
// agent process: one mapped segment holding a versioned header, three
// single-producer single-consumer rings of fixed-size records, a
// process-image snapshot and the cycle's heartbeat.
//
// The cycle process (allocation-free, SCHED_FIFO, pinned) and the agent
// process (ordinary Go with a garbage collector: HTTP, Prometheus, MQTT)
// exchange data through this segment only. The cycle never waits on the
// agent: its side of every structure is wait-free and allocation-free.
//
// # Segment layout
//
// All offsets derive from a Layout by one function. Regions are aligned
// to 128 bytes and follow each other in this order:
//
//	0     header (512 bytes)
//	        0  magic "ECAGSHM\x00"          8  layout version (uint32)
//	       12  header size (uint32)        16  total size (uint64)
//	       24  cycle period ns (int64)     32  creator PID (uint32)
//	       40  creation nonce (uint64)     48  kernel boot id ([16]byte)
//	       64  creation time, Unix ns      72  samples  {offset u64, capacity u32, record size u32}
//	       88  events {…}                 104  commands {…}
//	      120  image {offset u64, capacity u32}
//	      256  heartbeat: seq, cycle, CLOCK_MONOTONIC ns, cycle PID, cyclic
//	           frames sent, lost and late, link frames received and dropped
//	           by the kernel (uint64 each)
//	512   sample ring:  producer line (position, drops) · consumer line (position) · records
//	      event ring:   the same, EventSize records
//	      command ring: the same, CommandSize records
//	      image:        control line (seq, cycle, length) · data in 8-byte words
//	      total size rounded up to 4096
//
// Attach reads the header before mapping anything and refuses, with an
// error matching ErrIncompatible, a foreign file (*ForeignError), a
// segment of another layout version (*VersionError), a file of the wrong
// size (*SizeError), a header whose offsets disagree with the ones this
// build computes (*LayoutError) and a segment from before the last boot
// (*StaleError). LayoutVersion is bumped on every change to the layout;
// TestGoldenLayout pins it so that a change without a bump fails.
//
// # Why the atomics in mapped memory are sound
//
// Positions, sequences and heartbeat are sync/atomic values placed at
// 8-byte-aligned offsets of the mapping (every region starts at a
// multiple of 128 from a page-aligned base). The memory is not Go heap:
// the garbage collector neither scans nor moves it, and the records hold
// no pointers, so Go pointers into it stay valid until Close unmaps it.
// Atomic instructions act on physical memory through the coherent cache,
// so they synchronise two processes that map the same page exactly as
// they synchronise two threads; both processes run the same binary, so
// byte order and word size agree. A ring record is written with plain
// stores before the atomic store of the producer position and read with
// plain loads after the atomic load that observes it; the consumer
// releases a slot with an atomic store after its loads. The image's data
// is copied word by word with atomic loads and stores, so even a read that
// races a write is defined, and the sequence check discards it.
//
// # Rings
//
// Ring is one generic implementation for the three record types: Sample
// (cycle → agent, one per cycle), Event (cycle → agent) and Command
// (agent → cycle). Capacities are powers of two; positions count records
// since creation and are masked into slots. A full ring drops the new
// record and counts it (Ring.Drops): a slow or absent consumer never
// delays the producer. The consumer copies records out (Next, Drain) and
// releases them with Commit after processing.
//
// # Restart semantics
//
// Both positions of every ring live in the segment, not in either
// process, so each side resumes where the other left off.
//
//   - The agent restarts: the cycle keeps running and pushing. While no
//     agent reads, the sample and event rings fill; from then on new
//     records are dropped and counted, so the ring holds the oldest
//     unread records (those from just after the agent stopped). The new
//     agent attaches to the same path and resumes at the last Commit:
//     records the old agent read but did not commit are delivered again,
//     none are lost silently. An agent that wants only fresh data calls
//     Discard once after attaching. Commands the old agent pushed were
//     consumed by the cycle within a cycle or so; there is no backlog to
//     worry about.
//   - The cycle process dies: the agent notices (its child exits, or
//     Heartbeat stops advancing), removes the segment and starts a new
//     cycle process on a new one. Everything starts again from 0 there:
//     ring positions, sample cycle numbers, the heartbeat's frame and
//     link totals;
//     the agent carries its counters over (cyclestats.Deriver.Restart).
//     Commands queued for the old bus state die with the old segment. A
//     writer that died in the middle of an image or heartbeat update
//     leaves its sequence odd; the readers of that segment give up on it.
//   - The agent is upgraded to a build with another LayoutVersion: it
//     cannot attach (VersionError, naming both versions). It must stop
//     the old cycle process (Heartbeat.CyclePID), remove the segment and
//     create a new one.
//   - The host reboots: a segment file in /dev/shm is gone; one left on a
//     persistent file system is refused as stale (StaleError).
//
// Info.Nonce, drawn at creation, lets a process that attaches again tell
// the segment it knew from a new one created at the same path.
package shm
