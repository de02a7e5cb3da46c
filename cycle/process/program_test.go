package process

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// referenceDevices is the agent's default simulated segment.
var referenceDevices = []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}

func TestCheckCycleFitsRefusesTooShortPeriod(t *testing.T) {
	m, _ := simbus.Start(t, referenceDevices, master.Config{Logger: quiet})
	// A frame through the simulator takes microseconds: 1 µs cannot work,
	// 100 ms always does.
	err := checkCycleFits(m, time.Microsecond, true, quiet)
	if err == nil || !strings.Contains(err.Error(), "shorter than the bus needs") || !strings.Contains(err.Error(), "at least") {
		t.Errorf("1µs period: %v", err)
	}
	if err := checkCycleFits(m, 100*time.Millisecond, false, quiet); err != nil {
		t.Errorf("100ms period: %v", err)
	}
}

// TestBusInfoRoundTrip: what the cycle writes, the agent reads back.
func TestBusInfoRoundTrip(t *testing.T) {
	m, _ := simbus.Start(t, referenceDevices, master.Config{Logger: quiet})
	info := NewBusInfo(m, time.Millisecond)
	path := contract.BusInfoPath(filepath.Join(t.TempDir(), "ecagent.shm"))
	if err := contract.WriteBusInfo(path, info); err != nil {
		t.Fatal(err)
	}
	got, err := contract.ReadBusInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.CyclePID != os.Getpid() || got.Period != time.Millisecond || len(got.Slaves) != len(referenceDevices) ||
		got.Slaves[1].Name != info.Slaves[1].Name || got.ExpectedWKC != info.ExpectedWKC {
		t.Errorf("read back %+v, wrote %+v", got, info)
	}
	if _, err := contract.ReadBusInfo(path + ".missing"); err == nil {
		t.Error("a missing bus description read without error")
	}
}

func TestIsBusMismatch(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&master.SlaveCountError{Expected: 5, Found: 7}, true},
		{errors.Join(errors.New("bring-up"), &master.ALStateError{Position: 2}), true},
		{errors.New("link down"), false},
		{nil, false},
	} {
		if got := IsBusMismatch(c.err); got != c.want {
			t.Errorf("IsBusMismatch(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
