package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// TestNoisyCableShowsWhereItIs: a noisy cable on port 1 of slave 3 (the
// simulator's noisy fault) shows in ecagent_slave_port_errors on slave 3,
// port 1 and nowhere else as an error of the slave's own, and in
// `ecagent crc` through the running agent on the same slave and port.
func TestNoisyCableShowsWhereItIs(t *testing.T) {
	w := newWire(t, "cable")
	sock := filepath.Join(t.TempDir(), "sim.sock")
	startSim(t, w, strings.Join(referenceSet, ","), "--control", sock)
	shmPath := fmt.Sprintf("/dev/shm/ecagent-cable-%d.shm", os.Getpid())
	cmd := exec.Command(ecagentBinary(t), "run", "--bus.interface", w.MasterEnd, "--cycle.shm", shmPath,
		"--metrics.listen", "127.0.0.1:0", "--mqtt.enabled=false", "--status.interval", "1s", "--bus.expectedslaves", "7")
	a := startProcess(t, cmd)
	t.Cleanup(func() {
		stopAgent(t, a)
		cyclereap.Stop(t, shmPath)
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log())
		}
	})
	addr := a.loggedAddr(t, "metrics endpoint", 30*time.Second)
	waitReady(t, addr, 30*time.Second)
	ctl := dialControl(t, sock)
	ctl("noisy 3 1 20")

	// The cycle process reads the counters once a second.
	var own map[string]float64
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		own = portErrors(scrapeText(t, addr))
		if own["3/1/rx_error"] > 0 || time.Now().After(end) {
			break
		}
	}
	if own["3/1/rx_error"] == 0 {
		t.Fatalf("no RX errors on slave 3, port 1 in 15 s; port error series: %v", own)
	}
	for k, v := range own {
		if v > 0 && !strings.HasPrefix(k, "3/1/") && !strings.HasSuffix(k, "/forwarded_rx_error") {
			t.Errorf("ecagent_slave_port_errors %s = %v: only slave 3, port 1 has a noisy cable", k, v)
		}
	}
	out, err := exec.Command(ecagentBinary(t), "crc", "--json", "--interval", "0", "--iface", w.MasterEnd,
		"--cycle.shm", shmPath).Output()
	if err != nil {
		t.Fatalf("ecagent crc: %v", err)
	}
	if !regexp.MustCompile(`"rx_error":\s*[1-9]`).Match(out) {
		t.Errorf("ecagent crc shows no RX error:\n%s", out)
	}
	t.Logf("slave 3 port 1: %v RX errors, %v invalid frames", own["3/1/rx_error"], own["3/1/invalid_frame"])
}

var portErrorLine = regexp.MustCompile(`(?m)^ecagent_slave_port_errors\{([^}]*)\} (\S+)$`)

// portErrors returns ecagent_slave_port_errors by "position/port/counter".
func portErrors(text string) map[string]float64 {
	out := map[string]float64{}
	label := func(labels, name string) string {
		m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(labels)
		if m == nil {
			return ""
		}
		return m[1]
	}
	for _, m := range portErrorLine.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		out[label(m[1], "position")+"/"+label(m[1], "port")+"/"+label(m[1], "counter")] = v
	}
	return out
}
