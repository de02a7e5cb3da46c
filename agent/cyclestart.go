package agent

// The steps of launchCycle (supervisor.go) that stand on their own: the
// segment, the pipes, the simulated segment's process and the tending of
// a started cycle process.

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"

	"github.com/ecagent/ecagent/agent/capexec"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// newCycleProcess creates the segment cfg.Cycle.SHM, in a place checked
// first, for a cycle process about to start.
func newCycleProcess(cfg config.Config, log *slog.Logger) (*CycleProcess, error) {
	path := cfg.Cycle.SHM
	if err := checkSegmentPlace(path, log); err != nil {
		return nil, err
	}
	seg, err := shm.Create(path, layoutFor(cfg))
	if err != nil {
		return nil, segmentCreateError(path, err)
	}
	return &CycleProcess{path: path, seg: seg, exited: make(chan struct{}), reported: make(chan struct{})}, nil
}

// cyclePipes opens the cycle process's two pipes. The configuration goes
// through one (--config-fd): no file another user could plant, read or
// replace, and nothing left behind. What the cycle process tells of its
// bring-up comes back through the other (--report-fd, a
// contract.BringUpFailure).
func cyclePipes() (cfgRead, cfgWrite, reportRead, reportWrite *os.File, err error) {
	cfgRead, cfgWrite, err = os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("cycle configuration: %w", err)
	}
	reportRead, reportWrite, err = os.Pipe()
	if err != nil {
		_ = cfgRead.Close()
		_ = cfgWrite.Close()
		return nil, nil, nil, nil, fmt.Errorf("cycle bring-up report: %w", err)
	}
	return cfgRead, cfgWrite, reportRead, reportWrite, nil
}

// startSimulator starts the simulated segment (`ecagent sim`, this
// executable) in its own session on one end of a socket pair, and returns
// the other end, the cycle process's link (--link-fd), for the caller to
// pass on and close.
func (cp *CycleProcess) startSimulator(cfg config.Config) (*os.File, error) {
	mf, sf, err := contract.SocketPair()
	if err != nil {
		return nil, err
	}
	defer sf.Close()
	exe, err := os.Executable()
	if err != nil {
		_ = mf.Close()
		return nil, err
	}
	cp.sim = exec.Command(exe, simArgs(cfg)...)
	cp.sim.ExtraFiles = []*os.File{sf}
	cp.sim.Stderr = os.Stderr
	cp.sim.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if _, err := capexec.Start(cp.sim, simCapabilities(cfg)); err != nil {
		_ = mf.Close()
		return nil, fmt.Errorf("starting the simulated segment: %w", err)
	}
	go func() { _ = cp.sim.Wait() }()
	return mf, nil
}

// follow tends the started cycle process: it reads its bring-up report
// from reportRead (until the process exits, closing cp.reported), writes
// its configuration cc to cfgWrite, and waits for its exit (closing
// cp.exited). It owns both pipe ends from then on.
func (cp *CycleProcess) follow(cc []byte, cfgWrite, reportRead *os.File) {
	go func() {
		defer close(cp.reported)
		defer reportRead.Close()
		cp.report, _ = io.ReadAll(io.LimitReader(reportRead, maxReport))
	}()
	// Written while the cycle reads, so a configuration larger than the
	// pipe's buffer cannot block; a cycle that exits unread ends it (EPIPE).
	go func() {
		_, _ = cfgWrite.Write(append(cc, '\n'))
		_ = cfgWrite.Close()
	}()
	cp.pid = cp.cmd.Process.Pid
	go func() {
		cp.waitErr = cp.cmd.Wait()
		close(cp.exited)
	}()
}
