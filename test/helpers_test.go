package test

import (
	"io"
	"net/http"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parseExposition parses a /metrics body in the text format with
// Prometheus's own parser; an exposition that does not parse fails tb.
func parseExposition(tb testing.TB, body io.Reader) map[string]*dto {
	tb.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		tb.Fatalf("the exposition does not parse: %v", err)
	}
	return fams
}

// ready reports whether /readyz of the agent at addr answers 200.
func ready(addr string) bool {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// wantReady fails t unless /readyz of the agent at addr answers 200 now.
func wantReady(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %s", resp.Status)
	}
}

// stopAtCleanup stops the started cmd when the test ends (SIGTERM, then
// waits for it; SIGKILL if it has not stopped within agentStopGrace) and,
// if the test failed, logs what log returns, as the log of what.
func stopAtCleanup(t *testing.T, cmd *exec.Cmd, what string, log func() string) {
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(agentStopGrace):
			t.Errorf("%s did not stop within %v of SIGTERM: killed", what, agentStopGrace)
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", what, log())
		}
	})
}
