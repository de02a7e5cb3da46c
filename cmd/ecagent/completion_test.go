package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestCompletion: the bash script completes every command and IgH name,
// and is valid bash (and so the zsh one's function).
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh"} {
		code, out, errOut := runCLI(t, context.Background(), nil, "completion", shell)
		if code != exitOK {
			t.Fatalf("completion %s: exit %d: %s", shell, code, errOut)
		}
		for _, c := range commands() {
			if !strings.Contains(out, " "+c.name+" ") && !strings.Contains(out, `"`+c.name+" ") {
				t.Errorf("completion %s lacks %s", shell, c.name)
			}
		}
		if !strings.Contains(out, "reg_read") || !strings.Contains(out, "complete -F _ecagent ecagent") {
			t.Errorf("completion %s:\n%s", shell, out)
		}
		if shell == "bash" {
			if msg, err := exec.Command("bash", "-n", "-c", out).CombinedOutput(); err != nil {
				t.Errorf("bash -n: %v\n%s", err, msg)
			}
		}
	}
	if code, _, _ := runCLI(t, context.Background(), nil, "completion", "fish"); code != exitUsage {
		t.Errorf("completion fish: exit %d, want %d", code, exitUsage)
	}
}
