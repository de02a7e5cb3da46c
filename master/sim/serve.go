package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/master/link"
)

// Serve receives frames on l, carries each through the segment and sends
// the answer back, until ctx is done; then it returns nil. It returns an
// error when the link fails. Frames that are not EtherCAT or are malformed
// are counted (Stats) and not answered. With WithLogger, each state change
// of each device is logged at info level.
func (s *Segment) Serve(ctx context.Context, l link.Link) error {
	buf := make([]byte, link.MaxFrameSize)
	log := s.opts.logger
	if log != nil {
		log.Info("simulated segment serving", "devices", len(s.devices))
	}
	for {
		if ctx.Err() != nil {
			return nil
		}
		n, err := l.Recv(buf, time.Now().Add(s.opts.recvTimeout))
		switch {
		case err == nil:
		case errors.Is(err, link.ErrTimeout):
			continue
		case ctx.Err() != nil:
			return nil
		default:
			return fmt.Errorf("sim: serve: %w", err)
		}
		if !s.Process(buf[:n]) {
			continue
		}
		s.opts.delay.hold()
		if err := l.Send(buf[:n]); err != nil {
			s.mu.Lock()
			s.stats.SendErrs++
			s.mu.Unlock()
			if errors.Is(err, link.ErrClosed) {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("sim: serve: %w", err)
			}
		}
		if log != nil {
			s.logStateChanges(log)
		}
	}
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
	l, err := link.Open(ifname, nil)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	defer l.Close()
	seg := NewSegment(devs, append([]Option{WithLogger(logger)}, opts...)...)
	if p := seg.opts.preset; p != nil {
		if err := seg.Preset(p.first, p.state); err != nil {
			return err
		}
	}
	for i, d := range devs {
		id := d.Identity()
		logger.Info("simulated device", "position", i, "device", d.Name(),
			"vendor", fmt.Sprintf("%#08x", id.VendorID), "product", fmt.Sprintf("%#08x", id.ProductCode))
	}
	err = seg.Serve(ctx, l)
	st := seg.Stats()
	logger.Info("simulated segment stopped", "frames", st.Frames, "answered", st.Answered, "dropped", st.Dropped)
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
