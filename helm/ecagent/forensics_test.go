package ecagent_test

import (
	"strings"
	"testing"
)

// TestForensicsGrantsTracefsOnlyWhenEnabled: by default the pod has
// neither the node's tracefs nor CAP_SYS_ADMIN (the agent says forensics
// are off); forensics.enabled adds both, and tells the agent.
func TestForensicsGrantsTracefsOnlyWhenEnabled(t *testing.T) {
	off := string(render(t, "", "--show-only", "templates/daemonset.yaml"))
	on := string(render(t, "", "--show-only", "templates/daemonset.yaml", "--set", "forensics.enabled=true"))
	for _, s := range []string{"SYS_ADMIN", "/sys/kernel/tracing"} {
		if strings.Contains(off, s) {
			t.Errorf("forensics off, the daemonset has %s", s)
		}
		if !strings.Contains(on, s) {
			t.Errorf("forensics on, the daemonset lacks %s", s)
		}
	}
	for _, want := range []string{"NET_RAW", "SYS_NICE", "IPC_LOCK", "value: \"true\""} {
		if !strings.Contains(on, want) {
			t.Errorf("forensics on, the daemonset lacks %s:\n%s", want, on)
		}
	}
}
