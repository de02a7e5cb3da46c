package master_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/sim"
)

// silentLink is a segmentLink that answers nothing until silent frames
// have been sent: a segment still powering up, or a simulator not yet
// serving.
type silentLink struct {
	*segmentLink
	silent atomic.Int32
}

func (l *silentLink) Send(frame []byte) error {
	if l.silent.Add(-1) >= 0 {
		return nil // nobody there yet
	}
	return l.segmentLink.Send(frame)
}

// TestScanWaitsForASegmentThatIsNotThereYet: the first count gets no
// answer for several tries; the scan waits (up to Config.StateTimeout)
// instead of failing, and a segment that never answers fails after it
// with ErrNoResponse.
func TestScanWaitsForASegmentThatIsNotThereYet(t *testing.T) {
	for _, c := range []struct {
		name   string
		silent int32
		ok     bool
	}{{"answers after ten frames", 10, true}, {"never answers", 1 << 30, false}} {
		t.Run(c.name, func(t *testing.T) {
			l := &silentLink{segmentLink: newSegmentLink(sim.NewSegment(newDevices(t, "EK1100", "EL2004")))}
			l.silent.Store(c.silent)
			cfg := master.Config{Timeout: 5 * time.Millisecond, StateTimeout: 500 * time.Millisecond, Logger: testLogger(t)}
			m, err := master.New(l, &cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			start := time.Now()
			slaves, err := m.Scan(context.Background())
			switch {
			case c.ok && (err != nil || len(slaves) != 2):
				t.Errorf("Scan = %d slaves, %v; want the 2 once they answer", len(slaves), err)
			case !c.ok && !errors.Is(err, master.ErrNoResponse):
				t.Errorf("Scan of a silent segment: %v, want ErrNoResponse", err)
			case !c.ok && time.Since(start) < cfg.StateTimeout:
				t.Errorf("gave up after %v, before the state timeout %v", time.Since(start), cfg.StateTimeout)
			}
		})
	}
}
