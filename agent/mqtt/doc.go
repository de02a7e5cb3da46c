// Package mqtt publishes the process data, the cycle statistics and the bus
// events of the agent to an MQTT broker, and takes output writes from it.
//
// It runs in the agent process only, never in the cycle process: it reads
// the process image through the seqlocked snapshot in shared memory
// ([ImageSource]) and hands validated writes to the command ring
// ([CommandSink]), which the cycle applies at a cycle boundary. Nothing it
// does can make the cycle wait.
//
// # Schemes
//
// The JSON scheme (default) publishes under <root> = <prefix>/<site>/<host>:
//
//	<root>/status            "online" / "offline" (retained; "offline" is the last will)
//	<root>/state             the bus: ready, why not, summary (retained)
//	<root>/meta/<slave>      the slave's signals and state (presence, AL state, quality) (retained;
//	                         cleared when the slave is gone from the bus)
//	<root>/pd/<slave>        {"ts":…,"seq":…,"cycle":…,"quality":"good","values":{…},"units":{…}}
//	<root>/stats             the statistics of each metrics window
//	<root>/events            bus state changes, AL status codes, CoE emergencies, drive states and faults, write results
//	<root>/set/<slave>/<signal>   writes (subscribed; refused unless enabled);
//	                              the signal drive-fault-reset resets a drive's fault
//
// An event names its kind; one about a slave carries "slave" (the ring
// position) and "slave_name". A CoE emergency ("emergency") carries
// "error_code" and "error_register" (numbers), "data" (the five
// manufacturer bytes in hexadecimal) and "meaning" (the exact meaning of
// a CiA 301/402 or ETG code, else its class: "monitoring", "device
// specific", …); a CiA 402 drive's "drive-state" carries "state" (its name)
// and "state_number" (1 not ready to switch on … 8 fault, 0 unknown, as
// ecagent_drive_state), "drive-fault" its "error_code" (0x603F) and
// "meaning", "drive-fault-cleared" the slave only.
//
// Every pd, stats and events payload carries "seq", counting the messages
// of its topic from 1: a gap is a message dropped from the full outbox.
//
// Every output renders the bus's state from one busstate.Model
// (SetBusModel): a slave's data that is not good is published when its
// quality changes only, marked "stale" (with "stale_since") or "invalid",
// with the last good values.
//
// A scheme is a [Renderer] (render.go): it turns values — a [BusView], a
// [DeviceView], a window's cyclestats.Report, an [Event], a [Refusal] —
// into [Message]s, and a command message into [Action]s, and publishes
// nothing itself. [NewJSONRenderer] and [NewSparkplugRenderer] are the two
// shipped; Config.Renderer takes any other, written outside this package.
// The [Publisher] is the same for every scheme, made of parts with one
// lock and one job each, taken in this order: the sampler (sampler.go:
// the bus being published, snapshots, changes of its state), the writes
// (writes.go: validation, the command ring, the writes awaiting the
// cycle's answer), the refusals (refusals.go), the sequencer
// (sequence.go: the numbering of windows and events) and the outbox; the
// session (session.go: the broker connection) holds none of them while it
// talks to the broker.
//
// The Sparkplug B scheme publishes NBIRTH/NDATA/NDEATH for the agent (the
// edge node; NDATA carries the window statistics, the bus's state, the
// refused commands and each cycle spike) and DBIRTH/DDATA/DDEATH
// for each slave (a device), with metric aliases after the births, seq
// 0–255 per connection and bdSeq in NBIRTH and in the NDEATH will; it
// answers "Node Control/Rebirth" and takes writes as DCMD. A device is
// born while its slave answers: DDEATH when it is lost or refused, a fresh
// DBIRTH before its first DDATA when it is back. Events are
// published on the JSON events topic in both schemes; Sparkplug shows a
// cycle spike also as its Spikes/… node metrics (spike.go).
//
// # Delivery
//
// Messages wait in a bounded outbox while the broker is unreachable and go
// out in order when it is back; what exceeds the bound is dropped oldest
// first and counted. Messages sent but not acknowledged when a connection
// breaks are sent again (at least once, as QoS 1 promises). Sparkplug
// messages produced while disconnected carry is_historical, and so does
// data made before the births of the connection that sends it. With a buffer
// file the outbox has a write-ahead log (wal.go; the file format is
// package walfile): what is buffered while the broker is unreachable
// survives a kill -9, and a power cut but for the last 100 ms, and is
// replayed in order at the next start. The
// publisher reconnects with exponential back-off, jittered and capped at
// MaxReconnect, and waits on no token without a timeout; a session another
// client keeps taking over (the broker closing each connection soon after
// it is made) is given up for a growing back-off, with an event and a
// metric (takeover.go). Writes are parsed whole (package cmdparse);
// refused ones are answered one by one up to a burst per second, the rest
// by one summary (refusals.go). A command runs once, when it is sent, or
// not at all: one delivered with the retain flag (a broker's stored copy)
// or stamped more than MaxCommandAge from the agent's clock is refused
// (stale.go), and so is a second copy of a stamped command or a DUP
// redelivery that may have run (duplicate.go).
package mqtt
