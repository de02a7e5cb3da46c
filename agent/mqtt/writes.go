package mqtt

import (
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/cmdparse"
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

// stamp is when a command says it was sent, in milliseconds since the
// Unix epoch; the zero stamp says nothing.
type stamp struct {
	ms int64
	ok bool
}

// write validates one write (value as decoded from the payload) and hands
// it to the cycle; a refusal is answered on …/events. A write whose stamp
// is further than MaxCommandAge from the agent's clock is refused as
// stale.
func (p *Publisher) write(slave, signal, topic string, sent stamp, value func(*Signal) (float64, uint64, error)) {
	now := time.Now()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if !p.cfg.WritesEnabled {
		p.rejectLocked(now, reject(RejectDisabled, "writes from MQTT are disabled (mqtt.writes.enabled is false)"), slave, signal, topic)
		return
	}
	model := p.current.Load()
	if model == nil {
		p.rejectLocked(now, reject(RejectCycleDown, "the cycle process is not running"), slave, signal, topic)
		return
	}
	d := model.Device(slave)
	if d == nil {
		p.rejectLocked(now, reject(RejectUnknown, "no slave %q", slave), slave, signal, topic)
		return
	}
	if sent.ok {
		if re := staleCommand(sent.ms, now); re != nil {
			p.rejectLocked(now, re, slave, signal, topic)
			return
		}
	}
	if signal == DriveFaultReset {
		p.resetDriveLocked(now, d, slave, topic)
		return
	}
	s := d.Signal(signal)
	if s == nil {
		p.rejectLocked(now, reject(RejectUnknown, "slave %s has no signal %q", slave, signal), slave, signal, topic)
		return
	}
	if !s.Output {
		p.rejectLocked(now, reject(RejectNotWritable, "%s/%s is an input", slave, signal), slave, signal, topic)
		return
	}
	if !s.Writable {
		p.rejectLocked(now, reject(RejectNotWritable, "%s/%s is not in mqtt.writes.allow", slave, signal), slave, signal, topic)
		return
	}
	v, raw, err := value(s)
	if err != nil {
		p.rejectLocked(now, asReject(err), slave, signal, topic)
		return
	}
	if p.commands == nil {
		p.rejectLocked(now, reject(RejectCycleDown, "the cycle process is not running"), slave, signal, topic)
		return
	}
	p.cmdSeq++
	cmd := shm.Command{Seq: p.cmdSeq, Value: raw, BitOffset: uint32(s.BitOffset), Kind: shm.CommandSetOutputs,
		Slave: uint16(d.Slave.Position), BitLen: uint16(s.Bits)}
	if !p.commands.Push(&cmd) {
		p.rejectLocked(now, reject(RejectQueueFull, "the command ring is full"), slave, signal, topic)
		return
	}
	p.accepted.Add(1)
	p.rememberLocked(pendingWrite{slave: slave, signal: signal, value: v, topic: topic})
}

// rememberLocked keeps the write just handed to the cycle (p.cmdSeq) until
// the cycle answers it, forgetting the oldest beyond maxPending.
func (p *Publisher) rememberLocked(w pendingWrite) {
	if len(p.pending) >= maxPending {
		oldest := p.cmdSeq
		for seq := range p.pending {
			oldest = min(oldest, seq)
		}
		delete(p.pending, oldest)
	}
	p.pending[p.cmdSeq] = w
}

// resetDriveLocked hands a drive fault reset to the cycle, whose drive
// helper for the slave answers it (a slave without one refuses).
func (p *Publisher) resetDriveLocked(now time.Time, d *Device, slave, topic string) {
	if !d.FaultReset {
		p.rejectLocked(now, reject(RejectNotWritable, "%s/%s is not in mqtt.writes.allow", slave, DriveFaultReset), slave, DriveFaultReset, topic)
		return
	}
	if p.commands == nil {
		p.rejectLocked(now, reject(RejectCycleDown, "the cycle process is not running"), slave, DriveFaultReset, topic)
		return
	}
	p.cmdSeq++
	cmd := shm.Command{Seq: p.cmdSeq, Kind: shm.CommandResetDriveFault, Slave: uint16(d.Slave.Position)}
	if !p.commands.Push(&cmd) {
		p.rejectLocked(now, reject(RejectQueueFull, "the command ring is full"), slave, DriveFaultReset, topic)
		return
	}
	p.accepted.Add(1)
	p.rememberLocked(pendingWrite{slave: slave, signal: DriveFaultReset, value: 1, topic: topic})
}

// handleJSONWrite takes a message on <root>/set/<slave>/<signal>.
func (p *Publisher) handleJSONWrite(topic string, payload []byte) {
	slave, signal, ok := commandTarget(topic[len(p.cfg.Root)+len("/set/"):])
	if !ok {
		p.wmu.Lock()
		p.rejectLocked(time.Now(), reject(RejectUnknown, "want %s/set/<slave>/<signal>", p.cfg.Root), "", "", topic)
		p.wmu.Unlock()
		return
	}
	v, err := cmdparse.Parse(payload)
	var sent stamp
	if err == nil && v.HasTS {
		sent = stamp{ms: v.TS, ok: true}
	}
	p.write(slave, signal, topic, sent, func(s *Signal) (float64, uint64, error) {
		if err != nil {
			return 0, 0, reject(RejectMalformed, "%s", err.Error())
		}
		return checkValue(jsonValue(v), s)
	})
}

// maxDCMDMetrics bounds the writes one DCMD may carry: each is answered
// with an event, so an unbounded message could flood the outbox.
const maxDCMDMetrics = 64
