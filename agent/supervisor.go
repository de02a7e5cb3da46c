package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/capexec"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// CycleProcess is a handle on the cycle process: started by this process
// (cmd set) or found running after an agent restart (cmd nil).
type CycleProcess struct {
	path    string // cycle.shm
	seg     *shm.Segment
	info    *contract.BusInfo
	pid     int
	watch   *pidWatch // a cycle process found running, not started here
	cmd     *exec.Cmd
	sim     *exec.Cmd
	exited  chan struct{} // closed when a child cycle process has exited
	waitErr error
	// report is what a cycle process this agent started told of its
	// bring-up (--report-fd: nothing once it runs, why when it failed);
	// reported is closed once it is read to its end.
	report   []byte
	reported chan struct{}
	// startBy is when a started cycle process must be in cyclic
	// operation.
	startBy time.Time
	// granted is what a cycle process this agent started was given of
	// the agent's capabilities.
	granted capexec.Granted
}

// heartbeatFresh is how recent the heartbeat of a cycle process must be
// for an agent to attach to it rather than start a new one.
const heartbeatFresh = 2 * time.Second

// attachOrStart finds a running cycle process for cfg (after an agent
// restart) or starts a new one, and waits until it is in cyclic operation.
func attachOrStart(ctx context.Context, cfg config.Config, log *slog.Logger) (*CycleProcess, error) {
	prog, err := FindCycleProgram(cfg, log)
	if err != nil {
		return nil, err
	}
	cp, attached, err := attachOrLaunch(cfg, prog, log)
	if err != nil || attached {
		return cp, err
	}
	return cp.awaitCyclic(ctx, log)
}

// attachOrLaunch finds a running cycle process for cfg (after an agent
// restart: attached) or starts a new one, which is then bringing the bus
// up (see poll), running prog.
func attachOrLaunch(cfg config.Config, prog CycleProgram, log *slog.Logger) (cp *CycleProcess, attached bool, err error) {
	path := cfg.Cycle.SHM
	seg, err := attachOwn(path)
	switch {
	case err == nil:
		if p, ok := runningCycle(seg); ok {
			info, ierr := contract.ReadBusInfo(contract.BusInfoPath(path))
			if ierr == nil && info.CyclePID == p {
				w, werr := openPidWatch(p, path)
				if werr == nil {
					log.Info("attached to the running cycle process", "pid", p, "segment", path)
					return &CycleProcess{path: path, seg: seg, info: info, pid: p, watch: w}, true, nil
				}
				log.Warn("cannot watch the running cycle process; starting a new one", "pid", p, "segment", path, "err", werr)
			}
		}
		if p := seg.Heartbeat().CyclePID(); p > 0 && syscall.Kill(p, 0) == nil && isCycleProcess(p, path) {
			// Alive but not beating: stuck or stopped. Two masters on one
			// segment must never run, so it goes before a new one starts.
			log.Warn("killing a cycle process whose heartbeat stopped", "pid", p, "segment", path)
			_ = syscall.Kill(p, syscall.SIGKILL)
			for range 100 {
				if syscall.Kill(p, 0) != nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		_ = seg.Close()
		log.Info("removing the segment of a cycle process that is gone", "segment", path)
		removeSegmentFiles(path)
	case errors.Is(err, fs.ErrNotExist):
	case errors.As(err, new(*shm.StaleError)):
		log.Info("removing a segment left from before the last boot", "segment", path)
		removeSegmentFiles(path)
	default:
		// A foreign file, or one of another ecagent version whose cycle may
		// still run: never delete what we do not understand.
		return nil, false, fmt.Errorf("cycle.shm %s: %w (stop the process using it or remove the file, or choose another cycle.shm)", path, err)
	}
	cp, err = launchCycle(cfg, prog, log, 0)
	return cp, false, err
}

// runningCycle reports the PID of the live cycle process using seg: one
// that exists and whose heartbeat is recent.
func runningCycle(seg *shm.Segment) (int, bool) {
	pid := seg.Heartbeat().CyclePID()
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	_, mono, ok := seg.Heartbeat().Read()
	if !ok {
		return 0, false
	}
	now := shm.Now()
	return pid, now-mono < int64(heartbeatFresh)
}

// isCycleProcess reports whether pid runs a cycle process on the segment
// at shmPath (the PID in a segment may have been reused by an unrelated
// process since).
func isCycleProcess(pid int, shmPath string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return isCycleCommand(strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), shmPath)
}

// isCycleCommand reports whether args is the command line of a cycle
// process on the segment at shmPath, whatever program runs it
// (cycle.program, ecagent-cycle, or ecagent in its hidden mode `ecagent
// cycle`): one started by this agent (`PROGRAM [cycle] --shm <shm> …`),
// one an earlier agent started with a configuration file beside the
// segment (`PROGRAM --config <shm>.cycle.json …`), or `ecagent cycle
// --config <shm>.yaml` of an agent from before ecagent-cycle; each must
// not be left to run beside a new one. A cycle process on another
// segment is not one.
func isCycleCommand(args []string, shmPath string) bool {
	for i := 1; i+1 < len(args); i++ {
		switch {
		case args[i] == "--shm" && args[i+1] == shmPath:
			return true
		case args[i] == "--config" && (args[i+1] == contract.LegacyCycleConfigPath(shmPath) || args[i+1] == contract.LegacyAgentConfigPath(shmPath)):
			return true
		}
	}
	return false
}

// removeSegmentFiles removes the segment and the files beside it
// (contract.SideFiles), each only if it is a regular file of this
// process's user: a name another user planted (a symlink, a file of
// theirs) is left alone.
func removeSegmentFiles(path string) {
	for _, p := range append([]string{path}, contract.SideFiles(path)...) {
		if contract.CheckOwnFile(p) == nil {
			_ = os.Remove(p)
		}
	}
}

// layoutFor sizes the segment: at least two seconds of samples (so an
// agent busy for a moment loses nothing), within the ring limits.
func layoutFor(cfg config.Config) shm.Layout {
	l := shm.DefaultLayout()
	want := uint64(2*time.Second/time.Duration(cfg.Cycle.Period)) + 1
	slots := 1 << bits.Len64(want-1)
	l.SampleSlots = min(max(slots, 1024), 1<<20)
	l.Period = time.Duration(cfg.Cycle.Period)
	return l
}

// StartCycle creates the segment cfg.Cycle.SHM and starts the cycle
// process — the cycle program prog (FindCycleProgram) with its configuration
// (config.Config.CycleConfig) through a pipe, no file — and, for the built-in
// simulated segment, the simulator process (`ecagent sim`) on the other
// end of a socket pair, then waits for cyclic operation. A non-zero cycles
// makes the cycle process stop by itself after that many cycles
// (benchmarks). The segment file must not exist. A cycle process that
// does not bring the bus up gives a *BringUpError.
func StartCycle(ctx context.Context, cfg config.Config, prog CycleProgram, log *slog.Logger, cycles uint64) (*CycleProcess, error) {
	cp, err := launchCycle(cfg, prog, log, cycles)
	if err != nil {
		return nil, err
	}
	return cp.awaitCyclic(ctx, log)
}

// launchCycle is StartCycle up to the cycle process started: it is then
// bringing the bus up (see poll).
func launchCycle(cfg config.Config, prog CycleProgram, log *slog.Logger, cycles uint64) (*CycleProcess, error) {
	path := cfg.Cycle.SHM
	cp, err := newCycleProcess(cfg, log)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*CycleProcess, error) {
		cp.stop(log, time.Second)
		return nil, err
	}
	cc, err := json.MarshalIndent(cfg.CycleConfig(), "", "  ")
	if err != nil {
		return fail(fmt.Errorf("cycle configuration: %w", err))
	}
	cfgRead, cfgWrite, reportRead, reportWrite, err := cyclePipes()
	if err != nil {
		return fail(err)
	}
	defer cfgRead.Close()
	defer reportWrite.Close()
	reading := false
	defer func() {
		if !reading {
			_ = reportRead.Close()
		}
	}()
	writing := false
	defer func() {
		if !writing {
			_ = cfgWrite.Close()
		}
	}()
	args := append(slices.Clone(prog.Args), "--shm", path)
	if cycles > 0 {
		args = append(args, "--cycles", fmt.Sprint(cycles))
	}
	var extra []*os.File
	if cfg.Simulated() {
		mf, err := cp.startSimulator(cfg)
		if err != nil {
			return fail(err)
		}
		defer mf.Close()
		args = append(args, "--link-fd", "3")
		extra = append(extra, mf)
	}
	args = append(args, "--config-fd", fmt.Sprint(3+len(extra)))
	extra = append(extra, cfgRead)
	args = append(args, "--report-fd", fmt.Sprint(3+len(extra)))
	extra = append(extra, reportWrite)
	cp.cmd = exec.Command(prog.Path, args...)
	cp.cmd.ExtraFiles = extra
	cp.cmd.Stdout, cp.cmd.Stderr = os.Stderr, os.Stderr
	// Its own session: a Ctrl-C meant for the agent does not stop the
	// machine, and the cycle outlives an agent that crashes.
	cp.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cp.startProgram(cfg); err != nil {
		return fail(fmt.Errorf("starting the cycle process: %w", err))
	}
	_ = cfgRead.Close()
	_ = reportWrite.Close() // the cycle's copy is the only one: its exit ends the report
	reading, writing = true, true
	cp.follow(cc, cfgWrite, reportRead)
	log.Info("cycle process started", "pid", cp.pid, "segment", path, "capabilities", cp.granted.Caps, "bounding_set_narrowed", cp.granted.Bounding, "no_new_privs", cp.granted.NoNewPrivs)
	cp.startBy = time.Now().Add(4*time.Duration(cfg.Bus.StateTimeout) + 10*time.Second)
	return cp, nil
}

// startProgram starts cp.cmd, the cycle process for cfg, holding no
// capability but those its configuration needs
// (contract.Config.Capabilities) and the agent holds: never one the
// agent holds for itself alone, as CAP_SYS_ADMIN for the forensics'
// tracefs.
func (cp *CycleProcess) startProgram(cfg config.Config) error {
	g, err := capexec.Start(cp.cmd, cfg.CycleConfig().Capabilities())
	cp.granted = g
	return err
}

// simCapabilities are the capabilities of the built-in simulated
// segment's process (simArgs): CAP_SYS_NICE for its SCHED_FIFO priority,
// nothing else (its link is a socket pair, it locks no memory).
func simCapabilities(cfg config.Config) contract.Caps {
	if cfg.Cycle.Priority > 0 {
		return contract.CapsOf(contract.CapSysNice)
	}
	return 0
}

// maxReport bounds what the agent reads of a cycle process's bring-up
// report.
const maxReport = 64 << 10

// awaitCyclic waits until the started cycle process is in cyclic
// operation. When it is not (a *BringUpError, or ctx ended) it is stopped
// and its segment removed.
func (cp *CycleProcess) awaitCyclic(ctx context.Context, log *slog.Logger) (*CycleProcess, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := cp.poll()
		if err != nil {
			cp.stop(log, time.Second)
			return nil, err
		}
		if done {
			return cp, nil
		}
		select {
		case <-ctx.Done():
			cp.stop(log, time.Second)
			return nil, ctx.Err()
		case <-cp.exited:
		case <-tick.C:
		}
	}
}

// poll looks, without waiting, at a started cycle process bringing the
// bus up: done once it is in cyclic operation (it wrote the bus
// description), a *BringUpError once it exited without getting there or
// its time (4 bus.statetimeout and 10 s) ran out — the caller then stops
// it.
func (cp *CycleProcess) poll() (done bool, err error) {
	info, ierr := contract.ReadBusInfo(contract.BusInfoPath(cp.path))
	if ierr == nil && info.CyclePID == cp.pid {
		cp.info = info
		return true, nil
	}
	select {
	case <-cp.exited:
		return false, cp.bringUpFailure()
	default:
	}
	if time.Now().After(cp.startBy) {
		return false, &BringUpError{Reason: busstate.BringUpFailed, Detail: "the cycle process did not reach cyclic operation in time",
			Err: errors.New("the cycle process did not reach cyclic operation in time")}
	}
	return false, nil
}

// bringUpFailure says why a cycle process exited during bring-up: what it
// reported (reason and error), else its exit code.
func (cp *CycleProcess) bringUpFailure() error {
	err := fmt.Errorf("the cycle process exited during bring-up: %v", cp.waitErr)
	bu := &BringUpError{Reason: busstate.BringUpFailed, Detail: err.Error(), Err: err}
	if ee, ok := cp.waitErr.(*exec.ExitError); ok && ee.ExitCode() == contract.ExitBusMismatch {
		bu.Reason = busstate.BringUpNotAsConfigured
	}
	select {
	case <-cp.reported: // its exit closed the pipe: read at once
	case <-time.After(time.Second):
		return bu
	}
	var f contract.BringUpFailure
	if json.Unmarshal(bytes.TrimSpace(cp.report), &f) == nil && f.Error != "" {
		bu.Reason, bu.Detail = busstate.ParseBringUpReason(f.Reason), f.Error
		bu.Err = fmt.Errorf("the cycle process exited during bring-up (%v): %s", cp.waitErr, f.Error)
	}
	return bu
}

// BringUpError says the cycle process did not bring the bus up: it exited
// during bring-up, or did not reach cyclic operation in time. Reason
// classifies it (the report's contract.BringUpFailure.Reason, or the exit
// code contract.ExitBusMismatch for a segment not as configured), Detail says
// it in the cycle process's words. The agent tries again; other errors
// of starting a cycle process (its segment's place, its program) are the
// agent's own.
type BringUpError struct {
	Reason busstate.BringUpReason
	Detail string
	Err    error
}

func (e *BringUpError) Error() string { return e.Err.Error() }
func (e *BringUpError) Unwrap() error { return e.Err }

// Segment returns the shared memory the cycle process writes.
func (cp *CycleProcess) Segment() *shm.Segment { return cp.seg }

// Info returns the bus description the cycle process wrote at start.
func (cp *CycleProcess) Info() *contract.BusInfo { return cp.info }

// PID returns the cycle process's process ID.
func (cp *CycleProcess) PID() int { return cp.pid }

// Exited returns a channel closed when a cycle process this process
// started has exited (nil for one found running after a restart).
func (cp *CycleProcess) Exited() <-chan struct{} { return cp.exited }

// Stop asks the cycle process to take the bus down and exit, waits up to
// grace, kills it after that, and removes the segment files.
func (cp *CycleProcess) Stop(log *slog.Logger, grace time.Duration) { cp.stop(log, grace) }

// Alive reports whether the cycle process still runs.
func (cp *CycleProcess) Alive() bool { return cp.alive() }

// alive reports whether the cycle process still runs.
func (cp *CycleProcess) alive() bool {
	if cp.cmd != nil {
		select {
		case <-cp.exited:
			return false
		default:
			return true
		}
	}
	if cp.watch != nil {
		return !cp.watch.exited()
	}
	return false
}

// stop asks the cycle process to take the bus down and exit, waits up to
// grace for it, and removes the segment files.
func (cp *CycleProcess) stop(log *slog.Logger, grace time.Duration) {
	cp.halt(log, grace)
	if cp.sim != nil && cp.sim.Process != nil {
		_ = cp.sim.Process.Signal(syscall.SIGTERM)
	}
	if cp.seg != nil {
		_ = cp.seg.Close()
	}
	if cp.watch != nil {
		cp.watch.close()
	}
	removeSegmentFiles(cp.path)
}

// halt stops the cycle process (SIGTERM, then SIGKILL after grace) and
// leaves its shared memory open, so that what it wrote last can still be
// read.
func (cp *CycleProcess) halt(log *slog.Logger, grace time.Duration) {
	if cp.pid > 0 && cp.alive() {
		_ = syscall.Kill(cp.pid, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for cp.alive() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if cp.alive() {
			log.Warn("cycle process did not stop; killing it", "pid", cp.pid)
			_ = syscall.Kill(cp.pid, syscall.SIGKILL)
		}
	}
}

// attachOwn is shm.Attach for a segment file of this process's user only:
// a symbolic link or another user's file at path is an error, never
// opened through.
func attachOwn(path string) (*shm.Segment, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("shm: attach: %w", err)
	}
	if err := contract.CheckOwnFileInfo(path, fi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: attach: %w", err)
	}
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		_ = f.Close()
		return nil, fmt.Errorf("shm: attach %s: the file changed while it was opened", path)
	}
	seg, err := shm.AttachFile(f)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return seg, nil
}

// checkSegmentPlace refuses a cycle.shm another user has planted — a
// symbolic link, another user's file — or with a bus description beside
// it that is (the agent would read it as the cycle's). A stale bus
// description of this user is removed. A directory others may write
// without the sticky bit (an emptyDir volume may be one) only gets a
// warning: the checks of every file opened there still hold, others can
// only remove them.
func checkSegmentPlace(path string, log *slog.Logger) error {
	dir := filepath.Dir(path)
	if err := makeDefaultSHMDir(dir, contract.DefaultSHMDir); err != nil {
		return fmt.Errorf("cycle.shm %s: %w", path, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cycle.shm %s: %w", path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cycle.shm %s: %s is not a directory", path, dir)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		log.Warn("other users may remove or rename the segment's files: the directory of cycle.shm is writable by them "+
			"without the sticky bit; prefer a directory only the agent's user can write", "segment", path, "mode", fi.Mode().String())
	}
	if fi, err := os.Lstat(path); err == nil {
		if err := contract.CheckOwnFileInfo(path, fi); err != nil {
			return fmt.Errorf("cycle.shm: %w (remove it or choose another cycle.shm)", err)
		}
	}
	info := contract.BusInfoPath(path)
	switch err := contract.CheckOwnFile(info); {
	case err == nil:
		_ = os.Remove(info)
	case errors.Is(err, fs.ErrNotExist):
	default:
		return fmt.Errorf("cycle.shm %s: %w (remove it or choose another cycle.shm)", path, err)
	}
	return nil
}

// makeDefaultSHMDir creates dir, the directory of cycle.shm, with mode
// 0750 when it is def (the default's, as the systemd unit's
// RuntimeDirectory makes it) and missing; any other directory is the
// user's to make. A user who may not create it is told what to do.
func makeDefaultSHMDir(dir, def string) error {
	if dir != def {
		return nil
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := os.Mkdir(dir, 0o750)
	switch {
	case err == nil:
		return os.Chmod(dir, 0o750) // whatever the umask (the unit's is 0077): the group reaches the socket
	case errors.Is(err, fs.ErrExist):
		return nil
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return fmt.Errorf("the default directory %s is missing and user %d may not create it (%w): create it for the agent's "+
			"user (sudo install -d -m 0750 -o $USER %s), or give cycle.shm a directory of yours, the same for the agent and "+
			"the maintenance commands (export ECAGENT_CYCLE_SHM=/dev/shm/ecagent.shm)", dir, os.Geteuid(), err, dir)
	}
	return err
}

// segmentCreateError explains why the segment could not be created where
// the error alone would not say what to do.
func segmentCreateError(path string, err error) error {
	dir := filepath.Dir(path)
	switch {
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("cycle.shm %s: %s is on a read-only file system; the agent creates the segment there: "+
			"mount a writable tmpfs on it (Kubernetes: an emptyDir with medium Memory on /dev/shm) or choose another cycle.shm: %w",
			path, dir, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("cycle.shm %s: the agent's user %d may not create files in %s; choose a directory it can write: %w",
			path, os.Geteuid(), dir, err)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("cycle.shm %s: %s is full; enlarge it (its tmpfs size=, or a pod's /dev/shm sizeLimit): %w", path, dir, err)
	}
	return err
}

// simArgs are the arguments of the simulated segment's process, serving on
// the inherited socket 3. It answers in real time, but one step below the
// cycle thread, which it must never hold off: on hardware the segment
// takes no CPU at all, and SCHED_FIFO threads of equal priority do not
// preempt each other. For the same reason it keeps off the cycle's core.
func simArgs(cfg config.Config) []string {
	args := []string{"sim", "--link-fd", "3", "--log.level", "warn", "--priority", fmt.Sprint(max(cfg.Cycle.Priority-1, min(cfg.Cycle.Priority, 1)))}
	for _, d := range cfg.Bus.Devices {
		args = append(args, "--devices", d)
	}
	if cfg.Cycle.Core >= 0 {
		args = append(args, "--avoid-core", fmt.Sprint(cfg.Cycle.Core))
	}
	return args
}
