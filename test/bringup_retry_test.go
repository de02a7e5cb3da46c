package test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// TestAgentNeverGivesUpOnItsBus starts an agent on a wire with no segment
// behind it, then half of the segment (5 of the 7 slaves it is configured
// for: a plant's bus half powered), then the whole segment. The agent
// never exits: it tries bring-up again and again with back-off, says on
// /readyz and in the metrics that the bus is not ready and why (nothing
// answers; not as configured, with both counts), and comes up in OP once
// the segment is whole, the same agent process (before, it exited at the
// first failed bring-up: exit status 1, and 3 for the half segment).
func TestAgentNeverGivesUpOnItsBus(t *testing.T) {
	w := newWire(t, "bru")
	path := fmt.Sprintf("/dev/shm/ecagent-bringup-%d.shm", os.Getpid())
	a := startAgent(t, "--bus.interface", w.MasterEnd, "--cycle.shm", path, "--status.interval", "0",
		"--metrics.listen", "127.0.0.1:0", "--bus.expectedslaves", "7", "--bus.statetimeout", "300ms")
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = a.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = a.cmd.Process.Kill()
			<-exited
		}
		cyclereap.Stop(t, path)
	})
	addr := a.loggedAddr(t, "metrics endpoint", 30*time.Second)
	client := &http.Client{Timeout: 5 * time.Second}
	readyz := func() (int, string) {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	scrape := func() map[string]*dto {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		return parseExposition(t, resp.Body)
	}
	failures := func(fams map[string]*dto, reason string) float64 {
		return counter(fams, "ecagent_cycle_process_bringup_failures", map[string]string{"reason": reason})
	}
	// waitUntil waits until cond holds, the agent running all along.
	waitUntil := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !cond() {
			select {
			case <-exited:
				t.Fatalf("the agent exited (%v) while %s:\n%s", exitErr, what, tail(a.log(), 40))
			default:
			}
			if time.Now().After(deadline) {
				code, body := readyz()
				t.Fatalf("%s: not within %v; /readyz %d %q; agent log:\n%s", what, within, code, body, tail(a.log(), 40))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Nothing behind the wire: nothing answers, again and again.
	waitUntil("nothing answers", 60*time.Second, func() bool {
		code, body := readyz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "bring-up failed") &&
			strings.Contains(body, "(no-answer)") && failures(scrape(), "no-answer") >= 2
	})

	// Half the segment: not as configured, both counts named.
	half := startSim(t, w, strings.Join(referenceSet[:5], ","))
	waitUntil("half the segment", 60*time.Second, func() bool {
		code, body := readyz()
		fams := scrape()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "(not-as-configured)") &&
			strings.Contains(body, "found 5 slaves on the segment, configuration expects 7") &&
			failures(fams, "not-as-configured") >= 1 && failures(fams, "no-answer") == 0
	})
	a.waitLog(t, "reason=not-as-configured", 10*time.Second)

	// The whole segment: in OP, without the agent restarting.
	_ = half.Process.Signal(syscall.SIGTERM)
	_ = half.Wait()
	startSim(t, w, strings.Join(referenceSet, ","))
	waitUntil("the whole segment", 60*time.Second, func() bool {
		code, _ := readyz()
		return code == http.StatusOK
	})
	fams := scrape()
	for _, reason := range []string{"link", "no-answer", "not-as-configured", "failed"} {
		if n := failures(fams, reason); n != 0 {
			t.Errorf("in OP: ecagent_cycle_process_bringup_failures{reason=%q} %v, want 0", reason, n)
		}
	}
	if up := counter(fams, "ecagent_cycle_process_up", nil); up != 1 {
		t.Errorf("in OP: ecagent_cycle_process_up %v", up)
	}
	if n := counter(fams, "ecagent_bus_events_total", map[string]string{"kind": "bring-up-failed"}); n < 3 {
		t.Errorf("ecagent_bus_events_total{kind=\"bring-up-failed\"} %v, want the failures counted (3 or more)", n)
	}
	select {
	case <-exited:
		t.Fatalf("the agent exited: %v", exitErr)
	default:
	}
}
