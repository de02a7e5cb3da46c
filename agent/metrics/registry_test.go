package metrics

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/shm"
)

// populate gives every conditional series a value: samples, slaves,
// error counters, the cycle process, real-time settings and checks.
func populate(t testing.TB, r *Registry) {
	t.Helper()
	c := r.Consumer()
	for i := range 10 {
		s := cycleSample(uint64(i), int64(1000*(i+1)), 20_000, 100_000)
		if i == 4 {
			s.Flags |= shm.SampleLostFrame | shm.SampleWKCMismatch
		}
		if i == 7 {
			s.Flags |= shm.SampleOverrun
		}
		if i == 8 {
			s.Flags |= shm.SampleSkipped
			s.Skipped = 2
		}
		if i%2 == 0 {
			s.Flags |= shm.SampleDCValid
			s.DCDiff = int32(-10 * i)
		}
		if i%3 == 0 {
			s.Flags |= shm.SampleCtlValid
			s.CtlErr = int32(100*i - 500)
		}
		c.Observe(&s)
	}
	c.SetSegment(segment(cyclestats.CounterRingDrops, 2))
	c.CloseWindow()

	r.SetSlaves([]Slave{
		{Position: 0, Name: "EK1100"},
		{Position: 1, Name: "EL2004"},
		{Position: 2, Name: "EL1014"},
	})
	r.SetBusModel(testModel(t, []busstate.SlaveInfo{{Position: 0, Name: "EK1100"}, {Position: 1, Name: "EL2004"}, {Position: 2, Name: "EL1014"}},
		testEvent(shm.EventSlaveState, 2, esc.ALStatus{State: esc.StateSafeOp, Error: true}, 0x001B, "")))
	r.SetSlaveErrorCounters(2, "EL1014", ESCErrorCounters{
		Ports: [4]PortErrorCounters{{InvalidFrame: 1, RXError: 2}, {LostLink: 3}},
		PDI:   4,
	})
	r.CycleProcessStarted(testPID)
	r.SetRTSetting(RTSchedFIFO, true)
	r.SetRTSetting(RTMlock, true)
	r.SetRTSetting(RTAffinity, true)
	r.SetRTSetting(RTDMALatency, false)
	r.SetMaintenanceSocket("/run/ecagent/ecagent.shm.d/ctl", true)
	r.SetDC(DCSettings{Enabled: true, ReferencePosition: 0, Sync0Cycle: testTarget, Sync0Shift: 300 * time.Microsecond})
	r.Emergency(2, "EL1014", 0x5000)
	r.SetDriveState(1, "EL2004", int(state.OperationEnabled), "operation enabled")
	r.CountEvent(contract.EventSlaveReconnected.String(), 2, "EL1014")
	r.CountEvent(contract.EventBusAlarm.String(), -1, "")
	for _, e := range contract.Events() { // every event's own counter family, under its last label value
		if c := e.Counter; c.Stem != "" {
			values := c.LabelValues()
			r.AddEventValue(e.Kind, values[len(values)-1], 3)
		}
	}
	r.DriveFault(1, "EL2004", 0x3220)
	for check, status := range map[string]CheckStatus{"preempt_rt": CheckFail, "isolcpus": CheckWarn, "swap": CheckPass} {
		if err := r.SetRTCheck(check, status); err != nil {
			t.Fatalf("SetRTCheck: %v", err)
		}
	}
}

// TestLint runs promlint over everything the registry exports.
func TestLint(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	populate(t, r)
	problems, err := testutil.GatherAndLint(r.Gatherer())
	if err != nil {
		t.Fatalf("GatherAndLint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// goldenFamilies are the counter and gauge families of the golden
// exposition: all documented ones except those whose values depend on the
// build or the clock.
func goldenFamilies() []string {
	var names []string
	for _, s := range Documented() {
		switch s.Name {
		case nameBuildInfo, nameHostBusy, nameCoreBusy:
			continue
		}
		if s.Type != TypeHistogram {
			names = append(names, s.Name)
		}
	}
	return names
}

// TestGoldenExposition compares the counters and gauges of a populated
// registry with testdata/exposition.golden; -update rewrites it.
func TestGoldenExposition(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	populate(t, r)
	golden := filepath.Join("testdata", "exposition.golden")
	if testsupport.Update() {
		text, err := testutil.GatherAndFormat(r.Gatherer(), expfmt.TypeTextPlain, goldenFamilies()...)
		if err != nil {
			t.Fatalf("GatherAndFormat: %v", err)
		}
		if err := os.WriteFile(golden, text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if err := testutil.GatherAndCompare(r.Gatherer(), bytes.NewReader(want), goldenFamilies()...); err != nil {
		t.Errorf("exposition differs from %s (run with -update if intended):\n%v", golden, err)
	}
	// Every golden family must be in the file: a family missing from both
	// sides would compare equal.
	for _, name := range goldenFamilies() {
		if !bytes.Contains(want, []byte("# TYPE "+name+" ")) {
			t.Errorf("%s has no %s", golden, name)
		}
	}
}

// TestFleetLabels checks that every series carries site, line and host.
func TestFleetLabels(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	populate(t, r)
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{labelSite: "plant-1", labelLine: "line-3", labelHost: "ipc-7"}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				if got := labelValue(m, k); got != v {
					t.Errorf("%s: %s=%q, want %q", mf.GetName(), k, got, v)
				}
			}
		}
	}
}

// TestBuildInfo checks ecagent_build_info's labels.
func TestBuildInfo(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	m := family(t, r, nameBuildInfo).GetMetric()[0]
	if m.GetGauge().GetValue() != 1 || labelValue(m, "version") != "v1.2.3" || labelValue(m, "revision") != "0123abcd" ||
		!strings.HasPrefix(labelValue(m, "goversion"), "go") {
		t.Errorf("build info %v, want 1 with version v1.2.3, revision 0123abcd and a Go version", m)
	}
}

// TestSetSlaves checks that a new scan replaces the error counter series
// and the slave count, and leaves the slave states to the bus model.
func TestSetSlaves(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	populate(t, r)
	r.SetSlaves([]Slave{{Position: 0, Name: "EK1100"}})
	if got := family(t, r, nameBusSlaves).GetMetric()[0].GetGauge().GetValue(); got != 1 {
		t.Errorf("bus slaves %g, want 1", got)
	}
	if n, _ := testutil.GatherAndCount(r.Gatherer(), nameSlavePortErrors); n != 0 {
		t.Errorf("%d port error series of departed slaves, want 0", n)
	}
	if n, _ := testutil.GatherAndCount(r.Gatherer(), nameSlaveALState); n != 3 {
		t.Errorf("%d AL state series, want the model's 3", n)
	}
}

// TestSetRTCheck checks the state-set encoding and the argument checks.
func TestSetRTCheck(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	for _, status := range []CheckStatus{CheckPass, CheckFail, CheckWarn} {
		if err := r.SetRTCheck("governor", status); err != nil {
			t.Fatal(err)
		}
		mf := family(t, r, nameRTCheck)
		if len(mf.GetMetric()) != 4 {
			t.Fatalf("%d series for one check, want 4 (one per status)", len(mf.GetMetric()))
		}
		for _, s := range checkStatuses() {
			want := 0.0
			if s == status {
				want = 1
			}
			if got := gaugeByLabel(t, mf, labelStatus, string(s)); got != want {
				t.Errorf("after %s: status=%s is %g, want %g", status, s, got, want)
			}
		}
	}
	for _, bad := range []struct {
		check  string
		status CheckStatus
	}{{"governor", "ok"}, {"", CheckPass}} {
		if err := r.SetRTCheck(bad.check, bad.status); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("SetRTCheck(%q, %q) = %v, want ErrInvalidArgument", bad.check, bad.status, err)
		}
	}
}

// TestCycleProcess checks the process gauges and counter.
func TestCycleProcess(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	value := func(name string) float64 {
		m := family(t, r, name).GetMetric()[0]
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	if value(nameProcessUp) != 0 {
		t.Errorf("process up before start")
	}
	r.CycleProcessStarted(testPID)
	if value(nameProcessUp) != 1 || value(nameProcessStarts) != 1 || !closeTo(value(nameProcessCPU), 18.01) {
		t.Errorf("after start: up %g, starts %g, cpu %g; want 1, 1, 18.01",
			value(nameProcessUp), value(nameProcessStarts), value(nameProcessCPU))
	}
	r.CycleProcessExited()
	if value(nameProcessUp) != 0 {
		t.Errorf("process up after exit")
	}
	if n, _ := testutil.GatherAndCount(r.Gatherer(), nameProcessCPU); n != 0 {
		t.Errorf("CPU seconds of an exited process still exported")
	}
	r.CycleProcessAttached(testPID)
	if value(nameProcessUp) != 1 || value(nameProcessStarts) != 1 {
		t.Errorf("after attach: up %g, starts %g; want 1, 1", value(nameProcessUp), value(nameProcessStarts))
	}
	r.CycleProcessStarted(999_999) // no such fixture: the collector says so
	if got := gaugeByLabel(t, family(t, r, nameCollectorOK), labelColl, collectorCycleProcess); got != 0 {
		t.Errorf("collector success for a missing process %g, want 0", got)
	}
}

// TestNewRegistryOptions checks the option errors.
func TestNewRegistryOptions(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options)
	}{
		{"empty site", func(o *Options) { o.Site = "" }},
		{"empty host", func(o *Options) { o.Host = "" }},
		{"zero target", func(o *Options) { o.Target = 0 }},
		{"negative window", func(o *Options) { o.Window = -time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions()
			tt.change(&o)
			if _, err := NewRegistry(o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("NewRegistry = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// TestSeriesMarkdown compares the README table with
// testdata/series.md; -update rewrites it.
func TestSeriesMarkdown(t *testing.T) {
	golden := filepath.Join("testdata", "series.md")
	got := SeriesMarkdown()
	testsupport.Golden(t, golden, []byte(got))
	if n := strings.Count(got, "\n| `ecagent_"); n != len(Documented()) {
		t.Errorf("table has %d rows, want %d", n, len(Documented()))
	}
}

// TestDocumented checks the series table itself.
func TestDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Documented() {
		if seen[s.Name] {
			t.Errorf("%s documented twice", s.Name)
		}
		seen[s.Name] = true
		if !strings.HasPrefix(s.Name, "ecagent_") || s.Help == "" {
			t.Errorf("%s: want the ecagent_ prefix and a help text", s.Name)
		}
		if (s.Type == TypeCounter) != strings.HasSuffix(s.Name, "_total") {
			t.Errorf("%s: _total is for counters and only counters", s.Name)
		}
	}
}

// fleet is the fleet label set of testOptions, as the exposition writes it.
const fleet = `host="ipc-7",line="line-3",site="plant-1"`

// TestEmergenciesAndDrives feeds the event methods and compares the
// exposition of the emergency and drive series exactly.
func TestEmergenciesAndDrives(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	r.SetSlaves([]Slave{
		{Position: 0, Name: "EK1100"},
		{Position: 1, Name: "AKD"},
		{Position: 2, Name: "EL3004"},
	})
	r.Emergency(1, "AKD", 0x8611)
	r.Emergency(1, "AKD", 0x0000) // error reset: counted, last code 0
	r.Emergency(2, "EL3004", 0xFF01)
	r.SetDriveState(1, "AKD", int(state.SwitchOnDisabled), "switch on disabled")
	r.SetDriveState(1, "AKD", int(state.OperationEnabled), "operation enabled")
	r.DriveFault(1, "AKD", 0x7305)
	r.SetDriveState(1, "AKD", int(state.Fault), "fault")
	r.DriveFaultCleared(1, "AKD")
	r.SetDriveState(1, "AKD", int(state.SwitchOnDisabled), "switch on disabled")
	r.DriveFault(1, "AKD", 0x2310)
	r.SetDriveState(1, "AKD", int(state.Fault), "fault")
	// A drive whose first event is its fault still gets all its series.
	r.DriveFault(3, "EL7201", 0x8611)

	want := `
# HELP ecagent_coe_emergencies_total CoE emergency messages a slave sent, error resets (error code 0) included.
# TYPE ecagent_coe_emergencies_total counter
ecagent_coe_emergencies_total{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 2
ecagent_coe_emergencies_total{host="ipc-7",line="line-3",name="EK1100",position="0",site="plant-1"} 0
ecagent_coe_emergencies_total{host="ipc-7",line="line-3",name="EL3004",position="2",site="plant-1"} 1
# HELP ecagent_coe_last_emergency_code Error code (CiA 301) of the last CoE emergency message a slave sent; 0 after an error reset.
# TYPE ecagent_coe_last_emergency_code gauge
ecagent_coe_last_emergency_code{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 0
ecagent_coe_last_emergency_code{host="ipc-7",line="line-3",name="EL3004",position="2",site="plant-1"} 65281
# HELP ecagent_drive_state CiA 402 state of a drive: 1 not ready to switch on, 2 switch on disabled, 3 ready to switch on, 4 switched on, 5 operation enabled, 6 quick stop active, 7 fault reaction active, 8 fault; 0 unknown.
# TYPE ecagent_drive_state gauge
ecagent_drive_state{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 8
# HELP ecagent_drive_faults_total Times a CiA 402 drive went to fault.
# TYPE ecagent_drive_faults_total counter
ecagent_drive_faults_total{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 2
ecagent_drive_faults_total{host="ipc-7",line="line-3",name="EL7201",position="3",site="plant-1"} 1
# HELP ecagent_drive_error_code Error code (object 0x603F) of a CiA 402 drive in fault; 0 when it is not in fault.
# TYPE ecagent_drive_error_code gauge
ecagent_drive_error_code{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 8976
ecagent_drive_error_code{host="ipc-7",line="line-3",name="EL7201",position="3",site="plant-1"} 34321
`
	names := []string{nameEmergencies, nameLastEmergency, nameDriveState, nameDriveFaults, nameDriveErrorCode}
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	r.DriveFaultCleared(1, "AKD")
	r.Emergency(9, "EL6751", 0x8130) // never scanned
	if got := gaugeByLabel(t, family(t, r, nameDriveErrorCode), labelName, "AKD"); got != 0 {
		t.Errorf("error code after the fault was cleared: %g, want 0", got)
	}

	// A rescan keeps the counts of slaves still on the bus and drops the
	// series of those that left (EK1100, EL3004, and the EL7201 and EL6751
	// that were never scanned); a new slave starts at 0.
	r.SetSlaves([]Slave{
		{Position: 1, Name: "AKD"},
		{Position: 2, Name: "EL1008"},
	})
	want = `
# HELP ecagent_coe_emergencies_total CoE emergency messages a slave sent, error resets (error code 0) included.
# TYPE ecagent_coe_emergencies_total counter
ecagent_coe_emergencies_total{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 2
ecagent_coe_emergencies_total{host="ipc-7",line="line-3",name="EL1008",position="2",site="plant-1"} 0
# HELP ecagent_coe_last_emergency_code Error code (CiA 301) of the last CoE emergency message a slave sent; 0 after an error reset.
# TYPE ecagent_coe_last_emergency_code gauge
ecagent_coe_last_emergency_code{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 0
# HELP ecagent_drive_state CiA 402 state of a drive: 1 not ready to switch on, 2 switch on disabled, 3 ready to switch on, 4 switched on, 5 operation enabled, 6 quick stop active, 7 fault reaction active, 8 fault; 0 unknown.
# TYPE ecagent_drive_state gauge
ecagent_drive_state{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 8
# HELP ecagent_drive_faults_total Times a CiA 402 drive went to fault.
# TYPE ecagent_drive_faults_total counter
ecagent_drive_faults_total{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 2
# HELP ecagent_drive_error_code Error code (object 0x603F) of a CiA 402 drive in fault; 0 when it is not in fault.
# TYPE ecagent_drive_error_code gauge
ecagent_drive_error_code{host="ipc-7",line="line-3",name="AKD",position="1",site="plant-1"} 0
`
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), names...); err != nil {
		t.Errorf("after a rescan: %v", err)
	}
}

// TestDriveStateFirstEvent checks that a drive's first state starts its
// fault counter and error code at 0.
func TestDriveStateFirstEvent(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	r.SetDriveState(4, "AKD", int(state.NotReadyToSwitchOn), "not ready to switch on")
	want := `
# HELP ecagent_drive_state CiA 402 state of a drive: 1 not ready to switch on, 2 switch on disabled, 3 ready to switch on, 4 switched on, 5 operation enabled, 6 quick stop active, 7 fault reaction active, 8 fault; 0 unknown.
# TYPE ecagent_drive_state gauge
ecagent_drive_state{host="ipc-7",line="line-3",name="AKD",position="4",site="plant-1"} 1
# HELP ecagent_drive_faults_total Times a CiA 402 drive went to fault.
# TYPE ecagent_drive_faults_total counter
ecagent_drive_faults_total{host="ipc-7",line="line-3",name="AKD",position="4",site="plant-1"} 0
# HELP ecagent_drive_error_code Error code (object 0x603F) of a CiA 402 drive in fault; 0 when it is not in fault.
# TYPE ecagent_drive_error_code gauge
ecagent_drive_error_code{host="ipc-7",line="line-3",name="AKD",position="4",site="plant-1"} 0
`
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), nameDriveState, nameDriveFaults, nameDriveErrorCode); err != nil {
		t.Error(err)
	}
}

// TestSetDC compares the distributed-clock gauges before SetDC, with
// clocks on, and with clocks off again.
func TestSetDC(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	names := []string{nameDCEnabled, nameDCReference, nameDCSync0Cycle, nameDCSync0Shift, nameDCSync1Shift}
	expo := func(enabled, ref, cycle, shift0, shift1 string) string {
		return `
# HELP ecagent_dc_enabled 1 when distributed clocks are configured on the segment, 0 otherwise.
# TYPE ecagent_dc_enabled gauge
ecagent_dc_enabled{` + fleet + `} ` + enabled + `
# HELP ecagent_dc_reference_position Position of the slave whose clock is the distributed-clock reference; -1 when distributed clocks are off.
# TYPE ecagent_dc_reference_position gauge
ecagent_dc_reference_position{` + fleet + `} ` + ref + `
# HELP ecagent_dc_sync0_cycle_seconds SYNC0 cycle time the slaves are configured with; 0 when distributed clocks are off.
# TYPE ecagent_dc_sync0_cycle_seconds gauge
ecagent_dc_sync0_cycle_seconds{` + fleet + `} ` + cycle + `
# HELP ecagent_dc_sync0_shift_seconds Shift of SYNC0 from the start of the cycle on the distributed-clock time; 0 when distributed clocks are off.
# TYPE ecagent_dc_sync0_shift_seconds gauge
ecagent_dc_sync0_shift_seconds{` + fleet + `} ` + shift0 + `
# HELP ecagent_dc_sync1_shift_seconds Shift of SYNC1 from SYNC0; 0 when distributed clocks are off or SYNC1 is not used.
# TYPE ecagent_dc_sync1_shift_seconds gauge
ecagent_dc_sync1_shift_seconds{` + fleet + `} ` + shift1 + `
`
	}
	steps := []struct {
		name string
		set  *DCSettings
		want string
	}{
		{"before SetDC", nil, expo("0", "-1", "0", "0", "0")},
		{"on", &DCSettings{Enabled: true, ReferencePosition: 1, Sync0Cycle: time.Millisecond,
			Sync0Shift: 250 * time.Microsecond, Sync1Shift: 500 * time.Microsecond},
			expo("1", "1", "0.001", "0.00025", "0.0005")},
		{"off, other fields ignored", &DCSettings{ReferencePosition: 3, Sync0Cycle: time.Millisecond},
			expo("0", "-1", "0", "0", "0")},
	}
	for _, s := range steps {
		if s.set != nil {
			r.SetDC(*s.set)
		}
		if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(s.want), names...); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}

// TestEventMethodsConcurrently calls the event methods from several
// goroutines while rescanning and gathering (run with -race).
func TestEventMethodsConcurrently(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	slaves := []Slave{{Position: 0, Name: "AKD"}, {Position: 1, Name: "AKD"}}
	r.SetSlaves(slaves)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				pos := (g + i) % 2
				r.Emergency(pos, "AKD", uint16(i))
				r.SetDriveState(pos, "AKD", i%8, "")
				r.DriveFault(pos, "AKD", 0x2310)
				r.DriveFaultCleared(pos, "AKD")
				r.SetDC(DCSettings{Enabled: i%2 == 0, Sync0Cycle: time.Millisecond})
				if i%100 == 0 {
					r.SetSlaves(slaves)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			if _, err := r.Gatherer().Gather(); err != nil {
				t.Errorf("Gather: %v", err)
				return
			}
		}
	}()
	wg.Wait()
	var total float64
	for _, m := range family(t, r, nameEmergencies).GetMetric() {
		total += m.GetCounter().GetValue()
	}
	if total != 2000 {
		t.Errorf("%g emergencies counted, want 2000", total)
	}
}
