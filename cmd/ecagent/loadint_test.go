package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestInterruptDuringConfigLoad: a command stopped by a signal while it
// loads its configuration exits 130 at once (as any command stopped by a
// signal does), not 2 as if the configuration were bad.
func TestInterruptDuringConfigLoad(t *testing.T) {
	// A large file (just under the size bound) that takes a while to check.
	var b strings.Builder
	b.WriteString("mqtt:\n  signals:\n")
	for b.Len() < 900<<10 {
		b.WriteString("    - \"valves/channel_1.output name=pump\"\n")
	}
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sig  os.Signal
		want int
	}{{os.Interrupt, exitInterrupted}, {syscall.SIGTERM, exitInterrupted}} {
		for _, args := range [][]string{
			{"run", "--config", path}, {"bench", "--config", path}, {"rtcheck", "--config", path}, {"config", "check", path},
		} {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(stopSignal{sig: c.sig})
			var out, errOut strings.Builder
			code := dispatch(ctx, &env{stdout: &out, stderr: &errOut}, args)
			if code != c.want {
				t.Errorf("%s interrupted by %v during the load: exit %d, want %d\n%s", strings.Join(args[:len(args)-1], " "),
					c.sig, code, c.want, errOut.String())
			}
		}
	}
}
