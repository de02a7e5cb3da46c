package program

import (
	"context"
	"log/slog"

	"github.com/ecagent/ecagent/cycle"
	"github.com/ecagent/ecagent/cycle/control"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// serveControl serves the control socket of the segment cfg.Cycle.SHM
// (control.SocketPath) until ctx ends; the returned channel closes when
// it has stopped, and the handler counts the requests served. A socket
// that cannot be made is logged and the cycle runs without it. It
// allocates before it returns, not in cyclic operation (until a client
// connects).
func serveControl(ctx context.Context, m *master.Master, e *cycle.Engine, seg *shm.Segment, cfg Config, log *slog.Logger) (<-chan struct{}, *control.Handler) {
	// The image is read where the agent reads it, from the segment: the
	// master's own buffer belongs to the cycle thread.
	h := control.NewHandler(m, cfg.Bus.Interface, e).WithImage(seg.Image().Snapshot)
	srv, err := control.Listen(control.SocketPath(cfg.Cycle.SHM), -1, h, log)
	if err != nil {
		log.Warn("no maintenance endpoint", "err", err)
		done := make(chan struct{})
		close(done)
		return done, h
	}
	log.Info("maintenance endpoint", "socket", srv.Path())
	return srv.Start(ctx), h
}
