package contract

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// The files beside a segment at shm (e.g. /dev/shm/ecagent.shm):
//
//   - shm itself: the agent creates it (shm.Create), the cycle process
//     attaches to it; the agent removes it when it stops the cycle
//     process or finds it abandoned.
//   - [BusInfoPath]: the bus description; the cycle process writes it,
//     the agent reads it and removes it with the segment.
//   - [LegacyCycleConfigPath] and [LegacyAgentConfigPath]: configurations
//     earlier agents wrote there; no process writes them any more, the
//     agent recognises a cycle process started with the first and removes
//     both with the segment.
//   - shm + ".d": the directory of the cycle process's maintenance
//     socket, which the cycle process makes and removes itself
//     (cycle/maintenance).
//   - [AgentLockPath]: the lock the agent serving the segment holds
//     (flock) for as long as it runs; it removes it when it stops.
//
// Other users may create names in /dev/shm: every process opens these
// files only when [CheckOwnFile] accepts them, and removes only those.

// LegacyCycleConfigPath is where agents before the configuration pipe
// (ecagent-cycle --config-fd) wrote the cycle configuration of the segment
// at shm.
func LegacyCycleConfigPath(shm string) string { return shm + ".cycle.json" }

// LegacyAgentConfigPath is where agents before ecagent-cycle wrote their
// whole configuration for the cycle process (then `ecagent cycle`).
func LegacyAgentConfigPath(shm string) string { return shm + ".yaml" }

// AgentLockPath is the file whose exclusive flock the agent serving the
// segment at shm holds while it runs: a second agent configured with the
// same segment finds it held and stops, instead of attaching to the first
// one's cycle process and taking its share of the segment's rings.
func AgentLockPath(shm string) string { return shm + ".agent.lock" }

// SideFiles returns the files beside the segment at shm that the agent
// removes with it: the bus description and the legacy configurations.
func SideFiles(shm string) []string {
	return []string{BusInfoPath(shm), LegacyCycleConfigPath(shm), LegacyAgentConfigPath(shm)}
}

// CheckOwnFile returns nil if path is a regular file of this process's
// user, not followed if a symbolic link; else an error saying what it is,
// matching fs.ErrNotExist if there is none. The files beside a segment
// are checked with it: other users may create names in /dev/shm.
func CheckOwnFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return CheckOwnFileInfo(path, fi)
}

// CheckOwnFileInfo is [CheckOwnFile] for the file at path, already
// stat'ed (Lstat, or Stat of the open file) as fi.
func CheckOwnFileInfo(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return fmt.Errorf("%s is a symbolic link (to %s): refusing to follow it", path, target)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%v)", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to user %d, not to this process's user %d: refusing to use it", path, st.Uid, os.Geteuid())
	}
	return nil
}

// SocketPair returns the two ends of a fresh AF_UNIX SOCK_SEQPACKET
// socket pair (it keeps frame boundaries), close-on-exec: the link the
// agent hands a cycle process (--link-fd, end a) and the simulated
// segment's process (ecagent sim --link-fd, end b) through
// exec.Cmd.ExtraFiles. Each side turns its end into a link itself
// (master/link.FileLink).
func SocketPair() (a, b *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socket pair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "socketpair-a"), os.NewFile(uintptr(fds[1]), "socketpair-b"), nil
}
