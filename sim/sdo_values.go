package sim

import (
	"github.com/ecagent/ecagent/ethercat/bitfield"
	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
)

// Reading and writing object dictionary entries for SDO transfers: values
// of process data entries, complete access, write permissions and what a
// write of a PDO object changes.

// value returns the current value of entry e of object index appended to
// buf. A process data entry reads the bits where the current PDO
// assignment puts it; where no assigned PDO maps it, an output entry
// (one with a value of its own, see outputEntry) reads its value, an
// input entry zeros.
func (m *mailbox) value(index uint16, e *entry, buf []byte) []byte {
	if !e.process {
		return append(buf, e.value...)
	}
	at := len(buf)
	buf = append(buf, make([]byte, (e.bits+7)/8)...)
	for k := range m.d.pd.entries {
		pe := &m.d.pd.entries[k]
		if pe.index == index && pe.sub == e.sub {
			bitfield.Copy(buf[at:], 0, m.d.mem.b[:], m.d.smArea(pe.sm)*8+pe.bit, min(e.bits, pe.bits))
			return buf
		}
	}
	copy(buf[at:], e.value)
	return buf
}

// store writes data, as long as e's value, into entry e of object index.
// A process data entry (an output: only those are writable) also puts
// the bits where the current PDO assignment maps it, as the master's
// next outputs would, so that a read returns what was written until
// those outputs overwrite it; and the device's application, which takes
// its outputs from the process image, hears of the write.
func (m *mailbox) store(index uint16, e *entry, data []byte) {
	copy(e.value, data)
	if !e.process {
		return
	}
	for k := range m.d.pd.entries {
		pe := &m.d.pd.entries[k]
		if pe.index == index && pe.sub == e.sub && pe.out {
			bitfield.Copy(m.d.mem.b[:], m.d.smArea(pe.sm)*8+pe.bit, e.value, 0, min(e.bits, pe.bits))
		}
	}
	if w, ok := m.d.app.(outputWriter); ok {
		w.sdoWritten(index, e.sub, e.value)
	}
}

// outputWriter is an application that takes output objects written over
// SDO (a drive's controlword, mode, targets).
type outputWriter interface {
	// sdoWritten follows an SDO write of output object index:sub with
	// value v (little endian, the entry's length).
	sdoWritten(index uint16, sub uint8, v []byte)
}

// read returns the value of index:sub (all sub-indexes for a complete
// access) or an abort code.
func (m *mailbox) read(index uint16, sub uint8, complete bool) ([]byte, uint32) {
	o := m.od.find(index)
	if o == nil {
		return nil, abortNoObject
	}
	buf := m.scratch[:0]
	if complete {
		if sub > 1 || o.code == codeVar {
			return nil, abortUnsupported
		}
		n := o.entries[0].value[0]
		if sub == 0 {
			buf = append(buf, n, 0) // sub-index 0 travels as 16 bits
		}
		for i := range o.entries[1:] {
			if e := &o.entries[1+i]; e.sub <= n {
				buf = m.value(index, e, buf)
			}
		}
		return buf, 0
	}
	e := o.entry(sub)
	if e == nil {
		return nil, abortNoSubIndex
	}
	return m.value(index, e, buf), 0
}

// write stores data into index:sub or returns an abort code.
func (m *mailbox) write(index uint16, sub uint8, data []byte, complete bool) uint32 {
	o := m.od.find(index)
	if o == nil {
		return abortNoObject
	}
	if complete {
		return m.writeComplete(o, sub, data)
	}
	e := o.entry(sub)
	if code := m.writable(e); code != 0 {
		return code
	}
	switch {
	case e.dataType == typeVisibleString:
		e.value = append(e.value[:0], data...)
		return 0
	case len(data) > len(e.value):
		return abortLengthHigh
	case len(data) < len(e.value):
		return abortLengthLow
	case sub == 0 && o.code != codeVar && int(data[0]) >= len(o.entries):
		return abortValueRange
	}
	if code := m.d.pdoWriteAbort(m.od, index, sub, data); code != 0 {
		return code
	}
	m.store(index, e, data)
	m.written(index)
	return 0
}

// written follows a successful write of object index.
func (m *mailbox) written(index uint16) {
	if index >= 0x1600 && index <= 0x1C2F { // PDO mapping or assignment
		m.d.layoutProcessData()
	}
}

// writable returns the abort code for writing entry e now, or 0.
func (m *mailbox) writable(e *entry) uint32 {
	switch {
	case e == nil:
		return abortNoSubIndex
	case e.access == readOnly: // inputs among the process data entries too
		return abortReadOnly
	case e.access == writablePreOp && m.d.esm.state != esc.StatePreOp:
		return abortDeviceState
	case e.rights != 0 && e.rights&writeRight(m.d.esm.state) == 0:
		return abortDeviceState // an ESI's write restriction
	}
	return 0
}

// writeRight is the access bit that allows a write in state st.
func writeRight(st esc.ALState) coe.Access {
	switch st {
	case esc.StateSafeOp:
		return coe.AccessWriteSafeOp
	case esc.StateOp:
		return coe.AccessWriteOp
	}
	return coe.AccessWritePreOp
}

// writeComplete stores a complete access download into o: from sub-index
// 0 (its value travels as 16 bits, then sub-indexes 1..value) or from
// sub-index 1 (sub-indexes 1..current count). Every entry must be
// writable and the data exactly as long as their values; nothing changes
// otherwise.
func (m *mailbox) writeComplete(o *object, sub uint8, data []byte) uint32 {
	if sub > 1 || o.code == codeVar || len(o.entries) == 0 {
		return abortUnsupported
	}
	n := int(o.entries[0].value[0])
	if sub == 0 {
		if len(data) < 2 {
			return abortLengthLow
		}
		if code := m.writable(&o.entries[0]); code != 0 {
			return code
		}
		n, data = int(data[0]), data[2:]
	}
	need := 0
	for k := 1; k <= n; k++ {
		e := o.entry(uint8(k))
		if e == nil {
			return abortValueRange
		}
		if code := m.writable(e); code != 0 {
			return code
		}
		need += len(e.value)
	}
	switch {
	case len(data) > need:
		return abortLengthHigh
	case len(data) < need:
		return abortLengthLow
	}
	if code := m.d.pdoCompleteWriteAbort(m.od, o.index, n, data); code != 0 {
		return code
	}
	if sub == 0 {
		o.entries[0].value[0] = uint8(n)
	}
	for k := 1; k <= n; k++ {
		e := o.entry(uint8(k))
		m.store(o.index, e, data[:len(e.value)])
		data = data[len(e.value):]
	}
	m.written(o.index)
	return 0
}
