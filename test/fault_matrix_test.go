package test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// slaveWant is how every channel must render one slave during a fault.
type slaveWant struct {
	up       float64 // ecagent_slave_up
	al       float64 // ecagent_slave_al_state
	presence string
	quality  string
}

var (
	healthy  = slaveWant{1, 8, "present", "good"}
	lost     = slaveWant{0, 0, "lost", "stale"}
	refused  = slaveWant{0, 0, "refused", "invalid"}
	silenced = slaveWant{0, 0, "present", "stale"} // link or cycle down: nothing answers
	alarmed  = slaveWant{1, 8, "present", "stale"} // frames lost: answers, but the data is old
)

// matrixRow is one fault and what each channel says while it lasts. After
// the fault clears, every channel must say every slave is healthy again.
type matrixRow struct {
	name string
	// inject starts the fault and returns the first scrape in which the
	// agent has seen it.
	inject func(t *testing.T, r *faultRig) map[string]*dto
	// clear ends it.
	clear func(t *testing.T, r *faultRig)
	// all, when set, is every slave during the fault; otherwise the
	// slaves in slaves are as given and the others healthy.
	all    *slaveWant
	slaves map[int]slaveWant
	ready  string   // a part of /readyz's 503 body
	alerts []string // the slave and cycle alerts firing on this state
	// sparkplugDeath are the devices that must get a DDEATH during the
	// fault and a DBIRTH before their next DDATA after it.
	sparkplugDeath []int
	// over, when set, tells from the scrape inject returned that the fault
	// had already ended when it was taken: a host that starves the test
	// long enough lets the agent repair a short fault (restart a killed
	// cycle process) before the test looks. The state during the fault is
	// then not checked; the recovery and the MQTT record of the fault are.
	over func(during map[string]*dto) bool
}

func (row *matrixRow) want(pos int) slaveWant {
	if row.all != nil {
		return *row.all
	}
	if w, ok := row.slaves[pos]; ok {
		return w
	}
	return healthy
}

// TestFaultMatrix injects each fault the simulator can make into a running
// agent and checks, for each, every channel the plant and the fleet read:
// the metrics scrape, /readyz, the alert rules (evaluated by promtool on
// the scraped state), JSON MQTT (pd quality, the retained state topic)
// and Sparkplug B (DDEATH and DBIRTH), while the fault lasts and after it
// cleared. One row per fault, exact expectations; each row fails only
// itself.
func TestFaultMatrix(t *testing.T) {
	promtool := promtoolPath(t)
	for _, scheme := range []string{"json", "sparkplug"} {
		t.Run(scheme, func(t *testing.T) {
			r := newFaultRig(t, referenceSet, "--mqtt.scheme", scheme, "--mqtt.interval", "50ms")
			brokerAddr := r.a.loggedAddr(t, "embedded MQTT broker", 10*time.Second)
			inbox, _ := mqtttest.Subscribe(t, "tcp://"+brokerAddr, "matrix-"+scheme, "#", false)
			for _, row := range faultRows() {
				t.Run(row.name, func(t *testing.T) {
					r.begin(t)
					var positions []int
					for pos := range row.slaves {
						positions = append(positions, pos)
					}
					r.repairOnFailure(t, positions...)
					from := inbox.Len()
					during := row.inject(t, r)
					if row.over != nil && row.over(during) {
						t.Logf("the fault was over before the test could look (the host held the test up): its state during it not checked")
					} else {
						checkReadyz(t, r, row.ready) // first: the cycle row's fault is short
						if row.slaves != nil || row.all != nil {
							// A fault of some slaves or of the bus lasts
							// until cleared: a loss streak of the host's own
							// in the first scrape (every slave's data stale)
							// passes, and so does the scrape that first
							// counted the event: a scrape gathers its
							// collectors side by side, and the slave series'
							// snapshot can be a moment older than the count
							// (seen: link down counted, slaves still in OP).
							during = settleMetrics(t, r, during, &row)
						}
						checkMetrics(t, during, &row)
						checkAlerts(t, promtool, during, row.alerts)
					}
					if scheme == "json" {
						checkJSON(t, inbox, from, &row)
					} else {
						checkSparkplugDeaths(t, inbox, from, &row)
					}
					cleared := inbox.Len() // checkSparkplugBirths looks back to the deaths
					row.clear(t, r)
					r.waitHealthy(t, 8*time.Second)
					// Healthy again, the host can still lose a streak of
					// frames of its own (a bus alarm, every slave's data
					// stale for a moment): the checks take a scrape from
					// after it, within 3 s.
					healthy := settleMetrics(t, r, r.scrape(t), &matrixRow{})
					settleReady(t, r)
					checkMetrics(t, healthy, &matrixRow{})
					checkReadyz(t, r, "")
					checkAlerts(t, promtool, healthy, nil)
					if scheme == "json" {
						checkJSONRecovered(t, inbox, from, &row)
					} else {
						checkSparkplugBirths(t, inbox, cleared, &row)
					}
				})
			}
		})
	}
}

func faultRows() []matrixRow {
	var startsBefore float64 // the cycle process's starts before the kill
	lostAt := func(pos int) func(*testing.T, *faultRig) map[string]*dto {
		return func(t *testing.T, r *faultRig) map[string]*dto {
			before := r.scrape(t)
			if err := r.seg.Faults().Disappear(pos); err != nil {
				t.Fatal(err)
			}
			return waitEvent(t, r, before, "slave-lost", fmt.Sprint(pos), 3*time.Second)
		}
	}
	returnAt := func(pos int) func(*testing.T, *faultRig) {
		return func(t *testing.T, r *faultRig) {
			if err := r.seg.Faults().Return(pos); err != nil {
				t.Fatal(err)
			}
		}
	}
	return []matrixRow{
		{
			name: "last slave lost", inject: lostAt(6), clear: returnAt(6),
			slaves: map[int]slaveWant{6: lost}, ready: "1 slave(s) not answering: 6 (EK1110)",
			alerts: []string{"EcagentSlaveLost"}, sparkplugDeath: []int{6},
		},
		{
			// Frames turn back before 3: the slaves behind it do not
			// answer either, and are lost too.
			name: "middle slave lost",
			inject: func(t *testing.T, r *faultRig) map[string]*dto {
				before := r.scrape(t)
				if err := r.seg.Faults().Disappear(3); err != nil {
					t.Fatal(err)
				}
				var during map[string]*dto
				for _, pos := range []string{"3", "4", "5", "6"} {
					during = waitEvent(t, r, before, "slave-lost", pos, 3*time.Second)
				}
				return during
			},
			clear:  returnAt(3),
			slaves: map[int]slaveWant{3: lost, 4: lost, 5: lost, 6: lost}, ready: "4 slave(s) not answering: 3 (EL1014), 4 (EL1014), 5 (EL4132), 6 (EK1110)",
			alerts: []string{"EcagentSlaveLost"}, sparkplugDeath: []int{3, 4, 5, 6},
		},
		{
			name: "slave in SAFEOP+ERR",
			inject: func(t *testing.T, r *faultRig) map[string]*dto {
				before := r.scrape(t)
				if err := r.seg.Faults().HoldALError(5, 0x001B); err != nil {
					t.Fatal(err)
				}
				return waitEvent(t, r, before, "recovery-failed", "5", 3*time.Second)
			},
			clear: func(t *testing.T, r *faultRig) {
				if err := r.seg.Faults().ReleaseALError(5); err != nil {
					t.Fatal(err)
				}
			},
			// SAFEOP exchanges the inputs: the data stays good.
			// The master acknowledges and asks for OP again and again,
			// so between two refusals the slave reads SAFEOP without the
			// error bit: either is "SAFEOP" here.
			slaves: map[int]slaveWant{5: {1, 4, "present", "good"}},
			ready:  "slave 5 (EL4132) SAFEOP",
			alerts: []string{"EcagentSlaveNotOperational"},
		},
		{
			name: "foreign device at a position",
			inject: func(t *testing.T, r *faultRig) map[string]*dto {
				lostAt(6)(t, r)
				before := r.scrape(t)
				if err := r.seg.Faults().ReturnAs(6, "EL2008"); err != nil {
					t.Fatal(err)
				}
				return waitEvent(t, r, before, "slave-refused", "6", 3*time.Second)
			},
			clear: func(t *testing.T, r *faultRig) {
				if err := r.seg.Faults().Disappear(6); err != nil {
					t.Fatal(err)
				}
				if err := r.seg.Faults().ReturnAs(6, "EK1110"); err != nil {
					t.Fatal(err)
				}
			},
			slaves: map[int]slaveWant{6: refused}, ready: "slave 6 (EK1110) refused: ",
			alerts: []string{"EcagentSlaveRefused"}, sparkplugDeath: []int{6},
		},
		{
			name: "link down",
			inject: func(t *testing.T, r *faultRig) map[string]*dto {
				before := r.scrape(t)
				run(t, "ip", "link", "set", r.w.MasterEnd, "down")
				return waitEvent(t, r, before, "link-down", "", 3*time.Second)
			},
			clear: func(t *testing.T, r *faultRig) { run(t, "ip", "link", "set", r.w.MasterEnd, "up") },
			all:   &silenced, ready: "link down",
		},
		{
			name: "frames dropped: the bus alarm",
			inject: func(t *testing.T, r *faultRig) map[string]*dto {
				before := r.scrape(t)
				r.seg.Faults().DropPercent(100)
				return waitEvent(t, r, before, "bus-alarm", "", 3*time.Second)
			},
			clear: func(t *testing.T, r *faultRig) { r.seg.Faults().DropOff() },
			all:   &alarmed, ready: "bus alarm: ",
		},
		{
			name: "cycle process stopped: alive, no cycles",
			inject: func(t *testing.T, r *faultRig) map[string]*dto {
				pid := cyclePIDOf(r.shm)
				if pid <= 0 {
					t.Fatal("no cycle process PID in the bus description")
				}
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
				return r.waitFor(t, "the cycle process shown not up", 5*time.Second, func(f map[string]*dto) bool {
					return counter(f, "ecagent_cycle_process_up", nil) == 0
				})
			},
			clear: func(t *testing.T, r *faultRig) {
				if err := syscall.Kill(cyclePIDOf(r.shm), syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
			},
			all: &silenced, ready: "cycle process not responding",
			alerts: []string{"EcagentCycleProcessDown"},
		},
		{
			name: "cycle process killed",
			// The agent restarts the cycle within a few hundred ms: the
			// checks read the scrape that counted the death, and /readyz
			// right after it, before the new cycle process is in OP.
			inject: func(t *testing.T, r *faultRig) map[string]*dto {
				pid := cyclePIDOf(r.shm)
				if pid <= 0 {
					t.Fatal("no cycle process PID in the bus description")
				}
				before := r.scrape(t)
				startsBefore = counter(before, "ecagent_cycle_process_starts_total", nil)
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				return waitEvent(t, r, before, "cycle-died", "", 5*time.Second)
			},
			clear: func(t *testing.T, r *faultRig) {},
			all:   &silenced, ready: "cycle process down",
			alerts: []string{"EcagentCycleProcessDown"},
			// A new cycle process already runs: the restart came before
			// the scrape that counted the death.
			over: func(during map[string]*dto) bool {
				return counter(during, "ecagent_cycle_process_up", nil) == 1 &&
					counter(during, "ecagent_cycle_process_starts_total", nil) > startsBefore
			},
			// No bus behind the node: every device dies, and is born
			// again with the new cycle process.
			sparkplugDeath: []int{0, 1, 2, 3, 4, 5, 6},
		},
	}
}

// pdOf decodes a JSON pd message's quality and the retained state topic.
type pdQuality struct {
	Quality    string `json:"quality"`
	StaleSince int64  `json:"stale_since"`
}

type stateMsg struct {
	Ready bool   `json:"ready"`
	Why   string `json:"why"`
}

// slaveTopic is the JSON and Sparkplug name of the reference set's slave
// at pos (mqtt's default: order code and position).
func slaveTopic(pos int) string { return fmt.Sprintf("%s-%d", referenceSet[pos], pos) }

// checkJSON checks the JSON scheme during a fault: every slave whose data
// is not good has a pd message saying so (stale with stale_since, or
// invalid), no pd of it says good after that, and the retained state
// topic says not ready with the same words as /readyz.
func checkJSON(t *testing.T, in *mqtttest.Inbox, from int, row *matrixRow) {
	t.Helper()
	for pos := range referenceSet {
		w := row.want(pos)
		if w.quality == "good" || len(simSignals(pos)) == 0 {
			continue
		}
		m := in.WaitFrom(t, from, "/pd/"+slaveTopic(pos), 5*time.Second, func(m mqtttest.Message) bool {
			var q pdQuality
			return json.Unmarshal(m.Payload, &q) == nil && q.Quality != "good"
		})
		var q pdQuality
		_ = json.Unmarshal(m.Payload, &q)
		if q.Quality != w.quality || (q.Quality == "stale") != (q.StaleSince > 0) {
			t.Errorf("JSON: pd/%s says quality %q stale_since %d, want %q", slaveTopic(pos), q.Quality, q.StaleSince, w.quality)
		}
	}
	// The retained state says not ready, in the words of /readyz (the
	// first such message may say an earlier step of the fault: a slave
	// lost before another device is found in its place).
	deadline := time.Now().Add(5 * time.Second)
	for {
		var says []string
		for _, m := range in.All()[from:] {
			var s stateMsg
			if strings.HasSuffix(m.Topic, "/state") && json.Unmarshal(m.Payload, &s) == nil && !s.Ready {
				if strings.Contains(s.Why, row.ready) {
					return
				}
				says = append(says, s.Why)
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("JSON: the state topic said %q, want not ready in the words of /readyz %q", says, row.ready)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkJSONRecovered checks that after the fault the last pd of each
// slave whose data was not good says good again, and the last state
// message says ready (messages from the start of the row on: the cycle
// row recovers by itself, before the fault is "cleared").
func checkJSONRecovered(t *testing.T, in *mqtttest.Inbox, from int, row *matrixRow) {
	t.Helper()
	last := func(suffix string) (mqtttest.Message, bool) {
		all := in.All()
		for i := len(all) - 1; i >= from; i-- {
			if strings.HasSuffix(all[i].Topic, suffix) {
				return all[i], true
			}
		}
		return mqtttest.Message{}, false
	}
	var wait []string
	for pos := range referenceSet {
		if row.want(pos).quality != "good" && len(simSignals(pos)) > 0 {
			wait = append(wait, "/pd/"+slaveTopic(pos))
		}
	}
	wait = append(wait, "/state")
	deadline := time.Now().Add(5 * time.Second)
	for _, suffix := range wait {
		for {
			m, ok := last(suffix)
			var q pdQuality
			var st stateMsg
			good := ok && (suffix == "/state" && json.Unmarshal(m.Payload, &st) == nil && st.Ready ||
				suffix != "/state" && json.Unmarshal(m.Payload, &q) == nil && q.Quality == "good")
			if good {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("JSON: after the fault the last …%s says %s", suffix, m.Payload)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// simSignals says whether the reference set's slave at pos has process
// data (the couplers have none, so no pd and no DDATA).
func simSignals(pos int) []string {
	if strings.HasPrefix(referenceSet[pos], "EK") {
		return nil
	}
	return []string{referenceSet[pos]}
}

// checkSparkplugDeaths checks that each device the row names got a DDEATH
// during the fault, and that none of them had a DDATA after its DDEATH.
func checkSparkplugDeaths(t *testing.T, in *mqtttest.Inbox, from int, row *matrixRow) {
	t.Helper()
	for _, pos := range row.sparkplugDeath {
		in.WaitFrom(t, from, "/DDEATH/"+nodeAndDevice(in, slaveTopic(pos)), 5*time.Second, nil)
	}
	for pos := range referenceSet {
		if row.want(pos).quality != "stale" || len(simSignals(pos)) == 0 || slices.Contains(row.sparkplugDeath, pos) {
			continue
		}
		// Answering but stale: one DDATA carrying the stale quality.
		in.WaitFrom(t, from, "/DDATA/"+nodeAndDevice(in, slaveTopic(pos)), 5*time.Second, func(m mqtttest.Message) bool {
			return sparkplugQuality(m.Payload) == sparkplug.QualityStale
		})
	}
}

// checkSparkplugBirths checks that each device that died got a DBIRTH
// after the fault cleared, before any DDATA of it.
func checkSparkplugBirths(t *testing.T, in *mqtttest.Inbox, from int, row *matrixRow) {
	t.Helper()
	for _, pos := range row.sparkplugDeath {
		dev := nodeAndDevice(in, slaveTopic(pos))
		// From its death on (the cycle row's device is born again before
		// the fault is "cleared").
		after := from
		for i, m := range in.All()[:from] {
			if strings.HasSuffix(m.Topic, "/DDEATH/"+dev) {
				after = i + 1
			}
		}
		m := in.WaitFrom(t, after, "/"+dev, 8*time.Second, func(m mqtttest.Message) bool {
			return strings.Contains(m.Topic, "/DBIRTH/") || strings.Contains(m.Topic, "/DDATA/")
		})
		if !strings.Contains(m.Topic, "/DBIRTH/") {
			t.Errorf("Sparkplug: %s came back with %s before a DBIRTH", dev, m.Topic)
		}
	}
}

// nodeAndDevice returns "<node>/<device>" of a Sparkplug device topic seen
// so far (the node id is the agent's).
func nodeAndDevice(in *mqtttest.Inbox, device string) string {
	for _, m := range in.All() {
		parts := strings.Split(m.Topic, "/")
		if len(parts) == 5 && parts[0] == "spBv1.0" && parts[4] == device {
			return parts[3] + "/" + device
		}
	}
	return "?/" + device
}

// sparkplugQuality returns the Quality property of the first metric that
// has one, or -1.
func sparkplugQuality(payload []byte) int64 {
	var p sparkplug.Payload
	if sparkplug.DecodePayload(payload, &p) != nil {
		return -1
	}
	for _, m := range p.Metrics {
		for _, prop := range m.Properties {
			if prop.Key == sparkplug.PropertyQuality {
				return int64(prop.Int)
			}
		}
	}
	return -1
}
