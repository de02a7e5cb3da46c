package cycle

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// TestWatchAlarmSaysWhatIsWrongNow feeds the alarm watcher cycle results
// and checks the alarms it reports, with their text: raised after three
// bad cycles, cleared after three clean ones, and its reason changed
// when the bad cycles change kind — frames back but a slave
// still missing, or frames lost while one was — so that the answering
// slaves' data is stale exactly while frames are lost.
func TestWatchAlarmSaysWhatIsWrongNow(t *testing.T) {
	clean := master.CycleResult{WKC: 7, ExpectedWKC: 7}
	lost := master.CycleResult{Lost: 1, ExpectedWKC: 7}
	wkc := master.CycleResult{WKC: 5, ExpectedWKC: 7}
	times := func(r master.CycleResult, n int) []master.CycleResult {
		return slices.Repeat([]master.CycleResult{r}, n)
	}
	cat := func(rs ...[]master.CycleResult) []master.CycleResult { return slices.Concat(rs...) }
	cases := []struct {
		name    string
		results []master.CycleResult
		want    []string
	}{
		{"two bad cycles raise nothing", cat(times(lost, 2), times(clean, 5)), nil},
		{"lost frames, then clean", cat(times(lost, 3), times(clean, 3)), []string{"bus-alarm frames lost", "bus-alarm-cleared"}},
		{"a slave missing: the working counter", times(wkc, 5), []string{"bus-alarm working counter off"}},
		{"a loss streak while a slave is missing, then frames back",
			cat(times(wkc, 3), times(lost, 3), times(wkc, 3), times(clean, 3)),
			[]string{"bus-alarm working counter off", "bus-alarm-changed frames lost", "bus-alarm-changed working counter off", "bus-alarm-cleared"}},
		{"a short loss streak while a slave is missing changes nothing",
			cat(times(wkc, 3), times(lost, 2), times(wkc, 5)), []string{"bus-alarm working counter off"}},
		{"frames back but a slave missing after a loss",
			cat(times(lost, 4), times(wkc, 3)), []string{"bus-alarm frames lost", "bus-alarm-changed working counter off"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _, mem := bus(t)
			e := New(m, mem, Config{Period: time.Millisecond, KeepGC: true, RT: noRT(), AlarmCycles: 3})
			mem.Events().Discard()
			for i := range c.results {
				e.watchAlarm(&c.results[i])
			}
			var got []string
			var ev shm.Event
			for mem.Events().Next(&ev) {
				got = append(got, strings.TrimSpace(ev.Kind.String()+" "+ev.TextString()))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("alarms %q, want %q", got, c.want)
			}
		})
	}
}
