//go:build linux

package xdp

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/master/link"
)

// pair is a veth pair whose ends sit in two fresh network namespaces, so
// that traffic between their addresses crosses the pair (in one namespace
// the kernel would route it over loopback). The master's end is "m" in
// nsM, the segment's "s" in nsS.
type pair struct{ nsM, nsS string }

func run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out)
}

func newPair(tb testing.TB) *pair {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("AF_XDP on a veth pair needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skipf("needs iproute2's ip: %v", err)
	}
	h := fnv.New32a()
	h.Write([]byte(tb.Name()))
	tag := fmt.Sprintf("%08x", h.Sum32()^uint32(os.Getpid()))
	p := &pair{nsM: "ecx-m-" + tag, nsS: "ecx-s-" + tag}
	for _, ns := range []string{p.nsM, p.nsS} {
		run(tb, "ip", "netns", "add", ns)
		tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	run(tb, "ip", "-n", p.nsM, "link", "add", "ecm", "type", "veth", "peer", "name", "ecs", "netns", p.nsS)
	run(tb, "ip", "-n", p.nsM, "link", "set", "ecm", "up")
	run(tb, "ip", "-n", p.nsS, "link", "set", "ecs", "up")
	return p
}

// in runs fn on a thread inside namespace ns.
func in(ns string, fn func() error) error {
	errc := make(chan error, 1)
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
		errc <- fn()
	}()
	return <-errc
}

// open opens the AF_XDP link on the master's end and a raw socket on the
// segment's, and waits until frames pass both ways.
func (p *pair) open(tb testing.TB) (*Socket, *link.RawSocket) {
	tb.Helper()
	return p.openWith(tb, Open)
}

// openWith is open with the master's end opened by openX.
func (p *pair) openWith(tb testing.TB, openX func(string) (*Socket, error)) (*Socket, *link.RawSocket) {
	tb.Helper()
	var x *Socket
	if err := in(p.nsM, func() (err error) { x, err = openX("ecm"); return err }); err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, errors.ErrUnsupported) {
			tb.Skipf("no AF_XDP here: %v", err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	var r *link.RawSocket
	if err := in(p.nsS, func() (err error) { r, err = link.Open("ecs", link.SegmentConfig()); return err }); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	tb.Logf("XDP %s mode, zero-copy %v", x.Mode(), x.ZeroCopy())
	passes(tb, x, r)
	return x, r
}

func frame(size int, dst, src net.HardwareAddr, seq byte) []byte {
	f := make([]byte, size)
	copy(f, dst)
	copy(f[6:], src)
	f[12], f[13] = 0x88, 0xa4
	for i := link.HeaderSize; i < size; i++ {
		f[i] = seq + byte(i)
	}
	return f
}

// passes sends probes until one crosses each way, then drains both.
func passes(tb testing.TB, a, b link.Link) {
	tb.Helper()
	buf := make([]byte, link.MaxFrameSize)
	for _, d := range [][2]link.Link{{a, b}, {b, a}} {
		for attempt := 0; ; attempt++ {
			if attempt == 50 {
				tb.Fatal("no frame crossed the pair in 5 s")
			}
			if err := d[0].Send(frame(60, d[1].HardwareAddr(), d[0].HardwareAddr(), 0xee)); err != nil {
				tb.Fatalf("probe: %v", err)
			}
			if _, err := d[1].Recv(buf, time.Now().Add(100*time.Millisecond)); err == nil {
				break
			}
		}
	}
	for _, l := range []link.Link{a, b} {
		for {
			if _, err := l.Recv(buf, time.Now().Add(10*time.Millisecond)); err != nil {
				break
			}
		}
	}
}

// TestExchange: in either XDP mode, frames of every size cross both ways, padded; Poll
// reports the arrival time between the send and the poll; a frame and
// its answer allocate nothing, on and on round the rings.
func TestExchange(t *testing.T) {
	t.Run("native", func(t *testing.T) { exchange(t, Open) })
	t.Run("generic", func(t *testing.T) { exchange(t, openGeneric) })
}

func exchange(t *testing.T, openX func(string) (*Socket, error)) {
	x, r := newPair(t).openWith(t, openX)
	buf := make([]byte, link.MaxFrameSize)
	for i, size := range []int{link.HeaderSize, 42, 60, 61, 200, 1514} {
		f := frame(size, r.HardwareAddr(), x.HardwareAddr(), byte(i))
		if err := x.Send(f); err != nil {
			t.Fatal(err)
		}
		n, err := r.Recv(buf, time.Now().Add(time.Second))
		want := append(bytes.Clone(f), make([]byte, max(0, 60-size))...)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("segment received %d bytes, %v; want %x", n, err, want)
		}
		back := frame(size, x.HardwareAddr(), r.HardwareAddr(), byte(i))
		before := time.Now().UnixNano()
		if err := r.Send(back); err != nil {
			t.Fatal(err)
		}
		var at int64
		for end := time.Now().Add(time.Second); n == 0 || err != nil || time.Now().Before(end); {
			n, at, err = x.Poll(buf)
			if err != nil || n > 0 {
				break
			}
		}
		after := time.Now().UnixNano()
		want = append(bytes.Clone(back), make([]byte, max(0, 60-size))...)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("master polled %d bytes, %v; want %x", n, err, want)
		}
		if at < before || at > after {
			t.Errorf("arrival time %d not within [%d, %d]", at, before, after)
		}
	}
	toS := frame(60, r.HardwareAddr(), x.HardwareAddr(), 1)
	toM := frame(60, x.HardwareAddr(), r.HardwareAddr(), 2)
	var failed error
	allocs := testing.AllocsPerRun(3*umemFrames, func() {
		if err := x.Send(toS); err != nil {
			failed = err
		}
		if _, err := r.Recv(buf, time.Now().Add(time.Second)); err != nil {
			failed = err
		}
		if err := r.Send(toM); err != nil {
			failed = err
		}
		if _, err := x.Recv(buf, time.Now().Add(time.Second)); err != nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Errorf("a frame and its answer: %v allocations, want 0", allocs)
	}
	if st, err := x.Stats(); err != nil || st.Packets < 3*umemFrames || st.Drops != 0 {
		t.Errorf("Stats = %+v, %v; want at least %d packets, no drops", st, err, 3*umemFrames)
	}
}

// TestOtherFramesReachTheStack: with the program attached, natively and
// in generic mode, a ping over the same pair keeps working (ARP and IP
// pass to the stack) while EtherCAT frames go to the socket.
func TestOtherFramesReachTheStack(t *testing.T) {
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping")
	}
	for _, m := range []struct {
		name  string
		openX func(string) (*Socket, error)
	}{{"native", Open}, {"generic", openGeneric}} {
		t.Run(m.name, func(t *testing.T) { pingBeside(t, m.name, m.openX) })
	}
}

func pingBeside(t *testing.T, mode string, openX func(string) (*Socket, error)) {
	p := newPair(t)
	run(t, "ip", "-n", p.nsM, "addr", "add", "10.235.0.1/24", "dev", "ecm")
	run(t, "ip", "-n", p.nsS, "addr", "add", "10.235.0.2/24", "dev", "ecs")
	x, r := p.openWith(t, openX)
	if x.Mode() != mode {
		t.Fatalf("XDP runs in %s mode, want %s", x.Mode(), mode)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { // the segment answers every frame, as a segment does
		buf := make([]byte, link.MaxFrameSize)
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			n, err := r.Recv(buf, time.Now().Add(10*time.Millisecond))
			if errors.Is(err, link.ErrTimeout) {
				continue
			}
			if err != nil {
				done <- err
				return
			}
			copy(buf[0:6], x.HardwareAddr())
			if err := r.Send(buf[:n]); err != nil {
				done <- err
				return
			}
		}
	}()
	pinged := make(chan string, 1)
	go func() {
		out, err := exec.Command("ip", "netns", "exec", p.nsM, "ping", "-c", "5", "-i", "0.2", "-W", "1", "10.235.0.2").CombinedOutput()
		if err != nil {
			pinged <- fmt.Sprintf("ping failed: %v: %s", err, out)
			return
		}
		pinged <- ""
	}()
	buf := make([]byte, link.MaxFrameSize)
	for answered := 0; ; answered++ {
		select {
		case msg := <-pinged:
			if msg != "" {
				t.Error(msg)
			}
			close(stop)
			if err := <-done; err != nil {
				t.Errorf("segment: %v", err)
			}
			t.Logf("%d EtherCAT frames answered during the ping", answered)
			return
		default:
		}
		if err := x.Send(frame(60, r.HardwareAddr(), x.HardwareAddr(), byte(answered))); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Recv(buf, time.Now().Add(time.Second)); err != nil {
			t.Fatalf("EtherCAT frame %d not answered while pinging: %v", answered, err)
		}
	}
}

// TestInterfaceDownAndUp: a frame sent while the master's interface is
// down fails and is not sent late; frames pass again once it is up.
func TestInterfaceDownAndUp(t *testing.T) {
	p := newPair(t)
	x, r := p.open(t)
	run(t, "ip", "-n", p.nsM, "link", "set", "ecm", "down")
	late := frame(100, r.HardwareAddr(), x.HardwareAddr(), 0x55)
	if err := x.Send(late); !errors.Is(err, unix.ENETDOWN) {
		t.Errorf("Send with the interface down = %v, want ENETDOWN", err)
	}
	if allocs := testing.AllocsPerRun(50, func() { _ = x.Send(late) }); allocs != 0 {
		t.Errorf("Send with the interface down allocates %v times", allocs)
	}
	run(t, "ip", "-n", p.nsM, "link", "set", "ecm", "up")
	passes(t, x, r)
	if err := x.Send(frame(100, r.HardwareAddr(), x.HardwareAddr(), 1)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, link.MaxFrameSize)
	n, err := r.Recv(buf, time.Now().Add(time.Second))
	if err != nil || buf[link.HeaderSize] == late[link.HeaderSize] || n != 100 {
		t.Errorf("after up: %d bytes, %v, seq %#x; want the new frame, never the one sent while down", n, err, buf[link.HeaderSize])
	}
}

// TestCloseDetaches: Close takes the program off the interface, so that
// the stack gets EtherCAT frames again, and wakes a blocked Recv.
func TestCloseDetaches(t *testing.T) {
	p := newPair(t)
	x, _ := p.open(t)
	done := make(chan error, 1)
	go func() { _, err := x.Recv(make([]byte, 100), time.Time{}); done <- err }()
	time.Sleep(20 * time.Millisecond) // let Recv block
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, link.ErrClosed) {
			t.Errorf("blocked Recv = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Recv still blocked 2 s after Close")
	}
	if out := run(t, "ip", "-n", p.nsM, "link", "show", "ecm"); strings.Contains(out, "xdp") {
		t.Errorf("program still attached after Close: %s", out)
	}
}

// BenchmarkRoundTrip: a frame from the master to a raw-socket segment and
// its answer back (compare link's BenchmarkRoundTripRawSocket and
// BenchmarkRoundTripMmapSocket).
func BenchmarkRoundTrip(b *testing.B) {
	x, r := newPair(b).open(b)
	toS := frame(60, r.HardwareAddr(), x.HardwareAddr(), 1)
	toM := frame(60, x.HardwareAddr(), r.HardwareAddr(), 2)
	buf := make([]byte, link.MaxFrameSize)
	b.ReportAllocs()
	for b.Loop() {
		deadline := time.Now().Add(time.Second)
		if err := x.Send(toS); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Recv(buf, deadline); err != nil {
			b.Fatal(err)
		}
		if err := r.Send(toM); err != nil {
			b.Fatal(err)
		}
		if _, err := x.Recv(buf, deadline); err != nil {
			b.Fatal(err)
		}
	}
}
