package agent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/contract"
)

// SegmentInUseError says that another agent serves the segment: it holds
// the segment's lock (contract.AgentLockPath).
type SegmentInUseError struct {
	// Segment is cycle.shm.
	Segment string
	// PID is the agent holding the lock, 0 when /proc/locks does not
	// tell.
	PID int
}

func (e *SegmentInUseError) Error() string {
	who := "another agent"
	if e.PID > 0 {
		who = fmt.Sprintf("another agent (pid %d)", e.PID)
	}
	return fmt.Sprintf("cycle.shm %s: %s serves this segment; stop it, or give this agent another cycle.shm", e.Segment, who)
}

// segmentLock is the lock of a segment an agent holds (lockSegment).
type segmentLock struct {
	f    *os.File
	path string
}

// Close removes the lock's file, while still holding it, and lets go: a
// taker that opened the file before the removal finds, once it holds the
// lock, that its file is no longer at the path, and opens the new one.
func (l *segmentLock) Close() error {
	_ = os.Remove(l.path)
	return l.f.Close()
}

// lockSegment takes the lock of the segment at path for this agent's
// life: two agents on one segment would both attach to its cycle process
// and split its rings (samples, events) between them, each showing part of
// the bus. The lock is an exclusive flock on a file of this user beside
// the segment (contract.AgentLockPath), taken without waiting, on the file
// that is at the path once held; the file is not passed to children. A
// lock another agent holds is a *SegmentInUseError; a symbolic link or
// another user's file at the lock's name is refused like any file beside
// the segment.
func lockSegment(path string) (*segmentLock, error) {
	lp := contract.AgentLockPath(path)
	for {
		f, fi, err := openLockFile(path, lp)
		if err != nil {
			return nil, err
		}
		for {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			if err != unix.EINTR {
				break
			}
		}
		switch {
		case errors.Is(err, unix.EWOULDBLOCK):
			_ = f.Close()
			return nil, &SegmentInUseError{Segment: path, PID: flockHolder(fi)}
		case err != nil:
			_ = f.Close()
			return nil, fmt.Errorf("cycle.shm %s: lock %s: %w", path, lp, err)
		}
		if now, err := os.Lstat(lp); err == nil && os.SameFile(fi, now) {
			return &segmentLock{f: f, path: lp}, nil
		}
		_ = f.Close() // removed by the agent that held it: take the new one
	}
}

// openLockFile opens (creating) the lock file lp of the segment at path,
// refusing a symbolic link or another user's file.
func openLockFile(path, lp string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, fmt.Errorf("cycle.shm %s: %s is a symbolic link: refusing to follow it", path, lp)
		}
		if e := segmentCreateError(path, err); e != err {
			return nil, nil, e // read-only, not permitted, full: said as for the segment
		}
		return nil, nil, fmt.Errorf("cycle.shm %s: lock: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = contract.CheckOwnFileInfo(lp, fi)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("cycle.shm %s: lock: %w", path, err)
	}
	return f, fi, nil
}

// flockHolder returns the process holding a flock on the file fi, from
// /proc/locks ("1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"), or 0.
func flockHolder(fi os.FileInfo) int {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[1] != "FLOCK" || fs[5] != id {
			continue
		}
		if pid, err := strconv.Atoi(fs[4]); err == nil {
			return pid
		}
	}
	return 0
}
