package link

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// pairFactory returns two connected links; it registers their Close with
// t.Cleanup.
type pairFactory func(t *testing.T) (a, b Link)

// testFrame returns an EtherCAT frame of size bytes (at least HeaderSize)
// from src to dst whose payload bytes count up from seq.
func testFrame(size int, dst, src net.HardwareAddr, seq byte) []byte {
	f := make([]byte, size)
	copy(f[0:6], dst)
	copy(f[6:12], src)
	f[12], f[13] = 0x88, 0xa4
	for i := HeaderSize; i < size; i++ {
		f[i] = seq + byte(i)
	}
	return f
}

// padded returns frame as it must arrive: zero-padded to MinFrameSize.
func padded(frame []byte) []byte {
	if len(frame) >= MinFrameSize {
		return frame
	}
	return append(bytes.Clone(frame), make([]byte, MinFrameSize-len(frame))...)
}

// recvSoon receives one frame, failing the test after a second.
func recvSoon(t testing.TB, l Link) []byte {
	t.Helper()
	buf := make([]byte, MaxFrameSize)
	n, err := l.Recv(buf, time.Now().Add(time.Second))
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return buf[:n]
}

// runLinkSuite checks the behaviour every Link promises.
func runLinkSuite(t *testing.T, newPair pairFactory) {
	t.Run("Exchange", func(t *testing.T) {
		a, b := newPair(t)
		sizes := []int{HeaderSize, 42, MinFrameSize - 1, MinFrameSize, MinFrameSize + 1, 200, 1514}
		for _, dir := range []struct {
			name     string
			from, to Link
		}{{"a to b", a, b}, {"b to a", b, a}} {
			for i, size := range sizes {
				frame := testFrame(size, dir.to.HardwareAddr(), dir.from.HardwareAddr(), byte(i))
				if err := dir.from.Send(frame); err != nil {
					t.Fatalf("%s: Send(%d bytes): %v", dir.name, size, err)
				}
				got := recvSoon(t, dir.to)
				if want := padded(frame); !bytes.Equal(got, want) {
					t.Errorf("%s: sent %d bytes, received %d bytes\n got %x\nwant %x", dir.name, size, len(got), got, want)
				}
			}
		}
	})

	t.Run("SendDoesNotScribbleOnCaller", func(t *testing.T) {
		a, b := newPair(t)
		frame := testFrame(20, b.HardwareAddr(), a.HardwareAddr(), 7)
		keep := bytes.Clone(frame)
		if err := a.Send(frame[:20:20]); err != nil {
			t.Fatal(err)
		}
		recvSoon(t, b)
		if !bytes.Equal(frame, keep) {
			t.Errorf("Send modified the caller's frame: %x, was %x", frame, keep)
		}
	})

	t.Run("RejectsFrameShorterThanHeader", func(t *testing.T) {
		a, _ := newPair(t)
		err := a.Send(make([]byte, HeaderSize-1))
		if !errors.Is(err, ErrFrameSize) {
			t.Errorf("Send(13 bytes) = %v, want ErrFrameSize", err)
		}
	})

	t.Run("HardwareAddr", func(t *testing.T) {
		a, b := newPair(t)
		macA, macB := a.HardwareAddr(), b.HardwareAddr()
		if len(macA) != 6 || len(macB) != 6 || bytes.Equal(macA, macB) {
			t.Fatalf("addresses %v and %v: want two distinct 6-byte MACs", macA, macB)
		}
		if macA[0]&1 != 0 {
			t.Errorf("address %v is multicast", macA)
		}
		macA[0] ^= 0xff
		if again := a.HardwareAddr(); bytes.Equal(again, macA) {
			t.Errorf("changing the returned address changed the link's: %v", again)
		}
	})

	t.Run("Timeout", func(t *testing.T) {
		a, _ := newPair(t)
		const wait = 30 * time.Millisecond
		start := time.Now()
		n, err := a.Recv(make([]byte, MaxFrameSize), start.Add(wait))
		elapsed := time.Since(start)
		if n != 0 || !errors.Is(err, ErrTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Recv on an idle link = %d, %v; want 0 and ErrTimeout", n, err)
		}
		var timeout interface{ Timeout() bool }
		if !errors.As(err, &timeout) || !timeout.Timeout() {
			t.Errorf("error %v has no Timeout() true", err)
		}
		var opErr *OpError
		if !errors.As(err, &opErr) || opErr.Op != "recv" || !strings.HasPrefix(err.Error(), "link: recv on ") {
			t.Errorf("error %q does not name the operation and link", err)
		}
		if elapsed < wait || elapsed > wait+500*time.Millisecond {
			t.Errorf("Recv returned after %v, want about %v", elapsed, wait)
		}
	})

	t.Run("PastDeadline", func(t *testing.T) {
		a, b := newPair(t)
		start := time.Now()
		_, err := b.Recv(make([]byte, MaxFrameSize), start.Add(-time.Second))
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("Recv with a past deadline on an idle link = %v, want ErrTimeout", err)
		}
		if elapsed := time.Since(start); elapsed > 100*time.Millisecond {
			t.Errorf("Recv with a past deadline took %v", elapsed)
		}
		frame := testFrame(MinFrameSize, b.HardwareAddr(), a.HardwareAddr(), 1)
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // let the frame arrive
		buf := make([]byte, MaxFrameSize)
		n, err := b.Recv(buf, time.Now().Add(-time.Second))
		if err != nil || !bytes.Equal(buf[:n], frame) {
			t.Errorf("Recv with a past deadline and a queued frame = %d, %v; want the frame", n, err)
		}
	})

	t.Run("Truncates", func(t *testing.T) {
		a, b := newPair(t)
		frame := testFrame(100, b.HardwareAddr(), a.HardwareAddr(), 3)
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 20)
		n, err := b.Recv(buf, time.Now().Add(time.Second))
		if err != nil || n != 20 || !bytes.Equal(buf, frame[:20]) {
			t.Errorf("Recv into 20 bytes = %d, %v, %x; want the first 20 bytes", n, err, buf[:n])
		}
	})

	for _, keepP := range []bool{false, true} {
		name := "CloseUnblocksRecv"
		if keepP {
			name += "KeepingP"
		}
		t.Run(name, func(t *testing.T) { closeUnblocksRecv(t, newPair, keepP) })
	}

	t.Run("UseAfterClose", func(t *testing.T) {
		a, b := newPair(t)
		for i := range 2 {
			if err := a.Close(); err != nil {
				t.Errorf("Close #%d: %v", i+1, err)
			}
		}
		if err := a.Send(testFrame(MinFrameSize, b.HardwareAddr(), a.HardwareAddr(), 0)); !errors.Is(err, ErrClosed) {
			t.Errorf("Send after Close = %v, want ErrClosed", err)
		}
		if _, err := a.Recv(make([]byte, MaxFrameSize), time.Time{}); !errors.Is(err, ErrClosed) {
			t.Errorf("Recv after Close = %v, want ErrClosed", err)
		}
	})

	t.Run("PollDoesNotWait", func(t *testing.T) {
		a, b := newPair(t)
		p, ok := b.(Poller)
		if !ok {
			t.Fatalf("%T is not a Poller", b)
		}
		buf := make([]byte, MaxFrameSize)
		if n, at, err := p.Poll(buf); n != 0 || at != 0 || err != nil {
			t.Fatalf("Poll with nothing sent = %d, %d, %v; want 0, 0, nil", n, at, err)
		}
		frame := testFrame(100, b.HardwareAddr(), a.HardwareAddr(), 3)
		before := time.Now().UnixNano()
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
		// The frame is on its way (a veth passes it in softirq): poll
		// until it is there, within a second.
		var n int
		var at int64
		var err error
		for end := time.Now().Add(time.Second); n == 0 && err == nil && time.Now().Before(end); {
			n, at, err = p.Poll(buf)
		}
		after := time.Now().UnixNano()
		if err != nil || !bytes.Equal(buf[:n], frame) {
			t.Fatalf("Poll = %d bytes, %v; want the %d bytes sent", n, err, len(frame))
		}
		if at < before || at > after {
			t.Errorf("receive time %d not within the send and the poll [%d, %d]", at, before, after)
		}
		if n, _, err := p.Poll(buf); n != 0 || err != nil {
			t.Errorf("second Poll = %d, %v; want nothing", n, err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			_ = a.Send(frame)
			for n, _, _ := p.Poll(buf); n == 0; n, _, _ = p.Poll(buf) {
			}
		})
		if allocs != 0 {
			t.Errorf("Send and Poll allocate %.1f times", allocs)
		}
		_ = b.Close()
		if _, _, err := p.Poll(buf); !errors.Is(err, ErrClosed) {
			t.Errorf("Poll after Close: %v, want ErrClosed", err)
		}
	})

	// Also with the wait kept on the goroutine's P, where the link offers it.
	for _, keepP := range []bool{false, true} {
		name := "WaitThenPollKeepsTheArrivalTime"
		if keepP {
			name += "KeepingP"
		}
		t.Run(name, func(t *testing.T) { waitThenPoll(t, newPair, keepP) })
	}

	t.Run("RoundTripAllocatesNothing", func(t *testing.T) {
		if raceEnabled {
			t.Skip("the race detector allocates")
		}
		a, b := newPair(t)
		toB := testFrame(MinFrameSize, b.HardwareAddr(), a.HardwareAddr(), 0)
		toA := testFrame(40, a.HardwareAddr(), b.HardwareAddr(), 0) // padded on send
		buf := make([]byte, MaxFrameSize)
		var failed error
		allocs := testing.AllocsPerRun(200, func() {
			deadline := time.Now().Add(time.Second)
			if err := a.Send(toB); err != nil {
				failed = err
			}
			if _, err := b.Recv(buf, deadline); err != nil {
				failed = err
			}
			if err := b.Send(toA); err != nil {
				failed = err
			}
			if _, err := a.Recv(buf, deadline); err != nil {
				failed = err
			}
		})
		if failed != nil {
			t.Fatal(failed)
		}
		if allocs != 0 {
			t.Errorf("Send+Recv both ways: %v allocations per run, want 0", allocs)
		}
	})

	t.Run("TimeoutAllocatesNothing", func(t *testing.T) {
		if raceEnabled {
			t.Skip("the race detector allocates")
		}
		a, _ := newPair(t)
		buf := make([]byte, MaxFrameSize)
		var failed error
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := a.Recv(buf, time.Now().Add(200*time.Microsecond)); !errors.Is(err, ErrTimeout) {
				failed = err
			}
		})
		if failed != nil {
			t.Fatalf("Recv = %v, want ErrTimeout", failed)
		}
		if allocs != 0 {
			t.Errorf("Recv timing out: %v allocations per run, want 0", allocs)
		}
	})
}

// benchmarkRoundTrip measures a frame from a to b and one back.
func benchmarkRoundTrip(b *testing.B, a, z Link) {
	toZ := testFrame(MinFrameSize, z.HardwareAddr(), a.HardwareAddr(), 0)
	toA := testFrame(MinFrameSize, a.HardwareAddr(), z.HardwareAddr(), 0)
	buf := make([]byte, MaxFrameSize)
	b.ReportAllocs()
	for b.Loop() {
		deadline := time.Now().Add(time.Second)
		if err := a.Send(toZ); err != nil {
			b.Fatal(err)
		}
		if _, err := z.Recv(buf, deadline); err != nil {
			b.Fatal(err)
		}
		if err := z.Send(toA); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Recv(buf, deadline); err != nil {
			b.Fatal(err)
		}
	}
}

// waitThenPoll is the suite's WaitThenPollKeepsTheArrivalTime, with Wait
// keeping the goroutine's P (WaitKeeper) when keepP is set.
func waitThenPoll(t *testing.T, newPair pairFactory, keepP bool) {
	a, b := newPair(t)
	w, ok := b.(Waiter)
	if !ok {
		t.Fatalf("%T is not a Waiter", b)
	}
	if keepP {
		k, ok := b.(WaitKeeper)
		if !ok {
			t.Skipf("%T is not a WaitKeeper", b)
		}
		k.SetWaitKeepsP(true)
	}
	p := b.(Poller)
	if err := w.Wait(time.Now().Add(20 * time.Millisecond)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Wait with nothing sent = %v, want ErrTimeout", err)
	}
	frame := testFrame(100, b.HardwareAddr(), a.HardwareAddr(), 4)
	sent := time.Now().UnixNano()
	if err := a.Send(frame); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(time.Now().Add(time.Second)); err != nil {
		t.Fatalf("Wait after a send = %v", err)
	}
	// The reader is held up after the frame came: the time Poll
	// gives is still the arrival's, before the hold-up ended.
	held := time.Now().Add(5 * time.Millisecond)
	for time.Now().Before(held) {
	}
	buf := make([]byte, MaxFrameSize)
	n, at, err := p.Poll(buf)
	if err != nil || !bytes.Equal(buf[:n], frame) {
		t.Fatalf("Poll after Wait = %d bytes, %v; want the %d bytes sent", n, err, len(frame))
	}
	if at < sent || at >= held.UnixNano() {
		t.Errorf("receive time %d not between the send %d and the end of the hold-up %d", at, sent, held.UnixNano())
	}
	// Wait does not take the frame: with one queued, it returns at once
	// however often it is called.
	if err := a.Send(frame); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.Wait(time.Now().Add(time.Second)); err != nil {
			t.Fatalf("Wait with a frame queued = %v", err)
		}
	}
	if n, _, _ := p.Poll(buf); n == 0 {
		t.Error("the frame waited for is gone")
	}
	_ = b.Close()
	if err := w.Wait(time.Time{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close = %v, want ErrClosed", err)
	}
}

// closeUnblocksRecv is the suite's CloseUnblocksRecv, with the wait kept on
// the goroutine's P (WaitKeeper) when keepP is set.
func closeUnblocksRecv(t *testing.T, newPair pairFactory, keepP bool) {
	a, _ := newPair(t)
	if keepP {
		k, ok := a.(WaitKeeper)
		if !ok {
			t.Skipf("%T is not a WaitKeeper", a)
		}
		k.SetWaitKeepsP(true)
	}
	type result struct {
		n   int
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		n, err := a.Recv(make([]byte, MaxFrameSize), time.Time{})
		done <- result{n, err, time.Now()}
	}()
	time.Sleep(20 * time.Millisecond) // let Recv block
	start := time.Now()
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case r := <-done:
		if r.n != 0 || !errors.Is(r.err, ErrClosed) || !errors.Is(r.err, net.ErrClosed) {
			t.Errorf("blocked Recv returned %d, %v; want ErrClosed", r.n, r.err)
		}
		// From Close's start to Recv's return, not to Close's: closing a
		// socket with rings waits for the kernel's RCU grace periods
		// (one per ring), 100 ms and more on a loaded host, after the
		// blocked Recv has gone.
		if elapsed := r.at.Sub(start); elapsed > 100*time.Millisecond {
			t.Errorf("blocked Recv returned %v after Close began", elapsed)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Recv still blocked 2s after Close")
	}
}
