package contract

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// TestEventKindNumbers pins the number of every kind of the cycle
// process in testdata/event-kinds.golden: a number crosses shared memory,
// and an agent may attach to a cycle process built before it, so a kind
// keeps its number for ever and a new one takes the next. The file may
// only grow: a pinned line that changed fails even with -update, which
// appends the new kinds.
func TestEventKindNumbers(t *testing.T) {
	var got strings.Builder
	for i, e := range Events() {
		if e.Origin != OriginCycle {
			break
		}
		if e.Kind != EventKind(i) {
			t.Fatalf("row %d of the cycle process is kind %d (%s): the cycle's rows come first, in the order of their numbers", i, e.Kind, e.Name)
		}
		fmt.Fprintf(&got, "%d %s\n", e.Kind, e.Name)
	}
	golden := filepath.Join("testdata", "event-kinds.golden")
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) > 0 && !strings.HasSuffix(string(want), "\n") {
		t.Fatalf("%s: its last line is cut short", golden)
	}
	if !strings.HasPrefix(got.String(), string(want)) {
		t.Fatalf("a pinned kind's number changed; %s: %s", golden, testsupport.FirstDifference(got.String(), string(want)))
	}
	if got.Len() > len(want) {
		if !testsupport.Update() {
			t.Fatalf("kinds not pinned in %s yet: run go test ./contract -update to append them:\n%s", golden, got.String()[len(want):])
		}
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEventCatalogue checks what every renderer takes for granted of a
// row: a unique kind and name, an origin that matches the kind's range,
// fields a renderer can show, effects and series that fit the event's
// scope.
func TestEventCatalogue(t *testing.T) {
	namePattern := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	kinds, names := map[EventKind]bool{}, map[string]bool{}
	for _, e := range Events() {
		if kinds[e.Kind] || names[e.Name] {
			t.Errorf("%s (%d): kind or name listed twice", e.Name, e.Kind)
		}
		kinds[e.Kind], names[e.Name] = true, true
		if !namePattern.MatchString(e.Name) {
			t.Errorf("%s: names are lower-case words joined by hyphens", e.Name)
		}
		if got, ok := e.Kind.Info(); !ok || got != e {
			t.Errorf("%s: Info of its kind is not its row", e.Name)
		}
		if got, ok := EventNamed(e.Name); !ok || got != e {
			t.Errorf("%s: EventNamed is not its row", e.Name)
		}
		for _, p := range rowProblems(e) {
			t.Errorf("%s: %s", e.Name, p)
		}
	}
	if _, ok := EventKind(0x7FFF).Info(); ok || EventKind(0x7FFF).String() != "EventKind(32767)" {
		t.Errorf("a number no kind has: %v", EventKind(0x7FFF))
	}
	if _, ok := EventNamed("no-such-event"); ok {
		t.Error("EventNamed found an event that is not in the catalogue")
	}
}

// slaveEffects are the effects on a slave; the others are on the bus.
var slaveEffects = map[Effect]bool{EffectSlaveAL: true, EffectLost: true, EffectFound: true, EffectBackInOP: true,
	EffectRefused: true, EffectRecoveryFailed: true}

// rowProblems describes what is wrong with row e.
func rowProblems(e EventInfo) []string {
	var out []string
	add := func(ok bool, problem string) {
		if !ok {
			out = append(out, problem)
		}
	}
	agent := e.Kind >= 0x8000
	add(agent == (e.Origin == OriginAgent), "kinds from 0x8000 are the agent's, below the cycle process's")
	add(e.Log == "" || e.Level == slog.LevelDebug || e.Level == slog.LevelInfo || e.Level == slog.LevelWarn || e.Level == slog.LevelError,
		"its log level is none of slog's four")
	if agent {
		add(!e.PerSlave && e.Effect == EffectNone && e.AL == ALNone && e.Value == Field{} && e.Text == Field{} &&
			e.Device == DeviceNone && e.Counter == EventCounter{},
			"an event of the agent is about the bus, and has no fields, effect or series in the cycle's event ring")
		return out
	}
	switch e.Value.Form {
	case FormNone:
		add(e.Value.Name == "", "a Value not shown has no name")
	case FormNumber, FormMicros, FormErrorCode, FormDriveState:
		add(e.Value.Name != "", "a Value shown has a name")
	case FormEmergency:
	default:
		add(false, "its Value's form is not one for a Value")
	}
	switch e.Text.Form {
	case FormNone, FormBlock:
		add(e.Text.Name == "", "a Text not shown has no name")
	case FormText:
		add(e.Text.Name != "", "a Text shown has a name")
		add(e.Value.Form != FormDriveState, "a drive state's Text is its name, shown by the Value")
	default:
		add(false, "its Text's form is not one for a Text")
	}
	add(e.Value.Name != e.Text.Name || e.Value.Name == "", "Value and Text share a name")
	if e.Effect != EffectNone {
		add(e.PerSlave == slaveEffects[e.Effect], "its effect is on a slave, or on the bus, as the event is not")
	}
	add(e.Device == DeviceNone || e.PerSlave, "a device series belongs to a slave")
	add(e.Device != DeviceErrorCounters || e.Text.Form == FormBlock, "the error counters come as the block in Text")
	if c := e.Counter; c != (EventCounter{}) {
		add(c.Stem != "" && c.Label != "" && c.Help != "" && len(c.LabelValues()) > 0,
			"a counter family has a stem, a label, label values exported from the start and a help text")
		add(e.Value.Form == FormNumber && e.Text.Form == FormText && e.Text.Name == c.Label,
			"a counter family adds the Value (a number) under the Text (shown as its label)")
	}
	if e.Route == RouteWriteAnswer {
		add(e.Value == Field{"seq", FormNumber}, "an answer to a write carries the command's Seq in Value")
	}
	return out
}

// TestRowProblemsBite checks that the row checks fail rows that break
// them, so that TestEventCatalogue can fail.
func TestRowProblemsBite(t *testing.T) {
	lost, _ := EventSlaveLost.Info()
	died, _ := EventCycleDied.Info()
	// discarded is a bus event with a counter family of its own, as
	// frames-discarded is.
	discarded, _ := EventBusAlarm.Info()
	discarded.Effect, discarded.Text.Name = EffectNone, "reason"
	discarded.Counter = EventCounter{Stem: "things_discarded", Label: "reason", Values: "a b", Help: "Things discarded."}
	if p := rowProblems(discarded); len(p) != 0 {
		t.Fatalf("the sound row the cases break has problems: %v", p)
	}
	for name, e := range map[string]EventInfo{
		"bus effect on a slave event": func() EventInfo { e := lost; e.Effect = EffectLinkDown; return e }(),
		"slave effect on a bus event": func() EventInfo { e := discarded; e.Effect = EffectLost; return e }(),
		"counter without a label":     func() EventInfo { e := discarded; e.Counter.Label = ""; return e }(),
		"agent kind of the cycle":     func() EventInfo { e := lost; e.Kind = 0x8100; return e }(),
		"agent event per slave":       func() EventInfo { e := died; e.PerSlave = true; return e }(),
		"Text shown without a name":   func() EventInfo { e := lost; e.Text.Name = ""; return e }(),
		"device series of the bus":    func() EventInfo { e := discarded; e.Device = DeviceEmergency; return e }(),
	} {
		if len(rowProblems(e)) == 0 {
			t.Errorf("%s: no problem found", name)
		}
	}
}
