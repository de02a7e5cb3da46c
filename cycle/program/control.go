package program

import (
	"context"
	"log/slog"

	"github.com/ecagent/ecagent/cycle"
	"github.com/ecagent/ecagent/cycle/control"
	"github.com/ecagent/ecagent/master"
)

// serveControl serves the control socket of the segment cfg.Cycle.SHM
// (control.SocketPath) until ctx ends; the returned channel closes when
// it has stopped. A socket that cannot be made is logged and the cycle
// runs without it.
func serveControl(ctx context.Context, m *master.Master, e *cycle.Engine, cfg Config, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	h := control.NewHandler(m, cfg.Bus.Interface, e)
	srv, err := control.Listen(control.SocketPath(cfg.Cycle.SHM), -1, h, log)
	if err != nil {
		log.Warn("no maintenance endpoint", "err", err)
		close(done)
		return done
	}
	log.Info("maintenance endpoint", "socket", srv.Path())
	go func() { defer close(done); srv.Serve(ctx) }()
	return done
}
