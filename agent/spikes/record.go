package spikes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ecagent/ecagent/agent/spikes/tracefs"
)

// kind is what a trace record reports.
type kind uint8

const (
	kindNone kind = iota
	kindSwitch
	kindWakeup
	kindMigrate
	kindIRQEntry
	kindIRQExit
	kindSoftirqEntry
	kindSoftirqExit
	kindWorkStart
	kindWorkEnd
	kindCompactBegin
	kindCompactEnd
	kindCollapse
	kindFault
	// kindGap marks where the ring lost events: those older than it and
	// younger than the record before it.
	kindGap
)

// traceEvents are the events the collector enables, and the kind of
// each. Those the kernel lacks are left out. Each costs the cycle's core
// whenever it fires there, so only what attribution reads is recorded:
// not timer/hrtimer_expire_entry, whose moment the local timer's entry
// and the cycle's wake-up already bracket (1.4 events a cycle at 1 ms,
// read by nothing; docs/performance-log.md, 2026-12-07 15:40).
var traceEvents = []struct {
	name string
	kind kind
}{
	{"sched/sched_switch", kindSwitch},
	{"sched/sched_wakeup", kindWakeup},
	{"sched/sched_migrate_task", kindMigrate},
	{"irq/irq_handler_entry", kindIRQEntry},
	{"irq/irq_handler_exit", kindIRQExit},
	{"irq/softirq_entry", kindSoftirqEntry},
	{"irq/softirq_exit", kindSoftirqExit},
	{"irq_vectors/local_timer_entry", kindIRQEntry},
	{"irq_vectors/local_timer_exit", kindIRQExit},
	{"irq_vectors/reschedule_entry", kindIRQEntry},
	{"irq_vectors/reschedule_exit", kindIRQExit},
	{"irq_vectors/call_function_entry", kindIRQEntry},
	{"irq_vectors/call_function_exit", kindIRQExit},
	{"irq_vectors/call_function_single_entry", kindIRQEntry},
	{"irq_vectors/call_function_single_exit", kindIRQExit},
	{"irq_vectors/irq_work_entry", kindIRQEntry},
	{"irq_vectors/irq_work_exit", kindIRQExit},
	{"workqueue/workqueue_execute_start", kindWorkStart},
	{"workqueue/workqueue_execute_end", kindWorkEnd},
	{"compaction/mm_compaction_begin", kindCompactBegin},
	{"compaction/mm_compaction_end", kindCompactEnd},
	{"huge_memory/mm_collapse_huge_page", kindCollapse},
	{"thp/set_migration_pmd", kindCollapse},
	{"exceptions/page_fault_user", kindFault},
	{"exceptions/page_fault_kernel", kindFault},
}

// faultEvents are filtered to the cycle process's threads.
var faultEvents = []string{"exceptions/page_fault_user", "exceptions/page_fault_kernel"}

// record is one trace event, decoded into the fields attribution needs.
type record struct {
	ts   int64
	kind kind
	// pid is the task in whose context the event happened (common_pid).
	pid int32
	// For a switch: the task switched out (prevPID, prevPrio, prevState)
	// and in (nextPID, nextPrio, comm). For a wakeup and a migration: the
	// task (nextPID, nextPrio, comm; migration: dest CPU in num). For an
	// irq: its number (num); softirq: its vector (num).
	prevPID, nextPID   int32
	prevPrio, nextPrio int32
	prevState          int64
	num                int32
	// fn is a workqueue item's function.
	fn   uint64
	comm [16]byte
}

// decoder turns a record's bytes into a record, by the formats of the
// instance's events.
type decoder struct {
	byID    map[uint16]*layout
	irqName map[int32]string
}

type layout struct {
	kind                             kind
	pid                              tracefs.Field
	prevPID, prevPrio, prevState     tracefs.Field
	nextPID, nextPrio, comm, num, fn tracefs.Field
	name                             tracefs.Field
	// vector is the pseudo irq number of an x86 system vector's event
	// (local timer, IPIs): negative, named in vectorNames.
	vector int32
}

// vectorNames name the x86 system vectors, by pseudo irq number −1, −2 ….
var vectorNames = []string{"local_timer", "reschedule", "call_function", "call_function_single", "irq_work"}

// vectorReschedule is the reschedule IPI's pseudo irq number.
const vectorReschedule = -2

func newDecoder(formats []tracefs.Format) (*decoder, error) {
	d := &decoder{byID: map[uint16]*layout{}, irqName: map[int32]string{}}
	kinds := map[string]kind{}
	for _, e := range traceEvents {
		kinds[e.name] = e.kind
	}
	for i := range formats {
		f := &formats[i]
		k := kinds[f.System+"/"+f.Name]
		if k == kindNone {
			continue
		}
		l := &layout{kind: k}
		get := func(name string) tracefs.Field {
			fl, ok := f.Field(name)
			if !ok {
				return tracefs.Field{Offset: -1 << 30}
			}
			return fl
		}
		l.pid = get("common_pid")
		switch k {
		case kindSwitch:
			l.prevPID, l.prevPrio, l.prevState = get("prev_pid"), get("prev_prio"), get("prev_state")
			l.nextPID, l.nextPrio, l.comm = get("next_pid"), get("next_prio"), get("next_comm")
		case kindWakeup:
			l.nextPID, l.nextPrio, l.comm = get("pid"), get("prio"), get("comm")
		case kindMigrate:
			l.nextPID, l.nextPrio, l.comm, l.num = get("pid"), get("prio"), get("comm"), get("dest_cpu")
		case kindIRQEntry, kindIRQExit:
			if f.System == "irq_vectors" {
				base := strings.TrimSuffix(strings.TrimSuffix(f.Name, "_entry"), "_exit")
				l.vector = int32(-1 - slices.Index(vectorNames, base))
				break
			}
			l.num, l.name = get("irq"), get("name")
		case kindSoftirqEntry, kindSoftirqExit:
			l.num = get("vec")
		case kindWorkStart:
			l.fn = get("function")
		}
		if l.pid.Size == 0 {
			return nil, fmt.Errorf("spikes: event %s/%s has no common_pid", f.System, f.Name)
		}
		d.byID[f.ID] = l
	}
	return d, nil
}

// decode fills r from rec; false for a record of an event not asked for.
func (d *decoder) decode(ts uint64, rec []byte, r *record) bool {
	if len(rec) < 2 {
		return false
	}
	l := d.byID[uint16(rec[0])|uint16(rec[1])<<8]
	if l == nil {
		return false
	}
	*r = record{ts: int64(ts), kind: l.kind, pid: int32(l.pid.Int(rec))}
	switch l.kind {
	case kindSwitch:
		r.prevPID, r.prevPrio, r.prevState = int32(l.prevPID.Int(rec)), int32(l.prevPrio.Int(rec)), l.prevState.Int(rec)
		r.nextPID, r.nextPrio = int32(l.nextPID.Int(rec)), int32(l.nextPrio.Int(rec))
		copy(r.comm[:], l.comm.Bytes(rec))
	case kindWakeup, kindMigrate:
		r.nextPID, r.nextPrio = int32(l.nextPID.Int(rec)), int32(l.nextPrio.Int(rec))
		r.num = int32(l.num.Int(rec))
		copy(r.comm[:], l.comm.Bytes(rec))
	case kindIRQEntry, kindIRQExit:
		if l.vector < 0 {
			r.num = l.vector
			break
		}
		r.num = int32(l.num.Int(rec))
		if _, ok := d.irqName[r.num]; !ok && l.kind == kindIRQEntry {
			d.irqName[r.num] = string(l.name.Bytes(rec))
		}
	case kindSoftirqEntry, kindSoftirqExit:
		r.num = int32(l.num.Int(rec))
	case kindWorkStart:
		r.fn = l.fn.Uint(rec)
	}
	return true
}
