package master_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/sim"
)

// referenceSet is the acontis reference segment.
var referenceSet = []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}

const realSII = "../testdata/real-hw/sii"

// bench is a master talking over an in-process pipe to a simulated segment
// served by its own goroutine.
type bench struct {
	m    *master.Master
	seg  *sim.Segment
	devs []*sim.Device
	link *faultyLink
	logs *testsupport.SyncBuffer
}

// newBench builds the devices, serves them and returns a master on the
// other end of the pipe (not yet scanned).
func newBench(t testing.TB, devices []string, cfg master.Config, opts ...sim.Option) *bench {
	t.Helper()
	devs, seg, masterEnd := simbus.Serve(t, devices, opts...)
	b := &bench{seg: seg, devs: devs, link: &faultyLink{Link: masterEnd}, logs: &testsupport.SyncBuffer{}}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// Generous timeouts: the tests share two cores with other packages'
	// tests, and a frame that is late only because the process was not
	// scheduled must not fail them. Tests of lost frames lose them on purpose.
	if cfg.CycleTimeout == 0 {
		cfg.CycleTimeout = 2 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second
	}
	m, err := master.New(b.link, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.m = m
	t.Cleanup(func() { // before simbus.Serve's: the master closes first
		_ = m.Close()
		if t.Failed() || os.Getenv("MASTER_LOG") != "" {
			t.Logf("master log:\n%s", b.logs.String())
		}
	})
	return b
}

// faultyLink wraps the master's end of the pipe to lose or delay frames on
// demand. It is used from the master's goroutine only.
type faultyLink struct {
	link.Link
	dropSends int      // swallow this many sends: the frame never reaches the segment
	holdNext  bool     // keep the next answer back and report a timeout instead
	held      []byte   // an answer kept back, delivered before the next one (late, stale)
	record    bool     // keep a copy of every frame sent in sent
	sent      [][]byte // frames sent while record was on
}

func (f *faultyLink) Send(frame []byte) error {
	if f.record {
		f.sent = append(f.sent, append([]byte(nil), frame...))
	}
	if f.dropSends > 0 {
		f.dropSends--
		return nil
	}
	return f.Link.Send(frame)
}

func (f *faultyLink) Recv(buf []byte, deadline time.Time) (int, error) {
	if f.held != nil && !f.holdNext {
		n := copy(buf, f.held)
		f.held = nil
		return n, nil
	}
	n, err := f.Link.Recv(buf, deadline)
	if err == nil && f.holdNext {
		f.holdNext = false
		f.held = append([]byte(nil), buf[:n]...)
		return 0, link.ErrTimeout
	}
	return n, err
}

func bringUp(t testing.TB, b *bench) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.m.BringUp(ctx); err != nil {
		t.Fatalf("BringUp: %v", err)
	}
}
