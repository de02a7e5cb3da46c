//go:build linux

package link

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// veth is a veth pair, both ends up, preferably alone in a fresh network
// namespace so that no other traffic reaches the sockets under test.
type veth struct {
	ns       string // network namespace name; "" means the test's own
	ifA, ifB string
}

// requireRawSockets skips the test when this process may not open
// AF_PACKET sockets.
func requireRawSockets(tb testing.TB) {
	tb.Helper()
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, os.ErrPermission) {
		tb.Skipf("raw sockets need CAP_NET_RAW (run as root): %v", err)
	}
	if err != nil {
		tb.Fatalf("AF_PACKET socket: %v", err)
	}
	unix.Close(fd)
}

// ip runs iproute2's ip.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// newVeth creates a veth pair for this test and removes it at cleanup.
func newVeth(tb testing.TB) *veth {
	tb.Helper()
	requireRawSockets(tb)
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skipf("creating a veth pair needs iproute2's ip: %v", err)
	}
	h := fnv.New32a()
	h.Write([]byte(tb.Name()))
	tag := fmt.Sprintf("ecl%08x", h.Sum32()^uint32(os.Getpid())) // + "a": within IFNAMSIZ

	v := &veth{ns: "ecagent-link-" + tag, ifA: "veth-a", ifB: "veth-b"}
	if err := ip("netns", "add", v.ns); err != nil {
		tb.Logf("no fresh network namespace, using the current one: %v", err)
		v.ns, v.ifA, v.ifB = "", tag+"a", tag+"b"
	} else {
		tb.Cleanup(func() {
			if err := ip("netns", "del", v.ns); err != nil {
				tb.Errorf("cleanup: %v", err)
			}
		})
	}
	if err := v.ip("link", "add", v.ifA, "type", "veth", "peer", "name", v.ifB); err != nil {
		if strings.Contains(err.Error(), "Operation not permitted") {
			tb.Skipf("creating a veth pair needs CAP_NET_ADMIN: %v", err)
		}
		tb.Fatal(err)
	}
	if v.ns == "" {
		tb.Cleanup(func() {
			if err := v.ip("link", "del", v.ifA); err != nil {
				tb.Errorf("cleanup: %v", err)
			}
		})
	}
	for _, ifname := range []string{v.ifA, v.ifB} {
		if err := v.ip("link", "set", ifname, "up"); err != nil {
			tb.Fatal(err)
		}
	}
	return v
}

// ip runs ip inside the pair's namespace.
func (v *veth) ip(args ...string) error {
	if v.ns != "" {
		args = append([]string{"-n", v.ns}, args...)
	}
	return ip(args...)
}

// do runs fn on an OS thread inside the pair's namespace. Sockets created
// there stay in that namespace for their whole life.
func (v *veth) do(fn func() error) error {
	if v.ns == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread's namespace has changed, so the
		// runtime must discard it when this goroutine ends.
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + v.ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", v.ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// open opens a RawSocket on ifname inside the pair's namespace.
func (v *veth) open(tb testing.TB, ifname string, cfg *Config) *RawSocket {
	tb.Helper()
	var s *RawSocket
	if err := v.do(func() (err error) {
		s, err = Open(ifname, cfg)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// promiscuity returns the interface's promiscuity count.
func (v *veth) promiscuity(tb testing.TB, ifname string) int {
	tb.Helper()
	args := []string{"-d", "link", "show", "dev", ifname}
	if v.ns != "" {
		args = append([]string{"-n", v.ns}, args...)
	}
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("ip %v: %v: %s", args, err, out)
	}
	m := regexp.MustCompile(`promiscuity (\d+)`).FindSubmatch(out)
	if m == nil {
		tb.Fatalf("no promiscuity in %s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// openPair opens one socket on each end and waits until frames pass. The
// two ends exchange frames of each other's addresses, as a master and a
// segment do: neither filters for its own frames (Config.OwnFramesOnly
// off; nil cfg means SegmentConfig).
func (v *veth) openPair(tb testing.TB, cfg *Config) (a, b *RawSocket) {
	tb.Helper()
	if cfg == nil {
		cfg = SegmentConfig()
	}
	peer := *cfg
	peer.OwnFramesOnly = false
	a, b = v.open(tb, v.ifA, &peer), v.open(tb, v.ifB, &peer)
	waitFramesPass(tb, a, b)
	return a, b
}

// waitFramesPass sends probes until one crosses the link in each
// direction, then empties both receive queues.
func waitFramesPass(tb testing.TB, a, b Link) {
	tb.Helper()
	buf := make([]byte, MaxFrameSize)
	for _, dir := range [][2]Link{{a, b}, {b, a}} {
		from, to := dir[0], dir[1]
		probe := testFrame(MinFrameSize, to.HardwareAddr(), from.HardwareAddr(), 0xee)
		for attempt := 0; ; attempt++ {
			if attempt == 50 {
				tb.Fatal("no frame crossed the veth pair in 5 s")
			}
			if err := from.Send(probe); err != nil {
				tb.Fatalf("probe: %v", err)
			}
			if _, err := to.Recv(buf, time.Now().Add(100*time.Millisecond)); err == nil {
				break
			}
		}
	}
	for _, l := range []Link{a, b} {
		for {
			if _, err := l.Recv(buf, time.Now().Add(10*time.Millisecond)); err != nil {
				break
			}
		}
	}
}

func TestRawSocketConformance(t *testing.T) {
	runLinkSuite(t, func(t *testing.T) (Link, Link) {
		return newVeth(t).openPair(t, nil)
	})
}

// TestRawSocketOwnFrames checks that a socket does not receive what it
// sends while its peer does. A capture socket bound to all protocols
// (ETH_P_ALL, as tcpdump uses) on the sender's interface proves that the
// kernel does copy outgoing frames to taps, unless qdisc bypass skips them.
func TestRawSocketOwnFrames(t *testing.T) {
	tests := []struct {
		name        string
		qdiscBypass bool
		captureSees bool
	}{
		{"qdisc bypass", true, false},
		{"through the qdisc", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVeth(t)
			cfg := DefaultConfig()
			cfg.QdiscBypass = tt.qdiscBypass
			a, b := v.openPair(t, cfg)
			if !a.IgnoresOutgoing() {
				t.Logf("kernel %s lacks PACKET_IGNORE_OUTGOING", kernelRelease())
			}
			capture := v.openCapture(t, v.ifA)

			frame := testFrame(100, b.HardwareAddr(), a.HardwareAddr(), 9)
			if err := a.Send(frame); err != nil {
				t.Fatal(err)
			}
			if got := recvSoon(t, b); !bytes.Equal(got, frame) {
				t.Errorf("peer received %x, want %x", got, frame)
			}
			if n, err := a.Recv(make([]byte, MaxFrameSize), time.Now().Add(100*time.Millisecond)); !errors.Is(err, ErrTimeout) {
				t.Errorf("sender's Recv = %d bytes, %v; want ErrTimeout (it must not see its own frame)", n, err)
			}
			got, err := recvEtherCAT(capture, time.Now().Add(100*time.Millisecond))
			switch {
			case tt.captureSees && (err != nil || !bytes.Equal(got, frame)):
				t.Errorf("capture socket received %x, %v; want the sent frame", got, err)
			case !tt.captureSees && !errors.Is(err, ErrTimeout):
				t.Errorf("capture socket received %x, %v; want nothing with qdisc bypass", got, err)
			}
		})
	}
}

// recvEtherCAT receives from l until an EtherCAT frame arrives, skipping
// other traffic such as IPv6 neighbour discovery.
func recvEtherCAT(l Link, deadline time.Time) ([]byte, error) {
	buf := make([]byte, MaxFrameSize)
	for {
		n, err := l.Recv(buf, deadline)
		if err != nil {
			return nil, err
		}
		if n >= HeaderSize && buf[12] == 0x88 && buf[13] == 0xa4 {
			return buf[:n], nil
		}
	}
}

// openCapture opens a packet socket bound to all protocols on ifname, as a
// capture tool would; it receives outgoing frames as well.
func (v *veth) openCapture(tb testing.TB, ifname string) Link {
	tb.Helper()
	var conn *fdConn
	if err := v.do(func() error {
		idx, err := netIndex(ifname)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: idx}); err != nil {
			unix.Close(fd)
			return err
		}
		conn, err = newFDConn("capture", fd, nil, 0, false)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.close() })
	return &FDLink{conn: conn, addr: localAddr(0xcc)}
}

// netIndex returns the index of ifname in the calling thread's namespace.
func netIndex(ifname string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("SIOCGIFINDEX %s: %w", ifname, err)
	}
	return int(ifr.Uint32()), nil
}

func TestRawSocketPromiscuousPerSocket(t *testing.T) {
	tests := []struct {
		name        string
		promiscuous bool
		want        int
	}{
		{"default promiscuous", true, 1},
		{"not promiscuous", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVeth(t)
			cfg := DefaultConfig()
			cfg.Promiscuous = tt.promiscuous
			s := v.open(t, v.ifA, cfg)
			if got := v.promiscuity(t, v.ifA); got != tt.want {
				t.Errorf("promiscuity with the socket open = %d, want %d", got, tt.want)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := v.promiscuity(t, v.ifA); got != 0 {
				t.Errorf("promiscuity after Close = %d, want 0", got)
			}
		})
	}
}

func TestRawSocketQdiscBypass(t *testing.T) {
	tests := []struct {
		name   string
		bypass bool
	}{
		{"requested", true},
		{"not requested", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVeth(t)
			cfg := DefaultConfig()
			cfg.QdiscBypass = tt.bypass
			a, b := v.openPair(t, cfg)
			if got := a.QdiscBypass(); got != tt.bypass {
				t.Errorf("QdiscBypass() = %v, want %v (kernel %s)", got, tt.bypass, kernelRelease())
			}
			frame := testFrame(MinFrameSize, b.HardwareAddr(), a.HardwareAddr(), 1)
			if err := a.Send(frame); err != nil {
				t.Fatal(err)
			}
			if got := recvSoon(t, b); !bytes.Equal(got, frame) {
				t.Errorf("received %x, want %x", got, frame)
			}
		})
	}
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}

func TestRawSocketErrorsNameInterface(t *testing.T) {
	v := newVeth(t)
	a, _ := v.openPair(t, nil)
	if got := a.Interface(); got != v.ifA {
		t.Errorf("Interface() = %q, want %q", got, v.ifA)
	}
	_, err := a.Recv(make([]byte, MaxFrameSize), time.Now())
	if want := "link: recv on " + v.ifA + ": receive timeout"; err == nil || err.Error() != want {
		t.Errorf("Recv error = %q, want %q", err, want)
	}
	a.Close()
	err = a.Send(make([]byte, MinFrameSize))
	if want := "link: send on " + v.ifA + ": link closed"; err == nil || err.Error() != want {
		t.Errorf("Send error = %q, want %q", err, want)
	}
}

// TestRawSocketInterfaceDownAndUp checks that Recv reports an interface
// going down (ENETDOWN) and that the socket works again once it is up.
func TestRawSocketInterfaceDownAndUp(t *testing.T) {
	v := newVeth(t)
	a, b := v.openPair(t, nil)
	if err := v.ip("link", "set", v.ifB, "down"); err != nil {
		t.Fatal(err)
	}
	_, err := b.Recv(make([]byte, MaxFrameSize), time.Now().Add(time.Second))
	if !errors.Is(err, unix.ENETDOWN) || !strings.HasPrefix(err.Error(), "link: recv on "+v.ifB+": ") {
		t.Fatalf("Recv with the interface down = %v, want ENETDOWN naming %s", err, v.ifB)
	}
	frame := testFrame(100, a.HardwareAddr(), b.HardwareAddr(), 0x55)
	if err := b.Send(frame); !errors.Is(err, unix.ENETDOWN) {
		t.Errorf("Send with the interface down = %v, want ENETDOWN", err)
	}
	sendWhileDownAllocatesNothing(t, b, frame)
	if err := v.ip("link", "set", v.ifB, "up"); err != nil {
		t.Fatal(err)
	}
	waitFramesPass(t, a, b)
}

// TestOpenWithoutCapNetRaw drops CAP_NET_RAW on one locked thread
// (capabilities are per thread) and opens there: the error must match
// os.ErrPermission, which is how callers tell "run as root" apart.
func TestOpenWithoutCapNetRaw(t *testing.T) {
	v := newVeth(t)
	err := v.do(func() error {
		runtime.LockOSThread() // never unlocked: the thread loses a capability
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capget: %w", err)
		}
		data[unix.CAP_NET_RAW/32].Effective &^= 1 << (unix.CAP_NET_RAW % 32)
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capset: %w", err)
		}
		s, err := Open(v.ifA, nil)
		if err == nil {
			s.Close()
			return errors.New("Open succeeded without CAP_NET_RAW")
		}
		if !errors.Is(err, os.ErrPermission) || !strings.HasPrefix(err.Error(), "link: open on "+v.ifA+": socket: ") {
			return fmt.Errorf("Open without CAP_NET_RAW = %w; want os.ErrPermission naming %s", err, v.ifA)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenFails needs no privilege: every failure happens before or at
// socket creation, and the error names the operation and interface.
func TestOpenFails(t *testing.T) {
	tests := []struct {
		ifname string
		want   string
	}{
		{"ecagent-none0", "link: open on ecagent-none0: "},
		{"lo", "link: open on lo: not an Ethernet interface"},
	}
	for _, tt := range tests {
		t.Run(tt.ifname, func(t *testing.T) {
			s, err := Open(tt.ifname, nil)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", tt.ifname)
			}
			var opErr *OpError
			if !errors.As(err, &opErr) || opErr.Op != "open" || opErr.Link != tt.ifname {
				t.Errorf("error %#v is not an open OpError for %q", err, tt.ifname)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q does not start with %q", err, tt.want)
			}
		})
	}
}

func TestHtons(t *testing.T) {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], htons(EtherTypeEtherCAT))
	if b != [2]byte{0x88, 0xa4} {
		t.Errorf("htons(0x88A4) is stored as % x, want 88 a4", b[:])
	}
}

func BenchmarkRoundTripRawSocket(b *testing.B) {
	v := newVeth(b)
	x, y := v.openPair(b, nil)
	benchmarkRoundTrip(b, x, y)
}
