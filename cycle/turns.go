package cycle

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/cycle/rt"
)

// Turns lends the link to acyclic work — slave recovery, reconfiguration —
// while the cycle runs: after each exchange the engine opens a turn that
// lasts until shortly before the next deadline, and takes the link back
// before that deadline. It implements master.Gate: every acyclic
// transaction acquires the link for one frame and releases it after the
// answer.
//
// In steady state (nobody wants a turn) the engine only loads one atomic
// flag. While turns are wanted, an acyclic frame that is lost holds the
// link until its timeout (master.Config.Timeout): keep that short, it can
// delay the next cycle.
type Turns struct {
	tok    chan struct{} // holds a value while the link is free for acyclic work
	until  atomic.Int64  // end of the current turn (monotonic ns); 0 when closed
	want   atomic.Int32  // workers wanting turns
	need   int64         // time one transaction needs, ns
	opened bool          // engine side: a turn is open
}

// NewTurns returns turns for transactions that take up to need each (the
// round trip of one acyclic frame plus margin): a transaction is started
// only if it fits before the end of the turn.
func NewTurns(need time.Duration) *Turns {
	return &Turns{tok: make(chan struct{}, 1), need: int64(need)}
}

// Want tells the engine that a worker needs turns (true) or no longer
// does (false); calls nest.
func (g *Turns) Want(on bool) {
	if on {
		g.want.Add(1)
	} else {
		g.want.Add(-1)
	}
}

// Acquire waits for a turn with room for one transaction and takes the
// link. It returns ctx's error if ctx ends first.
func (g *Turns) Acquire(ctx context.Context) error {
	for {
		select {
		case <-g.tok:
		case <-ctx.Done():
			return ctx.Err()
		}
		until := g.until.Load()
		now := rt.Now()
		if until != 0 && now+g.need <= until {
			return nil
		}
		// Too late in this turn: give the link back and wait for the
		// engine to close it and open the next.
		g.tok <- struct{}{}
		wait := time.Duration(max(until-now, 0)) + 10*time.Microsecond
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release gives the link back after a transaction.
func (g *Turns) Release() { g.tok <- struct{}{} }

// open starts a turn ending at until, if a worker wants one.
func (g *Turns) open(until int64) {
	if g == nil || g.want.Load() == 0 || g.opened {
		return
	}
	g.until.Store(until)
	g.opened = true
	g.tok <- struct{}{}
}

// close ends the turn and takes the link back, waiting for a transaction
// in flight to end.
func (g *Turns) close() {
	if g == nil || !g.opened {
		return
	}
	g.until.Store(0)
	<-g.tok
	g.opened = false
}
