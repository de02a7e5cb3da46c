package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/master/link"
)

// TestCycleAllocatesNothingAfterMaintenanceOnEachLink is
// TestCycleAllocatesNothingAfterMaintenance with the cycle on each link
// to a network interface (bus.link), over a veth pair to the segment in
// a namespace of its own: recovery and maintenance leave nothing behind
// that makes the cycle allocate, whichever link carries its frames.
func TestCycleAllocatesNothingAfterMaintenanceOnEachLink(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cycle process for seconds")
	}
	if os.Geteuid() != 0 {
		t.Skip("a veth pair in a namespace needs root")
	}
	for _, kind := range []link.Kind{link.KindRaw, link.KindMmap, link.KindXDP} {
		t.Run(string(kind), func(t *testing.T) {
			allocatesNothingAfterMaintenance(t, vethSegment(kind))
		})
	}
}

// vethSegment puts the segment's end of a veth pair in a namespace of its
// own, with a raw socket on it, and has the cycle open the other end with
// the link kind.
func vethSegment(kind link.Kind) segmentWire {
	return func(t *testing.T, cfg *Config, o *Options) link.Link {
		tag := fmt.Sprintf("%d", os.Getpid()%100000)
		ns, m, s := "ecp-"+tag, "ecpm"+tag, "ecps"+tag
		ip := func(args ...string) {
			t.Helper()
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
			}
		}
		ip("netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		ip("link", "add", m, "type", "veth", "peer", "name", s, "netns", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", m).Run() })
		ip("link", "set", m, "up")
		ip("-n", ns, "link", "set", s, "up")
		_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+m+"/disable_ipv6", []byte("1"), 0o644)
		errc := make(chan error, 1)
		var l link.Link
		go func() {
			runtime.LockOSThread() // never unlocked: the thread changes namespace
			f, err := os.Open("/run/netns/" + ns)
			if err != nil {
				errc <- err
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				errc <- err
				return
			}
			l, err = link.Open(s, link.SegmentConfig())
			errc <- err
		}()
		if err := <-errc; err != nil {
			if errors.Is(err, os.ErrPermission) {
				t.Skip(err)
			}
			t.Fatal(err)
		}
		cfg.Bus.Interface, cfg.Bus.Link = m, string(kind)
		o.LinkFD = -1
		return l
	}
}
