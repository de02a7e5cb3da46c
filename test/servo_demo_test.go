package test

import (
	"fmt"
	"os"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// TestServoDemo runs `ecagent run` with each ready-made servo
// configuration of deploy/examples (a simulated EK1100 and AKD, distributed
// clocks, one CiA 402 drive) and checks from the metrics endpoint that the
// drive reached operation enabled, distributed clocks are on with the
// configured SYNC0, and the controller error and the clocks' differences
// are measured.
func TestServoDemo(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		file  string
		sync0 float64 // seconds
	}{
		{"servo-csv-1ms.yaml", 0.001},
		{"servo-cst-125us.yaml", 0.000125},
	} {
		t.Run(tc.file, func(t *testing.T) {
			addr := testsupport.FreeAddr(t)
			path := fmt.Sprintf("/dev/shm/ecagent-servo-%d.shm", os.Getpid())
			a := startAgent(t, "--config", "../deploy/examples/"+tc.file, "--cycle.shm", path,
				"--status.interval", "0", "--metrics.listen", addr, "--metrics.window", "1s",
				"--mqtt.embedded", testsupport.FreeAddr(t))
			t.Cleanup(func() { _ = a.cmd.Process.Signal(syscall.SIGTERM); _ = a.cmd.Wait() })
			a.waitLog(t, `state="operation enabled"`, 30*time.Second)
			// The figures asserted below, once the cycle has observed enough.
			count := func(fams map[string]*dto, name string) float64 {
				if f := fams[name]; f != nil && len(f.GetMetric()) > 0 && f.GetMetric()[0].GetHistogram() != nil {
					return float64(f.GetMetric()[0].GetHistogram().GetSampleCount())
				}
				return 0
			}
			var fams map[string]*dto
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				fams = scrape(t, addr)
				if count(fams, "ecagent_dc_controller_error_seconds") >= 100 && count(fams, "ecagent_dc_time_difference_seconds") >= 100 {
					break
				}
				if time.Now().After(deadline) {
					break // the assertions below say what is missing
				}
			}
			value := func(name string) float64 {
				f := fams[name]
				if f == nil || len(f.GetMetric()) == 0 {
					t.Fatalf("%s missing from the scrape", name)
				}
				m := f.GetMetric()[0]
				switch {
				case m.GetGauge() != nil:
					return m.GetGauge().GetValue()
				case m.GetCounter() != nil:
					return m.GetCounter().GetValue()
				case m.GetHistogram() != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
				return -1
			}
			if v := value("ecagent_drive_state"); v != 5 {
				t.Errorf("ecagent_drive_state = %v, want 5 (operation enabled)", v)
			}
			if v := value("ecagent_drive_error_code"); v != 0 {
				t.Errorf("ecagent_drive_error_code = %#x, want 0", int(v))
			}
			if v := value("ecagent_dc_enabled"); v != 1 {
				t.Errorf("ecagent_dc_enabled = %v", v)
			}
			if v := value("ecagent_dc_sync0_cycle_seconds"); v != tc.sync0 {
				t.Errorf("ecagent_dc_sync0_cycle_seconds = %v, want %v", v, tc.sync0)
			}
			if v := value("ecagent_dc_controller_error_seconds"); v < 100 {
				t.Errorf("%v controller error observations", v)
			}
			if v := value("ecagent_dc_time_difference_seconds"); v < 100 {
				t.Errorf("%v DC time difference observations", v)
			}

			// The drive, the DC controller and the mailbox polling run in
			// the cycle without allocating.
			_ = a.cmd.Process.Signal(syscall.SIGTERM)
			_ = a.cmd.Wait()
			// Allocations of the recovery worker (woken when a loaded host
			// makes frames late at 125 µs) are the process's, not the
			// cycle's: the report counts its episodes.
			m := regexp.MustCompile(`mallocs_in_cycle=(\d+) gc_in_cycle=\d+ recovery_episodes=(\d+)`).FindStringSubmatch(a.log())
			switch {
			case m == nil:
				t.Errorf("no cycle process report in the log:\n%s", a.log())
			case m[1] != "0" && m[2] == "0":
				t.Errorf("cycle process report mallocs_in_cycle=%s with no recovery episode, want 0", m[1])
			case m[1] != "0":
				t.Logf("mallocs_in_cycle=%s during %s recovery episodes (frames late on this host)", m[1], m[2])
			}
		})
	}
}
