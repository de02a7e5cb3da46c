package test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// wire is a veth pair whose simulator end lives in its own network
// namespace, as a real segment lives behind its own NIC.
type wire struct {
	NS        string // network namespace holding SimEnd
	MasterEnd string // interface in the test's namespace
	SimEnd    string // interface inside NS
}

// needRoot skips the test unless it runs with the privileges to create
// namespaces and raw sockets (CI runs as root).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces, veth pairs and raw sockets")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip command")
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// newWire creates a namespace and a veth pair for one test and removes
// both when the test ends.
func newWire(t *testing.T, tag string) wire {
	t.Helper()
	needRoot(t)
	id := fmt.Sprintf("%s%d", tag, os.Getpid()%100000)
	w := wire{NS: "ect-" + id, MasterEnd: "ecm" + id, SimEnd: "ecs" + id}
	run(t, "ip", "netns", "add", w.NS)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", w.NS).Run() })
	run(t, "ip", "link", "add", w.MasterEnd, "type", "veth", "peer", "name", w.SimEnd)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", w.MasterEnd).Run() })
	run(t, "ip", "link", "set", w.SimEnd, "netns", w.NS)
	run(t, "ip", "link", "set", w.MasterEnd, "up")
	run(t, "ip", "netns", "exec", w.NS, "ip", "link", "set", w.SimEnd, "up")
	// No IPv6 router solicitations or other chatter on the EtherCAT wire.
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+w.MasterEnd+"/disable_ipv6", []byte("1"), 0o644)
	return w
}

// inNamespace runs f on a thread switched into the namespace ns; sockets
// opened by f stay in that namespace when used from other goroutines.
func inNamespace(t *testing.T, ns string, f func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it dies with the goroutine instead of
		// returning to the pool in the wrong namespace.
		runtime.LockOSThread()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}
