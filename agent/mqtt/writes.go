package mqtt

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// Writes from MQTT: validating them, handing them to the cycle as
// commands, remembering them until the cycle answers, and refusing them.

// maxPending bounds the writes remembered until the cycle answers them.
const maxPending = 1024

// pendingWrite is a write handed to the cycle, until its answer comes.
type pendingWrite struct {
	slave, signal string
	value         float64
	topic         string
}

// writes validates the writes from MQTT and hands them to the cycle as
// commands (the shared-memory command ring), remembering each until the
// cycle answers it. Safe for concurrent use; its lock is taken after the
// sampler's and before the refusals'.
type writes struct {
	enabled  bool
	ref      *refusals
	seq      *sequencer
	bus      *atomic.Pointer[Model] // the bus published now (the sampler's)
	accepted atomic.Uint64

	wmu     sync.Mutex // guards what follows
	sink    CommandSink
	pending map[uint64]pendingWrite
	cmdSeq  uint64
}

// setSink makes the writes go to sink (nil: refused, the cycle process
// being away).
func (w *writes) setSink(sink CommandSink) {
	w.wmu.Lock()
	w.sink = sink
	w.wmu.Unlock()
}

// write validates one write (value as decoded from the payload) and hands
// it to the cycle; a refusal is answered on …/events. A write whose time
// sent (zero: it says none) is further than MaxCommandAge from the
// agent's clock is refused as stale.
func (w *writes) write(slave, signal, topic string, sent time.Time, value func(*Signal) (float64, uint64, error)) {
	now := time.Now()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	refuse := func(re *RejectError) { w.ref.reject(now, re, slave, signal, topic) }
	if !w.enabled {
		refuse(reject(RejectDisabled, "writes from MQTT are disabled (mqtt.writes.enabled is false)"))
		return
	}
	model := w.bus.Load()
	if model == nil {
		refuse(reject(RejectCycleDown, "the cycle process is not running"))
		return
	}
	d := model.Device(slave)
	if d == nil {
		refuse(reject(RejectUnknown, "no slave %q", slave))
		return
	}
	if re := staleCommand(sent, now); re != nil {
		refuse(re)
		return
	}
	if signal == DriveFaultReset {
		w.resetDriveLocked(now, d, slave, topic)
		return
	}
	s := d.Signal(signal)
	if s == nil {
		refuse(reject(RejectUnknown, "slave %s has no signal %q", slave, signal))
		return
	}
	if !s.Output {
		refuse(reject(RejectNotWritable, "%s/%s is an input", slave, signal))
		return
	}
	if !s.Writable {
		refuse(reject(RejectNotWritable, "%s/%s is not in mqtt.writes.allow", slave, signal))
		return
	}
	v, raw, err := value(s)
	if err != nil {
		refuse(asReject(err))
		return
	}
	cmd := shm.Command{Value: raw, BitOffset: uint32(s.BitOffset), Kind: shm.CommandSetOutputs,
		Slave: uint16(d.Slave.Position), BitLen: uint16(s.Bits)}
	if re := w.pushLocked(&cmd); re != nil {
		refuse(re)
		return
	}
	w.rememberLocked(pendingWrite{slave: slave, signal: signal, value: v, topic: topic})
}

// pushLocked hands cmd to the cycle with the next sequence number, or
// returns why it cannot.
func (w *writes) pushLocked(cmd *shm.Command) *RejectError {
	if w.sink == nil {
		return reject(RejectCycleDown, "the cycle process is not running")
	}
	w.cmdSeq++
	cmd.Seq = w.cmdSeq
	if !w.sink.Push(cmd) {
		return reject(RejectQueueFull, "the command ring is full")
	}
	w.accepted.Add(1)
	return nil
}

// rememberLocked keeps the write just handed to the cycle (w.cmdSeq) until
// the cycle answers it, forgetting the oldest beyond maxPending.
func (w *writes) rememberLocked(pw pendingWrite) {
	if len(w.pending) >= maxPending {
		oldest := w.cmdSeq
		for seq := range w.pending {
			oldest = min(oldest, seq)
		}
		delete(w.pending, oldest)
	}
	w.pending[w.cmdSeq] = pw
}

// resetDriveLocked hands a drive fault reset to the cycle, whose drive
// helper for the slave answers it (a slave without one refuses).
func (w *writes) resetDriveLocked(now time.Time, d *Device, slave, topic string) {
	if !d.FaultReset {
		w.ref.reject(now, reject(RejectNotWritable, "%s/%s is not in mqtt.writes.allow", slave, DriveFaultReset), slave, DriveFaultReset, topic)
		return
	}
	cmd := shm.Command{Kind: shm.CommandResetDriveFault, Slave: uint16(d.Slave.Position)}
	if re := w.pushLocked(&cmd); re != nil {
		w.ref.reject(now, re, slave, DriveFaultReset, topic)
		return
	}
	w.rememberLocked(pendingWrite{slave: slave, signal: DriveFaultReset, value: 1, topic: topic})
}

// answer matches the cycle's answer ev (of row e of the event catalogue)
// to the write it answers, if it was one of this publisher's: a
// command-done event, or the write's refusal.
func (w *writes) answer(ev *shm.Event, e contract.EventInfo, at time.Time) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	pw, ok := w.pending[ev.Value]
	if !ok {
		return // not one of ours
	}
	delete(w.pending, ev.Value)
	if ev.Kind == contract.EventCommandRejected {
		w.ref.reject(at, reject(RejectCycleRefused, "the cycle refused it: %s", ev.TextString()), pw.slave, pw.signal, pw.topic)
		return
	}
	w.seq.event(at, e.Name, func(o *jsonObject) {
		o.uint("cycle", ev.Cycle)
		o.string("slave", pw.slave)
		o.string("signal", pw.signal)
		o.float("value", pw.value)
		o.string("topic", pw.topic)
	})
}

// abandon refuses the writes still waiting for the cycle's answer, the
// cycle process stopping (reason), and stops taking writes.
func (w *writes) abandon(at time.Time, reason string) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.sink = nil
	for seq, pw := range w.pending {
		w.ref.reject(at, reject(RejectCycleDown, "the cycle process stopped before applying it: %s", reason), pw.slave, pw.signal, pw.topic)
		delete(w.pending, seq)
	}
}

// maxDCMDMetrics bounds the writes one DCMD may carry: each is answered
// with an event, so an unbounded message could flood the outbox.
const maxDCMDMetrics = 64
