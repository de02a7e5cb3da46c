// Package sdnotify tells systemd about the state of a service started with
// Type=notify: that it is ready, what it is doing, that it is still alive
// (the watchdog) and that it is stopping. It speaks the protocol directly —
// newline-separated VARIABLE=value lines in one datagram sent to the
// AF_UNIX socket named by $NOTIFY_SOCKET — so it needs neither cgo nor
// libsystemd.
//
// A process not started by systemd has no $NOTIFY_SOCKET; New then returns
// a nil *Notifier, whose methods do nothing, so callers need no branches.
package sdnotify

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Environment variables systemd sets for a Type=notify service.
const (
	// SocketEnv names the datagram socket that takes notifications: an
	// absolute path, or an abstract socket name starting with '@'.
	SocketEnv = "NOTIFY_SOCKET"
	// WatchdogUSecEnv is the watchdog timeout (WatchdogSec=) in
	// microseconds; unset when the unit has no watchdog.
	WatchdogUSecEnv = "WATCHDOG_USEC"
	// WatchdogPIDEnv is the PID the watchdog timeout is meant for; when
	// set and not this process's, the watchdog belongs to another process.
	WatchdogPIDEnv = "WATCHDOG_PID"
)

// Notifier sends notifications to the service manager. A nil *Notifier is
// valid: every method does nothing and returns nil.
type Notifier struct {
	fd       int
	addr     *unix.SockaddrUnix
	watchdog time.Duration
}

// AddressError says $NOTIFY_SOCKET names something this package cannot
// send to (a relative path, or a vsock address).
type AddressError struct{ Addr string }

func (e *AddressError) Error() string {
	return fmt.Sprintf("sdnotify: %s=%q is neither an absolute path nor an abstract socket name (@...)", SocketEnv, e.Addr)
}

// New reads the environment through getenv (os.Getenv outside tests) and
// returns a Notifier for $NOTIFY_SOCKET, or nil with a nil error when the
// variable is unset: the process was not started by systemd as a
// Type=notify service.
func New(getenv func(string) string) (*Notifier, error) {
	addr := getenv(SocketEnv)
	if addr == "" {
		return nil, nil
	}
	if !strings.HasPrefix(addr, "/") && !strings.HasPrefix(addr, "@") {
		return nil, &AddressError{Addr: addr}
	}
	watchdog, err := watchdogTimeout(getenv, os.Getpid())
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sdnotify: socket: %w", err)
	}
	// x/sys/unix turns a leading '@' into the abstract namespace's NUL.
	return &Notifier{fd: fd, addr: &unix.SockaddrUnix{Name: addr}, watchdog: watchdog}, nil
}

// watchdogTimeout is WATCHDOG_USEC as a duration, 0 when the unit has no
// watchdog or the watchdog is meant for another process.
func watchdogTimeout(getenv func(string) string, pid int) (time.Duration, error) {
	usec := getenv(WatchdogUSecEnv)
	if usec == "" {
		return 0, nil
	}
	if p := getenv(WatchdogPIDEnv); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return 0, fmt.Errorf("sdnotify: %s=%q: %w", WatchdogPIDEnv, p, err)
		}
		if n != pid {
			return 0, nil
		}
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("sdnotify: %s=%q is not a positive number of microseconds", WatchdogUSecEnv, usec)
	}
	return time.Duration(n) * time.Microsecond, nil
}

// WatchdogTimeout returns the unit's watchdog timeout (WatchdogSec=), 0
// when there is none. A service should call Watchdog at least twice
// within it; systemd's documentation suggests every half of it.
func (n *Notifier) WatchdogTimeout() time.Duration {
	if n == nil {
		return 0
	}
	return n.watchdog
}

// Notify sends the given VARIABLE=value assignments in one datagram. It
// never blocks: a full socket buffer is an error (EAGAIN), not a wait.
func (n *Notifier) Notify(assignments ...string) error {
	if n == nil {
		return nil
	}
	if n.fd < 0 {
		return ErrClosed
	}
	for _, a := range assignments {
		if k, _, ok := strings.Cut(a, "="); !ok || k == "" || strings.ContainsRune(a, '\n') {
			return fmt.Errorf("sdnotify: %q is not one VARIABLE=value line", a)
		}
	}
	msg := strings.Join(assignments, "\n")
	if err := unix.Sendto(n.fd, []byte(msg), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, n.addr); err != nil {
		return fmt.Errorf("sdnotify: sending %q to %s: %w", firstLine(msg), n.addr.Name, err)
	}
	return nil
}

// Ready tells systemd that start-up is complete (READY=1): a Type=notify
// unit becomes active, and its watchdog timer starts.
func (n *Notifier) Ready() error { return n.Notify("READY=1") }

// Status sets the free-form status line `systemctl status` shows. Line
// breaks become spaces.
func (n *Notifier) Status(s string) error {
	return n.Notify("STATUS=" + strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}

// Watchdog feeds the watchdog (WATCHDOG=1).
func (n *Notifier) Watchdog() error { return n.Notify("WATCHDOG=1") }

// Stopping tells systemd that the service is shutting down (STOPPING=1).
func (n *Notifier) Stopping() error { return n.Notify("STOPPING=1") }

// Close releases the socket. Safe to call on nil and more than once.
func (n *Notifier) Close() error {
	if n == nil || n.fd < 0 {
		return nil
	}
	err := unix.Close(n.fd)
	n.fd = -1
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// ErrClosed is returned by Notify after Close.
var ErrClosed = errors.New("sdnotify: notifier closed")

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
