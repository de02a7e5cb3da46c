package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// env is a fake environment for New.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// listen opens the receiving end systemd would hold: a datagram socket at
// addr (a path, or @name for the abstract namespace).
func listen(t *testing.T, addr string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func receive(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no notification arrived: %v", err)
	}
	return string(buf[:n])
}

func TestNotificationsReachTheSocket(t *testing.T) {
	for _, addr := range []string{
		filepath.Join(t.TempDir(), "notify"),
		fmt.Sprintf("@ecagent-sdnotify-test-%d", os.Getpid()),
	} {
		t.Run(addr, func(t *testing.T) {
			c := listen(t, addr)
			n, err := New(env{SocketEnv: addr}.get)
			if err != nil || n == nil {
				t.Fatalf("New: %v, %v", n, err)
			}
			defer n.Close()
			for _, tc := range []struct {
				send func() error
				want string
			}{
				{n.Ready, "READY=1"},
				{func() error { return n.Status("cycling: OP,\n7 slaves") }, "STATUS=cycling: OP, 7 slaves"},
				{n.Watchdog, "WATCHDOG=1"},
				{n.Stopping, "STOPPING=1"},
				{func() error { return n.Notify("READY=1", "STATUS=up", "MAINPID=42") }, "READY=1\nSTATUS=up\nMAINPID=42"},
			} {
				if err := tc.send(); err != nil {
					t.Fatalf("sending %q: %v", tc.want, err)
				}
				if got := receive(t, c); got != tc.want {
					t.Errorf("received %q, want %q", got, tc.want)
				}
			}
		})
	}
}

func TestNotifyRejectsMalformedAssignments(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "notify")
	listen(t, addr)
	n, err := New(env{SocketEnv: addr}.get)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for _, bad := range []string{"READY", "=1", "STATUS=a\nREADY=1"} {
		if err := n.Notify(bad); err == nil {
			t.Errorf("Notify(%q) was accepted", bad)
		}
	}
}

func TestSendingWithoutAReceiverFails(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "notify")
	c := listen(t, addr)
	n, err := New(env{SocketEnv: addr}.get)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c.Close()
	_ = os.Remove(addr)
	if err := n.Ready(); err == nil {
		t.Error("READY=1 to a socket that is gone reported success")
	}
	n.Close()
	if err := n.Ready(); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

func TestNotUnderSystemd(t *testing.T) {
	n, err := New(env{}.get)
	if err != nil || n != nil {
		t.Fatalf("New without NOTIFY_SOCKET = %v, %v; want nil, nil", n, err)
	}
	// A nil Notifier is usable and silent.
	for _, f := range []func() error{n.Ready, n.Watchdog, n.Stopping, func() error { return n.Status("x") }, n.Close} {
		if err := f(); err != nil {
			t.Errorf("nil notifier: %v", err)
		}
	}
	if d := n.WatchdogTimeout(); d != 0 {
		t.Errorf("nil notifier watchdog %v", d)
	}
}

func TestNewRefusesUnusableAddresses(t *testing.T) {
	for _, addr := range []string{"relative/notify", "vsock:2:1234"} {
		_, err := New(env{SocketEnv: addr}.get)
		var ae *AddressError
		if !errors.As(err, &ae) || ae.Addr != addr {
			t.Errorf("New(%q) error %v, want *AddressError", addr, err)
		}
	}
}

func TestWatchdogTimeout(t *testing.T) {
	me := strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name    string
		env     env
		want    time.Duration
		wantErr bool
	}{
		{"no watchdog", env{}, 0, false},
		{"for us by default", env{WatchdogUSecEnv: "10000000"}, 10 * time.Second, false},
		{"for us by PID", env{WatchdogUSecEnv: "2500000", WatchdogPIDEnv: me}, 2500 * time.Millisecond, false},
		{"for another process", env{WatchdogUSecEnv: "10000000", WatchdogPIDEnv: "1"}, 0, false},
		{"zero", env{WatchdogUSecEnv: "0"}, 0, true},
		{"not a number", env{WatchdogUSecEnv: "10s"}, 0, true},
		{"bad PID", env{WatchdogUSecEnv: "1000000", WatchdogPIDEnv: "me"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := filepath.Join(t.TempDir(), "notify")
			listen(t, addr)
			tc.env[SocketEnv] = addr
			n, err := New(tc.env.get)
			if (err != nil) != tc.wantErr {
				t.Fatalf("New: %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			defer n.Close()
			if got := n.WatchdogTimeout(); got != tc.want {
				t.Errorf("WatchdogTimeout = %v, want %v", got, tc.want)
			}
		})
	}
}
