package busstate

import (
	"fmt"
	"log/slog"
	"math"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/shm"
)

// EventField is one named value of an event as every output shows it:
// the MQTT JSON event has it as a field, the log line as an attribute.
type EventField struct {
	// Key is the field's name.
	Key string
	// Value is a string, a bool, a uint64, an int64 or a Code.
	Value any
}

// Code is an error or status code: a number in JSON, hexadecimal in the
// log.
type Code uint16

// LogValue writes c in hexadecimal, four digits (0x001b, 0x2310).
func (c Code) LogValue() slog.Value { return slog.StringValue(fmt.Sprintf("%#04x", uint16(c))) }

// Attr is f as a log attribute.
func (f EventField) Attr() slog.Attr { return slog.Any(f.Key, f.Value) }

// AppendEventFields appends the fields of ev that its row e of the event
// catalogue shows, in its order — the AL fields, then the Value's, then
// the Text's — and returns the extended slice. The slave the event is
// about is not among them: each output names it in its own way.
func AppendEventFields(dst []EventField, ev *shm.Event, e contract.EventInfo) []EventField {
	dst = appendAL(dst, ev, e.AL)
	dst = appendValue(dst, ev, e.Value)
	if e.Text.Form == contract.FormText {
		if t := ev.TextString(); t != "" {
			dst = append(dst, EventField{e.Text.Name, t})
		}
	}
	return dst
}

func appendAL(dst []EventField, ev *shm.Event, form contract.ALForm) []EventField {
	if form == contract.ALStatus {
		st := decodeAL(ev.ALState)
		dst = append(dst, EventField{"state", st.State.String()}, EventField{"error", st.Error})
	}
	if form != contract.ALNone {
		dst = append(dst, EventField{"al_status_code", Code(ev.ALStatusCode)})
		if ev.ALStatusCode != 0 {
			dst = append(dst, EventField{"al_status", esc.ALStatusCode(ev.ALStatusCode).String()})
		}
	}
	return dst
}

func appendValue(dst []EventField, ev *shm.Event, f contract.Field) []EventField {
	switch f.Form {
	case contract.FormNumber:
		dst = append(dst, EventField{f.Name, ev.Value})
	case contract.FormMicros:
		dst = append(dst, EventField{f.Name, int64(ev.Value / 1000)})
	case contract.FormEmergency:
		code, register, data := ev.Emergency()
		dst = append(dst, EventField{"error_code", Code(code)}, EventField{"error_register", Code(register)},
			EventField{"data", hexBytes(data)}, EventField{"meaning", coe.EmergencyMeaning(code)})
	case contract.FormErrorCode:
		code := uint16(ev.Value)
		dst = append(dst, EventField{f.Name, Code(code)}, EventField{"meaning", coe.EmergencyMeaning(code)})
	case contract.FormDriveState:
		dst = append(dst, EventField{f.Name, driveStateName(ev)}, EventField{"state_number", ev.Value})
	}
	return dst
}

// driveStateName is the name of a drive state event's state: the name the
// cycle sent, else the standard one of its number (package state's); a
// number that names no state is written "DriveState(n)", n at most
// MaxInt32, as the events have always shown it.
func driveStateName(ev *shm.Event) string {
	if text := ev.TextString(); text != "" {
		return text
	}
	if s, ok := state.FromNumber(ev.Value); ok {
		return s.String()
	}
	return fmt.Sprintf("DriveState(%d)", min(ev.Value, math.MaxInt32))
}

// hexBytes formats b as lower-case hexadecimal, two digits a byte.
func hexBytes(b [5]byte) string {
	const digits = "0123456789abcdef"
	var out [2 * len(b)]byte
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&0xF]
	}
	return string(out[:])
}
