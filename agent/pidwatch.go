package agent

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// pidWatch watches a process this agent did not start (a cycle process it
// attached to after a restart) through a pidfd. Unlike kill(pid, 0), a
// pidfd is readable as soon as the process has ended, also while it is a
// zombie its parent has not yet reaped, and it can never refer to another
// process that was given the same PID later.
type pidWatch struct{ fd int }

// openPidWatch opens a pidWatch on pid and checks, through it, that pid
// is still the cycle process on shmPath: a PID read from a segment may
// have been reused before the pidfd pinned it.
func openPidWatch(pid int, shmPath string) (*pidWatch, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	w := &pidWatch{fd: fd}
	if w.exited() || !isCycleProcess(pid, shmPath) {
		w.close()
		return nil, fmt.Errorf("process %d is not the cycle process on %s", pid, shmPath)
	}
	return w, nil
}

// exited reports whether the process has ended. An error polling the
// pidfd counts as ended: a process the agent cannot watch must not be
// shown as running.
func (w *pidWatch) exited() bool {
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err != nil || (n > 0 && fds[0].Revents != 0)
	}
}

// close releases the pidfd.
func (w *pidWatch) close() { _ = unix.Close(w.fd) }
