package maintenance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Where the control socket lives, and who may serve and use it.
//
// The segment's directory is often /dev/shm, where every user may create
// names: a socket beside the segment could be made by anyone first, and a
// maintenance command run as root would then send its writes to that
// process and print its answers as the agent's. So the socket lives in a
// directory of its own beside the segment, SocketDir (<cycle.shm>.d), which
// only the agent's user can create entries in:
//
//   - the server (the cycle process) creates the directory with mkdirat,
//     opens it without following a symbolic link, and serves only in a
//     directory of its own user (an existing one another user made, or a
//     symbolic link, is refused, never used or removed); its mode is set to
//     DirMode through the descriptor, and the socket is bound and given
//     SocketMode inside it, never through a path another user could change;
//   - the server admits only clients that are root, its own user, or in the
//     directory's group (SO_PEERCRED, SO_PEERGROUPS), as the file modes do;
//   - the client takes the agent's user to be the owner of the segment file,
//     which must own the socket directory too, and trusts that user only if
//     it is root, the client's own user, or the owner of the segment's
//     directory when nobody else may create names there (/run/ecagent, not
//     /dev/shm); it talks only to a server running as root or as that user
//     (SO_PEERCRED).

// DirSuffix is appended to the shared-memory segment's path to name the
// directory of its control socket.
const DirSuffix = ".d"

// SocketName is the control socket's name in its directory.
const SocketName = "ctl"

// DirMode is the permission of the control socket's directory: the owner
// alone creates entries, its group may reach the socket.
const DirMode = 0o750

// SocketMode is the permission of the control socket: the owner and its
// group may connect.
const SocketMode = 0o660

// legacySuffix named the control socket of earlier versions, beside the
// segment (<cycle.shm>.ctl), where any user of /dev/shm could make it.
const legacySuffix = ".ctl"

// SocketDir returns the directory of the control socket of the cycle
// process whose shared-memory segment is shm, e.g. /dev/shm/ecagent.shm.d.
func SocketDir(shm string) string { return shm + DirSuffix }

// SocketPath returns the control socket of the cycle process whose
// shared-memory segment is shm, e.g. /dev/shm/ecagent.shm.d/ctl.
func SocketPath(shm string) string { return filepath.Join(SocketDir(shm), SocketName) }

// ErrNotServed is the error of Dial when no process serves the segment's
// control socket: no socket directory, no segment, no socket, or a stale
// one nobody listens on. Any other error of Dial is a socket that is there
// but not to be trusted.
var ErrNotServed = errors.New("no process serves the control socket")

// socketDir is the control socket's directory, open without following a
// symbolic link: what is done in it is done through the descriptor.
type socketDir struct {
	path string
	fd   int
	// uid and gid own the directory.
	uid, gid int
}

// close closes the descriptor.
func (d *socketDir) close() { _ = unix.Close(d.fd) }

// at returns a path that names name in the directory itself, whatever
// becomes of d.path: /proc/self/fd/N/name; d.path/name where /proc is not
// mounted. It also keeps a socket's path within the 108 bytes of sun_path.
func (d *socketDir) at(name string) string {
	fdPath := "/proc/self/fd/" + strconv.Itoa(d.fd)
	if _, err := os.Stat(fdPath); err != nil {
		return filepath.Join(d.path, name)
	}
	return fdPath + "/" + name
}

// stat returns the status of name in the directory, not following a
// symbolic link.
func (d *socketDir) stat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// makeSocketDir makes path the control socket's directory of this
// process's user: created (mkdirat, mode 0700 until DirMode is set through
// the descriptor) when there is none, else taken over only if it is a
// directory of this user. A symbolic link or a directory of another user
// is refused and left alone: another user may have planted it.
func makeSocketDir(path string) (*socketDir, error) {
	parent, base := filepath.Dir(path), filepath.Base(path)
	pfd, err := unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: parent, Err: err}
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, base, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, describeNotDir(path, err)
	}
	d := &socketDir{path: path, fd: fd}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		d.close()
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	d.uid, d.gid = int(st.Uid), int(st.Gid)
	if euid := os.Geteuid(); d.uid != euid {
		d.close()
		return nil, fmt.Errorf("%s belongs to user %d, not to this process's user %d: refusing to serve there "+
			"(another user may have made it; remove it, or give cycle.shm a directory of the agent's own)", path, d.uid, euid)
	}
	if st.Mode&0o7777 != DirMode {
		if err := unix.Fchmod(fd, DirMode); err != nil {
			d.close()
			return nil, &os.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	return d, nil
}

// describeNotDir turns the error of opening path as a directory without
// following a symbolic link into one that says what is there.
func describeNotDir(path string, err error) error {
	fi, lerr := os.Lstat(path)
	switch {
	case lerr != nil:
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return fmt.Errorf("%s is a symbolic link (to %s): refusing to follow it", path, target)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory (%v)", path, fi.Mode().Type())
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// typeName names the file type of a stat mode.
func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	}
	return "a device"
}

// ownerOf returns the owner of fi.
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// openTrusted opens the control socket's directory of the segment shm for
// a client and returns it with the agent's user (its uid), after checking
// that the directory and the segment belong to that user and that the user
// is one to trust: root, the caller's own user, or the owner of the
// segment's directory when nobody else may create names there. The error
// matches ErrNotServed when there is no directory or no segment.
func openTrusted(shm string) (*socketDir, error) {
	path := SocketDir(shm)
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		if _, lerr := os.Lstat(shm + legacySuffix); lerr == nil {
			return nil, fmt.Errorf("%s is there, the control socket of an earlier version of ecagent or a name another "+
				"user made; this version serves %s: restart the agent, or remove it", shm+legacySuffix, SocketPath(shm))
		}
		return nil, fmt.Errorf("%s: %w", path, ErrNotServed)
	}
	if err != nil {
		if errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("%s: %w (the agent's group may use it)", path, err)
		}
		return nil, describeNotDir(path, err)
	}
	d := &socketDir{path: path, fd: fd}
	if err := d.trust(shm); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// trust checks d, the open socket directory of segment shm, for a client.
func (d *socketDir) trust(shm string) error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: d.path, Err: err}
	}
	d.uid, d.gid = int(st.Uid), int(st.Gid)
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%s may be written by users other than its owner (mode %#o): not the agent's socket directory",
			d.path, st.Mode&0o7777)
	}
	seg, err := os.Lstat(shm)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no segment: %w", shm, ErrNotServed)
	case err != nil:
		return err
	case !seg.Mode().IsRegular():
		return fmt.Errorf("%s is not the agent's segment: not a regular file (%v)", shm, seg.Mode().Type())
	case ownerOf(seg) != d.uid:
		return fmt.Errorf("%s belongs to user %d but the segment %s to user %d: refusing to trust its socket "+
			"(another user may have made the directory)", d.path, d.uid, shm, ownerOf(seg))
	}
	if d.uid == 0 || d.uid == os.Geteuid() {
		return nil
	}
	parent := filepath.Dir(shm)
	pi, err := os.Stat(parent)
	if err != nil {
		return err
	}
	if p := ownerOf(pi); (p == 0 || p == d.uid) && pi.Mode().Perm()&0o022 == 0 {
		return nil
	}
	return fmt.Errorf("%s and the segment belong to user %d, neither root nor you, in %s where other users may "+
		"create names (mode %v): anyone could have made them, refusing to trust them; give cycle.shm a directory "+
		"of the agent's own (as /run/ecagent of the systemd unit)", d.path, d.uid, parent, pi.Mode())
}

// peer is the credentials of the process at the other end of a Unix
// socket: SO_PEERCRED, and SO_PEERGROUPS for its supplementary groups.
type peer struct {
	pid, uid, gid int
	groups        []int
}

// peerOf returns the credentials of the process at the other end of c.
func peerOf(c syscall.Conn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var p peer
	var opErr error
	if err := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		if cred, opErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); opErr != nil {
			return
		}
		p = peer{pid: int(cred.Pid), uid: int(cred.Uid), gid: int(cred.Gid)}
		p.groups, opErr = peerGroups(int(fd))
	}); err != nil {
		return peer{}, err
	}
	if opErr != nil {
		return peer{}, fmt.Errorf("peer credentials: %w", opErr)
	}
	return p, nil
}

// peerGroups returns the supplementary groups of the peer of the socket
// fd (SO_PEERGROUPS, Linux 4.13); none on a kernel without it.
func peerGroups(fd int) ([]int, error) {
	buf := make([]uint32, 64)
	for {
		n := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch errno {
		case 0:
			groups := make([]int, n/4)
			for i := range groups {
				groups[i] = int(buf[i])
			}
			return groups, nil
		case unix.ERANGE:
			buf = make([]uint32, n/4+1)
		case unix.ENOPROTOOPT, unix.ENODATA:
			return nil, nil // an older kernel, or no credentials: the primary group only
		default:
			return nil, errno
		}
	}
}

// inGroup reports whether p is in group gid.
func (p peer) inGroup(gid int) bool {
	if p.gid == gid {
		return true
	}
	for _, g := range p.groups {
		if g == gid {
			return true
		}
	}
	return false
}
