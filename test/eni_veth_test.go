package test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
	"github.com/ecagent/ecagent/sim"
)

// The ENIs of the tests: written by hand in the shape TwinCAT exports
// (Info, InitCmds with Transition and Validate, ProcessData with Sm2/Sm3
// and RxPdo/TxPdo, Mailbox CoE InitCmds, DC, Cyclic/Frame/Cmd,
// ProcessImage Variables), for the default segment and the CiA 402 drive
// demo; see their heads.
const (
	defaultSegmentENI = "../ethercat/eni/testdata/default-segment.xml"
	servoDemoENI      = "../ethercat/eni/testdata/servo-demo.xml"
)

// eniVariant writes a copy of the ENI at path with edit applied to the
// text of its Config/Slave number slave (0 for the first; -1 for the
// whole file) and returns the copy's path.
func eniVariant(t *testing.T, path string, slave int, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if slave < 0 {
		text = edit(text)
	} else {
		parts := strings.SplitAfter(text, "<Slave>")
		if slave+1 >= len(parts) {
			t.Fatalf("%s has no slave %d", path, slave)
		}
		end := strings.Index(parts[slave+1], "</Slave>")
		parts[slave+1] = edit(parts[slave+1][:end]) + parts[slave+1][end:]
		text = strings.Join(parts, "")
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// readyz returns /readyz's status and body.
func readyz(addr string) (int, string) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestENIDefaultSegment runs the agent from the default segment's ENI
// (bus.eni) over a veth pair against the simulated segment and a
// mosquitto: the segment reaches OP, the EL4132's PDO assignment comes
// from the ENI's CoE init commands, and MQTT publishes the slaves and
// signals under the ENI's names with its data types.
func TestENIDefaultSegment(t *testing.T) {
	needRoot(t)
	w, devs, _ := referenceOnWire(t, "enid")
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/edge"
	sub := mqtttest.MosquittoSub(t, broker.Port, root+"/#")
	addr := testsupport.FreeAddr(t)
	path := fmt.Sprintf("/dev/shm/ecagent-eni-%d.shm", os.Getpid())
	eniPath, err := filepath.Abs(defaultSegmentENI)
	if err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, "--bus.interface", w.MasterEnd, "--bus.eni", eniPath, "--cycle.shm", path, "--status.interval", "0",
		"--metrics.listen", addr, "--site", "plant", "--host", "edge", "--mqtt.broker", broker.URL(), "--mqtt.interval", "50ms")
	t.Cleanup(func() { stopAgent(t, a); cyclereap.Stop(t, path) })
	a.waitLog(t, "cycle started", 30*time.Second)
	a.waitLog(t, `msg="running from an ENI"`, time.Second)
	if code, body := readyz(addr); code != http.StatusOK {
		t.Errorf("/readyz %d %q", code, body)
	}

	devs[3].SetInputs([]byte{0b0101})
	m := sub.WaitFrom(t, 0, "/pd/Term_4_(EL1014)", 10*time.Second, func(m mqtttest.Message) bool {
		return decodePD(t, m).Values["Channel_1.Input"] == true
	})
	want := map[string]any{"Channel_1.Input": true, "Channel_2.Input": false, "Channel_3.Input": true, "Channel_4.Input": false}
	if got := decodePD(t, m).Values; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Term_4_(EL1014): %v, want %v", got, want)
	}
	m = sub.WaitFrom(t, 0, "/pd/Term_6_(EL4132)", 10*time.Second, nil)
	vals := decodePD(t, m).Values
	for _, name := range []string{"AO_Outputs_Channel_1.Analog_output", "AO_Outputs_Channel_2.Analog_output"} {
		if _, ok := vals[name]; !ok {
			t.Errorf("Term_6_(EL4132) lacks %s: %v", name, vals)
		}
	}
	// The toolbox lays the image out as the ENI does: its offsets hold.
	out, err := exec.Command(ecagentBinary(t), "data", "--eni", eniPath, "--iface", w.MasterEnd, "--cycle.shm", path, "--json").Output()
	if err != nil {
		t.Fatalf("ecagent data --eni: %v", err)
	}
	var data struct {
		Inputs    string `json:"inputs"`
		Variables []struct {
			Name  string `json:"name"`
			Value uint64 `json:"value"`
			ENI   uint32 `json:"eni_bit_offset"`
		} `json:"variables"`
	}
	if err := json.Unmarshal(out, &data); err != nil {
		t.Fatalf("ecagent data --eni --json: %v\n%s", err, out)
	}
	values := map[string]uint64{}
	for _, v := range data.Variables {
		values[v.Name] = v.Value
	}
	if values["Term 4 (EL1014).Channel 1.Input"] != 1 || values["Term 4 (EL1014).Channel 2.Input"] != 0 || len(values) != 18 {
		t.Errorf("ecagent data --eni variables: %s", out)
	}
	// Term 4's inputs are bits 344..347 of the ENI's Inputs image: byte 43.
	if in, err := hex.DecodeString(data.Inputs); err != nil || len(in) != 58 || in[43]&0x0f != 0b0101 {
		t.Errorf("the ENI's Inputs image %q (%v): 58 bytes, byte 43's low bits Term 4's 0101", data.Inputs, err)
	}
	meta := sub.WaitFrom(t, 0, "/meta/Term_2_(EL2004)", 10*time.Second, nil)
	if !strings.Contains(string(meta.Payload), `"Channel_1.Output"`) || !strings.Contains(string(meta.Payload), `"bool"`) {
		t.Errorf("meta of Term_2_(EL2004): %s", meta.Payload)
	}
}

// TestENIServoDemo runs the CiA 402 drive demo from its ENI: the drive's
// PDO assignment and mode of operation come from the ENI's CoE init
// commands, DC from its DC settings; the drive reaches operation enabled
// and MQTT carries the ENI's names.
func TestENIServoDemo(t *testing.T) {
	needRoot(t)
	w := newWire(t, "enis")
	devs, err := sim.ParseDevices([]string{"EK1100", "AKD"})
	if err != nil {
		t.Fatal(err)
	}
	simOnWire(t, w, devs)
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	sub := mqtttest.MosquittoSub(t, broker.Port, "ecagent/plant/edge/#")
	eniPath, err := filepath.Abs(servoDemoENI)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "servo.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`bus:
  interface: %s
  eni: %s
drives:
  - slave: 1
    mode: csv
    target: {kind: constant, value: 100000}
    faultreset: manual
    settlecycles: 100
`, w.MasterEnd, eniPath)), 0o644); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/dev/shm/ecagent-eni-servo-%d.shm", os.Getpid())
	addr := testsupport.FreeAddr(t)
	a := startAgent(t, "--config", cfg, "--cycle.shm", path, "--status.interval", "0", "--metrics.listen", addr,
		"--site", "plant", "--host", "edge", "--mqtt.broker", broker.URL(), "--mqtt.interval", "50ms")
	t.Cleanup(func() { stopAgent(t, a); cyclereap.Stop(t, path) })
	a.waitLog(t, `state="operation enabled"`, 30*time.Second)
	fams := scrape(t, addr)
	if v := counter(fams, "ecagent_dc_enabled", nil); v != 1 {
		t.Errorf("ecagent_dc_enabled %v", v)
	}
	m := sub.WaitFrom(t, 0, "/pd/Drive_1_(AKD)", 10*time.Second, func(m mqtttest.Message) bool {
		_, ok := decodePD(t, m).Values["Inputs.Statusword"]
		return ok
	})
	vals := decodePD(t, m).Values
	for _, name := range []string{"Outputs.Controlword", "Outputs.Target_velocity", "Inputs.Velocity_actual_value", "Inputs.Modes_of_operation_display"} {
		if _, ok := vals[name]; !ok {
			t.Errorf("Drive_1_(AKD) lacks %s: %v", name, vals)
		}
	}
	// csv (9), as the ENI's startup SDO and drives[0].mode set it.
	if v := vals["Inputs.Modes_of_operation_display"]; fmt.Sprint(v) != "9" {
		t.Errorf("modes of operation display %v, want 9 (csv: the ENI's startup SDO and the drive's mode)", v)
	}
}

// TestENIMismatch runs the agent from ENIs that do not fit the segment:
// each bring-up is refused as not as configured, naming the slave and the
// field with what was expected and found, on /readyz, in the metrics, in
// the log and in MQTT's bring-up-failed event.
func TestENIMismatch(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name    string
		devices []string
		eni     func(t *testing.T) string
		want    string
	}{
		{"wrong product code at position 3", referenceSet, func(t *testing.T) string {
			return eniVariant(t, defaultSegmentENI, 3, func(s string) string {
				return strings.Replace(s, "<ProductCode>66465874</ProductCode>", "<ProductCode>66531410</ProductCode>", 1)
			})
		}, "slave 3 (Term 4 (EL1014)): product code: expected 0x03f73052, found 0x03f63052 (EL1014)"},
		{"a slave missing", referenceSet[:6], func(*testing.T) string { return defaultSegmentENI },
			"slave 6 (Term 7 (EK1110)): presence: expected vendor 0x00000002 product 0x04562c52 revision 0x00110000, found no slave (the segment has 6 slaves, the configuration 7)"},
		{"an extra slave", append(append([]string(nil), referenceSet...), "EL1014"), func(*testing.T) string { return defaultSegmentENI },
			"slave 7 (not configured): presence: expected no slave (the configuration has 7 slaves), found EL1014"},
		{"a PDO entry the device rejects", []string{"EK1100", "AKD"}, func(t *testing.T) string {
			return eniVariant(t, servoDemoENI, 1, func(s string) string {
				const unmappable = `<InitCmd>
              <Transition>PS</Transition>
              <Comment><![CDATA[clear pdo 0x1600]]></Comment>
              <Timeout>500</Timeout>
              <Ccs>1</Ccs>
              <Index>5632</Index>
              <SubIndex>0</SubIndex>
              <Data>00</Data>
            </InitCmd>
            <InitCmd>
              <Transition>PS</Transition>
              <Comment><![CDATA[map 0x7777:01 into pdo 0x1600]]></Comment>
              <Timeout>500</Timeout>
              <Ccs>1</Ccs>
              <Index>5632</Index>
              <SubIndex>1</SubIndex>
              <Data>10017777</Data>
            </InitCmd>
            `
				j := strings.Index(s, "<CoE>")
				if j < 0 {
					t.Fatal("the drive of the ENI has no CoE init commands")
				}
				k := j + strings.Index(s[j:], "<InitCmd>")
				return s[:k] + unmappable + s[k:]
			})
		}, "slave 1 (Drive 1 (AKD)): startup command SDO 0x1600:01 (map 0x7777:01 into pdo 0x1600) at PS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(t, "enim")
			devs, err := sim.ParseDevices(tc.devices)
			if err != nil {
				t.Fatal(err)
			}
			simOnWire(t, w, devs)
			eniPath, err := filepath.Abs(tc.eni(t))
			if err != nil {
				t.Fatal(err)
			}
			broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
			sub := mqtttest.MosquittoSub(t, broker.Port, "ecagent/plant/edge/#")
			path := fmt.Sprintf("/dev/shm/ecagent-eni-mismatch-%d.shm", os.Getpid())
			addr := testsupport.FreeAddr(t)
			a := startAgent(t, "--bus.interface", w.MasterEnd, "--bus.eni", eniPath, "--cycle.shm", path, "--status.interval", "0",
				"--metrics.listen", addr, "--bus.statetimeout", "500ms", "--site", "plant", "--host", "edge", "--mqtt.broker", broker.URL())
			t.Cleanup(func() { stopAgent(t, a); cyclereap.Stop(t, path) })

			deadline := time.Now().Add(60 * time.Second)
			for {
				code, body := readyz(addr)
				if code == http.StatusServiceUnavailable && strings.Contains(body, "(not-as-configured)") && strings.Contains(body, tc.want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("/readyz %d %q, want not-as-configured with %q; log:\n%s", code, body, tc.want, tail(a.log(), 40))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if n := counter(scrape(t, addr), "ecagent_cycle_process_bringup_failures", map[string]string{"reason": "not-as-configured"}); n < 1 {
				t.Errorf("ecagent_cycle_process_bringup_failures{reason=not-as-configured} %v", n)
			}
			a.waitLog(t, "reason=not-as-configured", 10*time.Second)
			if !strings.Contains(a.log(), tc.want) {
				t.Errorf("the log does not name the slave and field (%q):\n%s", tc.want, tail(a.log(), 30))
			}
			ev := sub.WaitFrom(t, 0, "/events", 10*time.Second, func(m mqtttest.Message) bool {
				return strings.Contains(string(m.Payload), "bring-up-failed")
			})
			if p := string(ev.Payload); !strings.Contains(p, "not-as-configured") || !strings.Contains(p, strings.ReplaceAll(tc.want, `"`, `\"`)) {
				t.Errorf("MQTT bring-up-failed event %s, want not-as-configured with %q", p, tc.want)
			}
		})
	}
}
