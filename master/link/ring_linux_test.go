//go:build linux

package link

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openMmap opens an MmapSocket on ifname inside the pair's namespace.
func (v *veth) openMmap(tb testing.TB, ifname string, cfg *Config) *MmapSocket {
	tb.Helper()
	var s *MmapSocket
	if err := v.do(func() (err error) {
		s, err = OpenMmap(ifname, cfg)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// openMmapPair opens a memory-mapped socket on each end, as openPair.
func (v *veth) openMmapPair(tb testing.TB) (a, b *MmapSocket) {
	tb.Helper()
	a, b = v.openMmap(tb, v.ifA, SegmentConfig()), v.openMmap(tb, v.ifB, SegmentConfig())
	waitFramesPass(tb, a, b)
	return a, b
}

func TestMmapSocketConformance(t *testing.T) {
	runLinkSuite(t, func(t *testing.T) (Link, Link) {
		return newVeth(t).openMmapPair(t)
	})
}

// TestMmapSocketAgainstRawSocket: the two kinds of socket speak the same
// wire, so a memory-mapped master talks to a raw-socket segment.
func TestMmapSocketAgainstRawSocket(t *testing.T) {
	v := newVeth(t)
	a := v.openMmap(t, v.ifA, SegmentConfig())
	b := v.open(t, v.ifB, SegmentConfig())
	waitFramesPass(t, a, b)
	if !a.QdiscBypass() {
		t.Logf("kernel %s lacks PACKET_QDISC_BYPASS", kernelRelease())
	}
}

// TestMmapSocketRingWraps sends and receives several times round both
// rings, one frame at a time and in bursts deeper than the transmit ring
// is not: every frame arrives, in order.
func TestMmapSocketRingWraps(t *testing.T) {
	v := newVeth(t)
	a, b := v.openMmapPair(t)
	buf := make([]byte, MaxFrameSize)
	for i := range 3 * ringRxFrames {
		frame := testFrame(60+i%200, b.HardwareAddr(), a.HardwareAddr(), byte(i))
		if err := a.Send(frame); err != nil {
			t.Fatalf("Send #%d: %v", i, err)
		}
		n, err := b.Recv(buf, time.Now().Add(time.Second))
		if err != nil || n != len(frame) || buf[HeaderSize] != frame[HeaderSize] {
			t.Fatalf("Recv #%d = %d, %v; want the %d bytes sent", i, n, err, len(frame))
		}
	}
	const burst = ringTxFrames / 2
	for round := range 4 {
		for i := range burst {
			if err := a.Send(testFrame(100, b.HardwareAddr(), a.HardwareAddr(), byte(i))); err != nil {
				t.Fatalf("round %d: Send #%d: %v", round, i, err)
			}
		}
		for i := range burst {
			n, err := b.Recv(buf, time.Now().Add(time.Second))
			if err != nil || n != 100 || buf[HeaderSize] != byte(i)+HeaderSize {
				t.Fatalf("round %d: Recv #%d = %d, %v, seq %d; want frame %d", round, i, n, err, buf[HeaderSize]-HeaderSize, i)
			}
		}
	}
}

// TestMmapSocketRingFullDropsAndCounts: a receive ring nobody empties
// keeps the first ringRxFrames frames and the kernel counts the rest as
// dropped; after the ring is read, frames flow again.
func TestMmapSocketRingFullDropsAndCounts(t *testing.T) {
	v := newVeth(t)
	a, b := v.openMmapPair(t)
	before, err := b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	const sent = ringRxFrames + 20
	for i := range sent {
		if err := sendRetrying(a, testFrame(200, b.HardwareAddr(), a.HardwareAddr(), byte(i))); err != nil {
			t.Fatalf("Send #%d: %v", i, err)
		}
	}
	waitStats(t, b, before.Packets+sent)
	buf := make([]byte, MaxFrameSize)
	read := 0
	for {
		n, _, err := b.Poll(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		read++
	}
	after, _ := b.Stats()
	if read != ringRxFrames || after.Drops-before.Drops != sent-ringRxFrames {
		t.Errorf("read %d frames, %d dropped; want %d and %d", read, after.Drops-before.Drops, ringRxFrames, sent-ringRxFrames)
	}
	waitFramesPass(t, a, b)
}

// sendRetrying sends frame, retrying while the transmit slot is still
// with the driver (a burst faster than the veth takes it).
func sendRetrying(l Link, frame []byte) error {
	end := time.Now().Add(time.Second)
	for {
		err := l.Send(frame)
		if !errors.Is(err, unix.EAGAIN) || time.Now().After(end) {
			return err
		}
	}
}

// waitStats waits until l has counted packets frames.
func waitStats(tb testing.TB, l StatsReader, packets uint64) {
	tb.Helper()
	for end := time.Now().Add(5 * time.Second); ; {
		st, err := l.Stats()
		if err != nil {
			tb.Fatal(err)
		}
		if st.Packets >= packets {
			return
		}
		if time.Now().After(end) {
			tb.Fatalf("Stats().Packets = %d after 5 s, want %d", st.Packets, packets)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMmapSocketInterfaceDownAndUp: Recv reports the interface going
// down (ENETDOWN) as a RawSocket does; a frame sent while it is down
// fails and is not sent late; once up, frames pass again.
func TestMmapSocketInterfaceDownAndUp(t *testing.T) {
	v := newVeth(t)
	a, b := v.openMmapPair(t)
	if err := v.ip("link", "set", v.ifB, "down"); err != nil {
		t.Fatal(err)
	}
	_, err := b.Recv(make([]byte, MaxFrameSize), time.Now().Add(time.Second))
	if !errors.Is(err, unix.ENETDOWN) || !strings.HasPrefix(err.Error(), "link: recv on "+v.ifB+": ") {
		t.Fatalf("Recv with the interface down = %v, want ENETDOWN naming %s", err, v.ifB)
	}
	late := testFrame(100, a.HardwareAddr(), b.HardwareAddr(), 0x55)
	if err := b.Send(late); !errors.Is(err, unix.ENETDOWN) {
		t.Errorf("Send with the interface down = %v, want ENETDOWN", err)
	}
	sendWhileDownAllocatesNothing(t, b, late)
	if err := v.ip("link", "set", v.ifB, "up"); err != nil {
		t.Fatal(err)
	}
	waitFramesPass(t, a, b) // drains a: the frame sent while down must not be among them
	buf := make([]byte, MaxFrameSize)
	for _, l := range []*MmapSocket{a, b} {
		if n, _, _ := l.Poll(buf); n != 0 {
			t.Errorf("%s received a frame after the drain: %x", l.Interface(), buf[:n])
		}
	}
	if err := b.Send(testFrame(100, a.HardwareAddr(), b.HardwareAddr(), 1)); err != nil {
		t.Fatal(err)
	}
	if got := recvSoon(t, a); got[HeaderSize] == late[HeaderSize] {
		t.Errorf("the frame sent while the interface was down went out late")
	}
}

// TestMmapSocketTakesAnswersWithoutSystemCalls: Poll and the ring side
// of Recv read ring memory; the only system calls of the hot path are
// Send's kick and Recv's wait. Any call into package unix other than a
// raw system call in Send's kick fails the test.
func TestMmapSocketTakesAnswersWithoutSystemCalls(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "ring_linux.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]string{"kick": "RawSyscall6", "take": "", "Poll": "", "Send": ""}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil {
			continue
		}
		want, hot := allowed[fn.Name.Name]
		if !hot {
			continue
		}
		delete(allowed, fn.Name.Name)
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "unix" && !strings.HasPrefix(sel.Sel.Name, "TP_STATUS") &&
				!strings.HasPrefix(sel.Sel.Name, "E") && sel.Sel.Name != "MSG_DONTWAIT" && sel.Sel.Name != "SYS_SENDTO" &&
				sel.Sel.Name != "Tpacket2Hdr" && sel.Sel.Name != want {
				t.Errorf("%s: (*MmapSocket).%s uses unix.%s", fset.Position(sel.Pos()), fn.Name.Name, sel.Sel.Name)
			}
			return true
		})
	}
	for name := range allowed {
		t.Errorf("(*MmapSocket).%s not found in ring_linux.go", name)
	}
}

// TestMmapSocketStaysInItsMemory: the pipelined cycle's use of the link
// (a send, then a poll of the answer one period later) neither
// allocates nor grows the process's locked or resident memory: the rings
// are mapped once.
func TestMmapSocketSteadyStateAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	v := newVeth(t)
	a, b := v.openMmapPair(t)
	toB := testFrame(MinFrameSize, b.HardwareAddr(), a.HardwareAddr(), 0)
	toA := testFrame(40, a.HardwareAddr(), b.HardwareAddr(), 0)
	buf := make([]byte, MaxFrameSize)
	var failed error
	allocs := testing.AllocsPerRun(1000, func() {
		if err := a.Send(toB); err != nil {
			failed = err
		}
		if _, err := b.Recv(buf, time.Now().Add(time.Second)); err != nil {
			failed = err
		}
		if err := b.Send(toA); err != nil {
			failed = err
		}
		for {
			n, _, err := a.Poll(buf)
			if err != nil {
				failed = err
				return
			}
			if n > 0 {
				return
			}
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Errorf("send, recv, send, poll: %v allocations per run, want 0", allocs)
	}
}

// sendWhileDownAllocatesNothing: a cycle sends every period while the
// interface is down; the failure must cost no allocation.
func sendWhileDownAllocatesNothing(t *testing.T, l Link, frame []byte) {
	t.Helper()
	if raceEnabled {
		return
	}
	if allocs := testing.AllocsPerRun(50, func() { _ = l.Send(frame) }); allocs != 0 {
		t.Errorf("Send with the interface down allocates %v times", allocs)
	}
}

func BenchmarkRoundTripMmapSocket(b *testing.B) {
	v := newVeth(b)
	x, y := v.openMmapPair(b)
	benchmarkRoundTrip(b, x, y)
}
