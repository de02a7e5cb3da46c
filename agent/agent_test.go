package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestAttachOrStartRefusesForeignSegment(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Cycle.SHM = filepath.Join(dir, "ecagent.shm")
	if err := os.WriteFile(cfg.Cycle.SHM, []byte("not a segment, someone else's file"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := attachOrStart(context.Background(), cfg, quiet)
	if err == nil || !errors.Is(err, shm.ErrIncompatible) || !strings.Contains(err.Error(), cfg.Cycle.SHM) {
		t.Fatalf("foreign file: %v", err)
	}
	if b, _ := os.ReadFile(cfg.Cycle.SHM); string(b) != "not a segment, someone else's file" {
		t.Error("the foreign file was touched")
	}
}

func TestLayoutHoldsTwoSecondsOfSamples(t *testing.T) {
	for _, c := range []struct {
		period time.Duration
		slots  int
	}{{time.Millisecond, 2048}, {250 * time.Microsecond, 8192}, {50 * time.Microsecond, 65536}, {time.Second, 1024}} {
		cfg := config.Default()
		cfg.Cycle.Period = contract.Duration(c.period)
		l := layoutFor(cfg)
		if l.SampleSlots != c.slots || l.Period != c.period || l.Validate() != nil {
			t.Errorf("period %v: %d slots (want %d), period %v, %v", c.period, l.SampleSlots, c.slots, l.Period, l.Validate())
		}
	}
}
