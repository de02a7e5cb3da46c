package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"syscall"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master/link"
)

// Serve receives frames on l, carries each through the segment and sends
// the answer back, until ctx is done; then it returns nil. Frames that are
// not EtherCAT or are malformed are counted (Stats) and not answered.
// Answers a delay fault holds back (Faults.Delay) are sent after the delay;
// the segment keeps serving other goroutines' calls meanwhile. With
// WithLogger, each state change of each device is logged at info level.
//
// An interface that goes down, loses its carrier or disappears for a while
// (ENETDOWN, ENXIO, ENODEV, ENOBUFS and the like) does not end Serve: it
// counts the errors (Stats.LinkErrs), logs the first of each outage, and
// keeps trying every few milliseconds until the link works again. Other
// link errors, and a closed link, end it with an error.
func (s *Segment) Serve(ctx context.Context, l link.Link) error {
	buf := make([]byte, link.MaxFrameSize)
	sv := &server{s: s, l: l, ctx: ctx, log: s.opts.logger}
	if sv.log != nil {
		sv.log.Info("simulated segment serving", "devices", len(s.devices))
	}
	defer sv.stopTimer()
	keepP := false
	if k, ok := l.(link.WaitKeeper); ok && s.opts.waitKeepsP {
		k.SetWaitKeepsP(true)
		defer k.SetWaitKeepsP(false)
		keepP = true
	}
	var lastYield time.Time
	for ctx.Err() == nil {
		n, at, done, err := sv.receive(buf)
		if done || err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		ok, hold := s.process(buf[:n], true, at)
		if !ok {
			continue
		}
		hold += s.opts.delay.next()
		if hold > 0 && sv.wait(hold) {
			return nil
		}
		if done, err := sv.send(buf[:n]); done || err != nil {
			return err
		}
		if sv.log != nil {
			s.logStateChanges(sv.log)
		}
		if keepP {
			lastYield = yieldIfDue(lastYield)
		}
	}
	return nil
}

// server is the state of one Serve: the link, the wait timer and whether
// the link is in an outage.
type server struct {
	s     *Segment
	l     link.Link
	ctx   context.Context
	log   *slog.Logger // nil: quiet
	timer *time.Timer
	down  bool // in an outage of the link
}

// receive receives the next frame into buf. n is 0 when there is nothing
// to answer; done reports that Serve is to end, with err or nil.
func (sv *server) receive(buf []byte) (n int, at int64, done bool, err error) {
	n, at, err = sv.s.receive(sv.l, buf)
	switch {
	case err == nil:
		return n, at, false, nil
	case errors.Is(err, link.ErrTimeout):
		return 0, 0, false, nil
	case sv.ctx.Err() != nil:
		return 0, 0, true, nil
	case transientLinkError(err):
		return 0, 0, sv.outage("recv", err), nil
	default:
		return 0, 0, true, fmt.Errorf("sim: serve: %w", err)
	}
}

// send sends an answer; done reports that Serve is to end, with err or
// nil. A send that works again ends an outage.
func (sv *server) send(frame []byte) (done bool, err error) {
	err = sv.l.Send(frame)
	if err == nil {
		if sv.down {
			sv.down = false
			if sv.log != nil {
				sv.log.Info("simulated segment: link up again")
			}
		}
		return false, nil
	}
	sv.s.mu.Lock()
	sv.s.stats.SendErrs++
	sv.s.mu.Unlock()
	switch {
	case errors.Is(err, link.ErrClosed):
		if sv.ctx.Err() != nil {
			return true, nil
		}
		return true, fmt.Errorf("sim: serve: %w", err)
	case transientLinkError(err):
		return sv.outage("send", err), nil
	}
	return false, nil
}

// outage counts a link error of an outage, logs the first of each, and
// waits before the next try; it reports whether ctx is done.
func (sv *server) outage(op string, err error) bool {
	sv.s.mu.Lock()
	sv.s.stats.LinkErrs++
	sv.s.mu.Unlock()
	if !sv.down && sv.log != nil {
		sv.log.Warn("simulated segment: link down, retrying", "op", op, "err", err)
	}
	sv.down = true
	return sv.wait(linkRetry)
}

// wait sleeps for d or until ctx is done; it reports whether ctx is.
func (sv *server) wait(d time.Duration) bool {
	if sv.timer == nil {
		sv.timer = time.NewTimer(d)
	} else {
		sv.timer.Reset(d)
	}
	select {
	case <-sv.ctx.Done():
		return true
	case <-sv.timer.C:
		return false
	}
}

func (sv *server) stopTimer() {
	if sv.timer != nil {
		sv.timer.Stop()
	}
}

// serveYieldEvery is how often Serve, waiting without handing its P off,
// yields to the Go scheduler while frames come: to the runtime a goroutine
// that waits in a raw system call never stops running, and it would
// otherwise be preempted by a signal after 10 ms, in the middle of a
// frame as likely as between two.
const serveYieldEvery = 5 * time.Millisecond

// yieldIfDue yields when serveYieldEvery has passed since last, and
// returns the time of the last yield.
func yieldIfDue(last time.Time) time.Time {
	now := time.Now()
	if now.Sub(last) < serveYieldEvery {
		return last
	}
	runtime.Gosched()
	return now
}

// receive reads the next frame from l and returns it with the segment time
// it arrived at, -1 when l cannot tell. A link that can wait without
// reading (link.Waiter) and tells each frame's receive time (link.Poller)
// is waited on, then polled: the devices then keep time by the wire, and a
// frame that queued while the simulator was held up by its host (a
// process data watchdog of 100 ms is shorter than some stalls of a loaded
// host) still arrives when the master sent it. n is 0, with no error, when
// the frame waited for was gone.
func (s *Segment) receive(l link.Link, buf []byte) (n int, at int64, err error) {
	deadline := time.Now().Add(s.opts.recvTimeout)
	wp, ok := l.(interface {
		link.Waiter
		link.Poller
	})
	if !ok {
		n, err = l.Recv(buf, deadline)
		return n, -1, err
	}
	if err := wp.Wait(deadline); err != nil {
		return 0, -1, err
	}
	n, rx, err := wp.Poll(buf)
	if n == 0 || err != nil || rx == 0 {
		return n, -1, err
	}
	// How long ago the kernel took the frame in, bounded so that a step
	// of the wall clock cannot move the segment's time far; on the
	// segment's own clock, from one reading of the wall and monotonic
	// clocks.
	now := time.Now()
	age := min(max(now.UnixNano()-rx, 0), int64(time.Second))
	if s.opts.clock != nil {
		return n, s.now() - age, nil
	}
	return n, int64(now.Sub(s.start)) - age, nil
}

// linkRetry is how long Serve waits after a link error it rides through.
const linkRetry = 5 * time.Millisecond

// transientLinkError reports whether err says the interface is down, has
// no carrier or is gone for now: errors that end when the link comes back.
func transientLinkError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENETDOWN, syscall.ENXIO, syscall.ENODEV,
		syscall.ENOBUFS, syscall.EAGAIN, syscall.ENETUNREACH, syscall.EHOSTDOWN, syscall.EIO} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// logStateChanges logs the devices whose AL status changed since the last
// call.
func (s *Segment) logStateChanges(log *slog.Logger) {
	s.mu.Lock()
	type change struct {
		i        int
		from, to esc.ALStatus
		code     esc.ALStatusCode
	}
	var changes []change
	for i, d := range s.devices {
		now := esc.ALStatus{State: d.esm.state, Error: d.esm.err}
		if now != s.states[i] || d.esm.code != s.codes[i] {
			changes = append(changes, change{i, s.states[i], now, d.esm.code})
			s.states[i], s.codes[i] = now, d.esm.code
		}
	}
	s.mu.Unlock()
	for _, c := range changes {
		d := s.devices[c.i]
		attrs := []any{"position", c.i, "device", d.name, "from", c.from.String(), "to", c.to.String()}
		if c.code != esc.ALNoError {
			attrs = append(attrs, "code", c.code.String())
		}
		log.Info("device state changed", attrs...)
	}
}

// Run is the entry point of `ecagent sim`: it opens the interface ifname
// for raw EtherCAT frames and serves a segment of devs on it until ctx is
// done, logging each device's state changes. The devices become part of
// the segment.
func Run(ctx context.Context, ifname string, devs []*Device, logger *slog.Logger, opts ...Option) error {
	if len(devs) == 0 {
		return errors.New("sim: no devices")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	seg := NewSegment(devs, append([]Option{WithLogger(logger)}, opts...)...)
	return seg.RunInterface(ctx, ifname)
}

// RunInterface opens the interface ifname for raw EtherCAT frames and
// serves the segment on it until ctx is done, as Run does; for callers
// that need the segment itself (its Faults) while it serves. It applies
// WithPreset and logs to the segment's logger (WithLogger).
func (s *Segment) RunInterface(ctx context.Context, ifname string) error {
	if len(s.devices) == 0 {
		return errors.New("sim: no devices")
	}
	logger := s.opts.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The segment receives the master's frames, from the master's address.
	l, err := link.Open(ifname, link.SegmentConfig())
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	defer l.Close()
	if p := s.opts.preset; p != nil {
		if err := s.Preset(p.first, p.state); err != nil {
			return err
		}
	}
	for i, d := range s.devices {
		id := d.Identity()
		logger.Info("simulated device", "position", i, "device", d.Name(),
			"vendor", fmt.Sprintf("%#08x", id.VendorID), "product", fmt.Sprintf("%#08x", id.ProductCode))
		for _, n := range d.Notes() {
			logger.Warn("simulated device: its description is not fully honoured", "position", i, "device", d.Name(), "note", n)
		}
	}
	err = s.Serve(ctx, l)
	st := s.Stats()
	logger.Info("simulated segment stopped", "frames", st.Frames, "answered", st.Answered, "dropped", st.Dropped,
		"link_errors", st.LinkErrs)
	return err
}

// RunSpecs is Run for devices named by specs (models or SII image files,
// see NewDevice).
func RunSpecs(ctx context.Context, ifname string, specs []string, logger *slog.Logger, opts ...Option) error {
	devs, err := ParseDevices(specs)
	if err != nil {
		return err
	}
	return Run(ctx, ifname, devs, logger, opts...)
}
