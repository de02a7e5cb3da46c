package process

import (
	"context"
	"log/slog"

	"github.com/ecagent/ecagent/cycle"
	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// serveControl serves the control socket of the segment cfg.Cycle.SHM
// (maintenance.SocketPath) until ctx ends; the returned channel closes when
// it has stopped, and the handler counts the requests served. It
// allocates before it returns, not in cyclic operation (until a client
// connects).
//
// A socket it may not serve — its place taken by another user, a symbolic
// link there — does not stop the cycle: the machine runs on without
// maintenance, which is refused (the toolbox's client refuses such a
// socket too) and reported as an error in the log, an event (a note on
// MQTT) and info.Maintenance, which the agent logs, exports
// (ecagent_maintenance_socket_up) and shows in the unit's status. Letting
// any local user stop the machine by making a name in /dev/shm would be
// worse than a maintenance tool that cannot connect.
func serveControl(ctx context.Context, m *master.Master, e *cycle.Engine, seg *shm.Segment, cfg Config, info *BusInfo, log *slog.Logger) (<-chan struct{}, *maintenance.Handler) {
	// The image is read where the agent reads it, from the segment: the
	// master's own buffer belongs to the cycle thread.
	h := maintenance.NewHandler(m, cfg.Bus.Interface, e).WithImage(seg.Image().Snapshot)
	info.Maintenance = MaintenanceInfo{Socket: maintenance.SocketPath(cfg.Cycle.SHM)}
	srv, err := maintenance.Listen(cfg.Cycle.SHM, h, log)
	if err != nil {
		info.Maintenance.Error = err.Error()
		log.Error("maintenance endpoint refused: the cycle runs without it, maintenance commands cannot reach it",
			"socket", info.Maintenance.Socket, "err", err)
		ev := shm.Event{Kind: shm.EventNote}
		ev.SetText(MaintenanceRefusedNote)
		e.Report(ev)
		done := make(chan struct{})
		close(done)
		return done, h
	}
	log.Info("maintenance endpoint", "socket", srv.Path())
	return srv.Start(ctx), h
}

// MaintenanceRefusedNote is the text of the shm.EventNote a cycle process
// reports when it does not serve its control socket.
const MaintenanceRefusedNote = "maintenance socket refused"
