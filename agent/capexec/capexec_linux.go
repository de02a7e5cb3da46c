package capexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/contract"
)

// Granted says what Start gave the child.
type Granted struct {
	// Caps are the capabilities asked for that this process holds
	// (permitted): the most the child holds.
	Caps contract.Caps
	// Bounding reports whether the child's bounding set was narrowed to
	// the capabilities asked for, which takes CAP_SETPCAP (root has it,
	// the systemd unit's user does not). Without it the child's bounding
	// set is this process's, and no_new_privs keeps it from regaining
	// anything through it.
	Bounding bool
	// NoNewPrivs reports whether the child runs with no_new_privs: all
	// but a non-root process's child whose program carries file
	// capabilities (see Start).
	NoNewPrivs bool
}

// Start starts cmd (exec.Cmd.Start) as a child that holds no capability
// beyond keep: its effective, permitted, inheritable and ambient sets are
// keep as far as this process holds it (permitted), the ambient set
// carries them across the execve of a non-root user, its bounding set is
// keep where this process may narrow it (CAP_SETPCAP: a root without
// the unit), and it runs with no_new_privs, so that neither the program
// nor anything it executes (a set-user-ID program, file capabilities)
// can ever hold more. As root, with the bounding set narrowed, execve
// gives the child keep and nothing else; without it (a container's root,
// no CAP_SETPCAP) no_new_privs limits what execve gives root — its
// bounding set — to keep.
//
// One exception: a non-root process starting a program that carries file
// capabilities (setcap, README.md's install without the unit, the Helm
// chart's non-root alternative) leaves no_new_privs unset, which would
// disable them. The child then holds the file's capabilities (within its
// bounding set), never one this process holds for itself: file
// capabilities cancel the ambient set, and the inheritable set is keep.
//
// The calling process keeps everything it holds; only the thread that
// forks the child is narrowed, and it ends when the child has started.
func Start(cmd *exec.Cmd, keep contract.Caps) (Granted, error) {
	var g Granted
	var err error
	noNewPrivs := os.Geteuid() == 0 || !fileCapabilities(cmd.Path)
	onThreadOfItsOwn(func() {
		if g, err = narrow(keep, noNewPrivs); err != nil {
			err = fmt.Errorf("starting %s with %v only: %w", cmd.Path, keep, err)
			return
		}
		err = cmd.Start()
	})
	return g, err
}

// onThreadOfItsOwn runs f on an OS thread that ends when f returns: f may
// change the thread's credentials, and no other goroutine ever runs with
// them. The process's main thread is not used: the runtime cannot end it
// (it keeps a locked goroutine's main thread parked), and /proc/PID/status
// shows the main thread's capabilities as the process's.
func onThreadOfItsOwn(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked after f: the thread ends with this goroutine
		if unix.Gettid() == unix.Getpid() {
			// The main thread, locked here: the goroutine started now
			// runs on another one.
			onThreadOfItsOwn(f)
			runtime.UnlockOSThread()
			return
		}
		f()
	}()
	<-done
}

// narrow makes the calling thread's capabilities those a child started
// from it may hold: keep, as far as the thread holds it. It changes the
// bounding set first (dropping from it takes CAP_SETPCAP, which the
// capset after it gives up), then the effective, permitted and
// inheritable sets, then the ambient set (a capability is raised there
// only while permitted and inheritable), and sets no_new_privs if asked.
func narrow(keep contract.Caps, noNewPrivs bool) (Granted, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return Granted{}, fmt.Errorf("capget: %w", err)
	}
	permitted := contract.Caps(data[0].Permitted) | contract.Caps(data[1].Permitted)<<32
	effective := contract.Caps(data[0].Effective) | contract.Caps(data[1].Effective)<<32
	g := Granted{Caps: keep & permitted}
	if effective.Has(contract.CapSetPCAP) {
		for c := range contract.Capability(64) {
			if keep.Has(c) {
				continue
			}
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				if errors.Is(err, unix.EINVAL) {
					break // past the kernel's last capability
				}
				return g, fmt.Errorf("dropping %v from the bounding set: %w", c, err)
			}
		}
		g.Bounding = true
	}
	// EINVAL: a kernel before 4.3, without ambient capabilities.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return g, fmt.Errorf("clearing the ambient set: %w", err)
	}
	for i := range data {
		word := uint32(g.Caps >> (32 * i))
		data[i] = unix.CapUserData{Effective: word, Permitted: word, Inheritable: word}
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return g, fmt.Errorf("capset %v: %w", g.Caps, err)
	}
	for _, c := range g.Caps.List() {
		// Refused (SECBIT_NO_CAP_AMBIENT_RAISE, an old kernel): a child of
		// a non-root user goes without c, and the cycle process says so.
		_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(c), 0, 0)
	}
	if noNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return g, fmt.Errorf("no_new_privs: %w", err)
		}
	}
	var err error
	g.NoNewPrivs, err = threadNoNewPrivs()
	return g, err
}

// threadNoNewPrivs reports whether the calling thread has no_new_privs
// (set here, or inherited: the unit's NoNewPrivileges=).
func threadNoNewPrivs() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return false, fmt.Errorf("no_new_privs: %w", err)
	}
	return v == 1, nil
}

// fileCapabilities reports whether the program at path carries file
// capabilities (the security.capability attribute setcap writes).
func fileCapabilities(path string) bool {
	n, err := unix.Getxattr(path, "security.capability", nil)
	return err == nil && n > 0
}
