//go:build linux

package link

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/internal/testsupport/leakcheck"
)

func newSocketPairT(t *testing.T) (a, b *FDLink) {
	t.Helper()
	a, b, err := NewSocketPair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestSocketPairConformance(t *testing.T) {
	runLinkSuite(t, func(t *testing.T) (Link, Link) { return newSocketPairT(t) })
}

// TestSocketPairConformanceSpinning: a link that spins before it blocks
// (RecvSpinner) behaves as one that does not — deadlines, queued frames,
// close, allocations.
func TestSocketPairConformanceSpinning(t *testing.T) {
	runLinkSuite(t, func(t *testing.T) (Link, Link) {
		a, b := newSocketPairT(t)
		var sa, sb RecvSpinner = a, b
		sa.SetRecvSpin(200 * time.Microsecond)
		sb.SetRecvSpin(200 * time.Microsecond)
		return a, b
	})
}

func TestSocketPairPeerCloseDrainsThenClosed(t *testing.T) {
	leakcheck.Check(t)
	a, b := newSocketPairT(t)
	for i := range 3 {
		if err := a.Send(testFrame(MinFrameSize, b.HardwareAddr(), a.HardwareAddr(), byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if got := recvSoon(t, b); got[HeaderSize] != byte(i+HeaderSize) {
			t.Fatalf("frame %d carries sequence %d", i, got[HeaderSize]-HeaderSize)
		}
	}
	if _, err := b.Recv(make([]byte, MaxFrameSize), time.Time{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Recv after draining a closed peer = %v, want ErrClosed", err)
	}
	if err := b.Send(testFrame(MinFrameSize, a.HardwareAddr(), b.HardwareAddr(), 0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Send to a closed peer = %v, want ErrClosed", err)
	}
}

// TestSocketPairSendNeverBlocks fills the peer's queue: Send must fail with
// EAGAIN instead of blocking.
func TestSocketPairSendNeverBlocks(t *testing.T) {
	a, b := newSocketPairT(t)
	frame := testFrame(MaxFrameSize, b.HardwareAddr(), a.HardwareAddr(), 0)
	sent := 0
	var err error
	for ; sent < 100000; sent++ {
		if err = a.Send(frame); err != nil {
			break
		}
	}
	if !errors.Is(err, unix.EAGAIN) || sent == 0 {
		t.Fatalf("after %d frames Send = %v, want EAGAIN", sent, err)
	}
	if want := "link: send on socketpair-a: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	for range sent {
		recvSoon(t, b)
	}
	if err := a.Send(frame); err != nil {
		t.Errorf("Send after draining: %v", err)
	}
}

func TestFileLinkRejectsOtherDescriptors(t *testing.T) {
	udp, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(udp)
	stream, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(stream[0])
	defer unix.Close(stream[1])
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()

	tests := []struct {
		name string
		fd   int
	}{
		{"UDP socket", udp},
		{"stream socket pair", stream[0]},
		{"regular file", int(devNull.Fd())},
		{"invalid descriptor", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := FileLink(tt.fd)
			if err == nil {
				l.Close()
				t.Fatalf("FileLink(%s) succeeded", tt.name)
			}
			var opErr *OpError
			if !errors.As(err, &opErr) || opErr.Op != "open" {
				t.Errorf("error %v is not an open OpError", err)
			}
		})
	}
}

func TestFDLinkFileRoundTrip(t *testing.T) {
	a, b := newSocketPairT(t)
	f, err := b.File()
	if err != nil {
		t.Fatal(err)
	}
	c, err := FDLinkFromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f.Close()
	b.Close() // c keeps the socket open on its own descriptor
	frame := testFrame(100, c.HardwareAddr(), a.HardwareAddr(), 5)
	if err := a.Send(frame); err != nil {
		t.Fatal(err)
	}
	if got := recvSoon(t, c); !bytes.Equal(got, frame) {
		t.Errorf("received %x, want %x", got, frame)
	}
}

// helperEnv names the role the test binary plays when run as a child.
const helperEnv = "ECAGENT_LINK_TEST_HELPER"

// TestSocketPairAcrossProcesses hands one end to a child process (this test
// binary running TestHelperEchoSegment), which echoes frames back with the
// source address's locally-administered bit set, as an EtherCAT segment
// does.
func TestSocketPairAcrossProcesses(t *testing.T) {
	a, b := newSocketPairT(t)
	f, err := b.File()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEchoSegment$")
	cmd.Env = append(os.Environ(), helperEnv+"=echo")
	cmd.ExtraFiles = []*os.File{f}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b.Close() // only the child holds that end now

	for i := range 5 {
		frame := testFrame(MinFrameSize+i, b.HardwareAddr(), []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}, byte(i))
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
		got := recvSoon(t, a)
		want := bytes.Clone(frame)
		want[6] |= 0x02
		if !bytes.Equal(got, want) {
			t.Errorf("echo %d = %x, want %x", i, got, want)
		}
	}
	a.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
}

// TestHelperEchoSegment is the child side of TestSocketPairAcrossProcesses.
func TestHelperEchoSegment(t *testing.T) {
	if os.Getenv(helperEnv) != "echo" {
		t.Skip("runs only as the child of TestSocketPairAcrossProcesses")
	}
	l, err := FDLinkFromFile(os.NewFile(3, "segment"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	buf := make([]byte, MaxFrameSize)
	for {
		n, err := l.Recv(buf, time.Now().Add(10*time.Second))
		if errors.Is(err, ErrClosed) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		buf[6] |= 0x02
		if err := l.Send(buf[:n]); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkRoundTripSocketPair(b *testing.B) {
	x, y, err := NewSocketPair()
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	defer y.Close()
	benchmarkRoundTrip(b, x, y)
}
