package master

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// responder serves the far end of a pipe: for each frame it receives it
// calls answer, which returns the frames to send back (none to stay silent).
// It is the small fake for transport tests that need a misbehaving segment;
// everything else runs against the simulator.
func responder(t *testing.T, far link.Link, answer func(n int, frame []byte) [][]byte) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, link.MaxFrameSize)
		for n := 0; ; n++ {
			k, err := far.Recv(buf, time.Time{})
			if err != nil {
				return
			}
			for _, out := range answer(n, append([]byte(nil), buf[:k]...)) {
				_ = far.Send(out)
			}
		}
	}()
	t.Cleanup(func() { _ = far.Close(); wg.Wait() })
}

// answerWith sets every datagram's working counter to wkc and, for reads,
// fills its data with fill.
func answerWith(frame []byte, wkc uint16, fill byte) []byte {
	if !decodes(frame) {
		return nil
	}
	for d := range datagrams(frame) {
		if d.Command.Reads() {
			for i := range d.Data {
				d.Data[i] = fill
			}
		}
		d.SetWKC(wkc)
	}
	return frame
}

// decodes reports whether frame decodes as an EtherCAT frame.
func decodes(frame []byte) bool {
	var f wire.Frame
	return f.Decode(frame) == nil
}

// datagrams yields the datagrams of frame in order, none when frame does
// not decode; a datagram's data and working counter are frame's bytes.
// The datagram yielded is the same variable each time.
func datagrams(frame []byte) iter.Seq[*wire.Datagram] {
	return func(yield func(*wire.Datagram) bool) {
		var f wire.Frame
		if f.Decode(frame) != nil {
			return
		}
		it := f.Datagrams()
		var d wire.Datagram
		for it.Next(&d) {
			if !yield(&d) {
				return
			}
		}
	}
}

func newTestBus(t *testing.T, answer func(n int, frame []byte) [][]byte) (*Bus, *counters) {
	a, b := link.NewPipe()
	t.Cleanup(func() { _ = a.Close() })
	responder(t, b, answer)
	c := &counters{}
	// 250 ms: long enough that a busy machine does not cause a retry the
	// test did not ask for.
	return newBus(a, 250*time.Millisecond, 2, c), c
}

func TestBusMatchesIndexAndDiscardsStale(t *testing.T) {
	var prev []byte
	bus, c := newTestBus(t, func(n int, frame []byte) [][]byte {
		// Each answer is preceded by a replay of the previous answer: a
		// stale frame with an older index that must not be taken.
		ans := answerWith(frame, 1, byte(n+1))
		out := [][]byte{}
		if prev != nil {
			out = append(out, prev)
		}
		prev = append([]byte(nil), ans...)
		return append(out, ans)
	})
	ctx := context.Background()
	for i := range 3 {
		data := make([]byte, 2)
		if err := bus.FPRD(ctx, 0x1001, 0x0130, data); err != nil {
			t.Fatal(err)
		}
		if data[0] != byte(i+1) {
			t.Errorf("read %d returned data of answer %d", i+1, data[0])
		}
	}
	if got := c.stale.Load(); got != 2 {
		t.Errorf("stale frames %d, want 2", got)
	}
}

func TestBusRetriesUnansweredFrames(t *testing.T) {
	cases := []struct {
		name    string
		silent  int // frames left unanswered before answering
		wantErr error
		retries uint64
	}{
		{"answered at once", 0, nil, 0},
		{"answered on the second try", 1, nil, 1},
		{"answered on the last try", 2, nil, 2},
		{"never answered", 100, ErrNoResponse, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var indexes []uint8
			var mu sync.Mutex
			bus, c := newTestBus(t, func(n int, frame []byte) [][]byte {
				mu.Lock()
				indexes = append(indexes, frame[wire.EthernetHeaderLen+wire.HeaderLen+1])
				mu.Unlock()
				if n < tc.silent {
					return nil
				}
				return [][]byte{answerWith(frame, 1, 0)}
			})
			err := bus.FPWR(context.Background(), 0x1001, 0x0120, []byte{2, 0})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if got := c.retries.Load(); got != tc.retries {
				t.Errorf("retries %d, want %d", got, tc.retries)
			}
			// Every try is the same frame: the answer to any of them is
			// the answer.
			mu.Lock()
			defer mu.Unlock()
			for i := 1; i < len(indexes); i++ {
				if indexes[i] != indexes[0] {
					t.Errorf("try %d has index %d, the first %d", i, indexes[i], indexes[0])
				}
			}
		})
	}
}

// TestBusTakesTheLateAnswerOfAnEarlierTry: on a host that delays answers
// past a try's wait (the segment, or the simulator serving it, starved of
// CPU), the answer to the first try arriving while the second waits is
// the transaction's answer — a write the slave took once is not reported
// by the working counter of a later try it refused (a full mailbox), and
// nothing is counted stale.
func TestBusTakesTheLateAnswerOfAnEarlierTry(t *testing.T) {
	a, b := link.NewPipe()
	t.Cleanup(func() { _ = a.Close() })
	late := make(chan []byte, 1)
	responder(t, b, func(n int, frame []byte) [][]byte {
		switch n {
		case 0: // the first try's answer comes late: after the second was sent
			late <- answerWith(frame, 1, 0x11)
			return nil
		case 1: // the second try: the slave refuses it (working counter 0)
			return [][]byte{<-late, answerWith(frame, 0, 0x22)}
		}
		return [][]byte{answerWith(frame, 0, 0x33)}
	})
	c := &counters{}
	bus := newBus(a, 20*time.Millisecond, 3, c)
	data := make([]byte, 2)
	wkc, err := bus.Transact(context.Background(), wire.FPRD, wire.PhysicalAddress(0x1001, 0x0130), data)
	if err != nil || wkc != 1 || data[0] != 0x11 {
		t.Fatalf("Transact: wkc %d, data % x, err %v; want the first try's answer (1, 11 11)", wkc, data, err)
	}
	if got := c.retries.Load(); got != 1 {
		t.Errorf("retries %d, want 1", got)
	}
	if got := c.stale.Load(); got != 0 {
		t.Errorf("stale frames %d, want 0", got)
	}
}

// TestBusTriesBackOffAndFollowTheRoundTrip: each try waits twice as long
// as the one before, from the configured timeout or, once answers were
// measured slower than that, from the measured round trip.
func TestBusTriesBackOffAndFollowTheRoundTrip(t *testing.T) {
	var bus Bus
	bus.timeout = 10 * time.Millisecond
	for try, want := range []time.Duration{10, 20, 40, 80, 160, 320, 500, 500} {
		if got := bus.tryTimeout(try); got != want*time.Millisecond {
			t.Errorf("try %d waits %v, want %v", try, got, want*time.Millisecond)
		}
	}
	// Quick answers leave the configured timeout alone.
	for range 20 {
		bus.rtt.observe(200 * time.Microsecond)
	}
	if got := bus.tryTimeout(0); got != 10*time.Millisecond {
		t.Errorf("after quick answers the first try waits %v, want the configured 10ms", got)
	}
	// A host that delays every answer by about 30 ms raises the wait
	// above that, and a quiet host brings it back down.
	for range 50 {
		bus.rtt.observe(30 * time.Millisecond)
	}
	if got := bus.tryTimeout(0); got < 30*time.Millisecond || got > 60*time.Millisecond {
		t.Errorf("after 30 ms answers the first try waits %v, want 30 to 60 ms", got)
	}
	for range 100 {
		bus.rtt.observe(200 * time.Microsecond)
	}
	if got := bus.tryTimeout(0); got != 10*time.Millisecond {
		t.Errorf("after the host calmed down the first try waits %v, want the configured 10ms", got)
	}
	// A configured timeout above the cap is its own cap.
	bus = Bus{timeout: 2 * time.Second}
	if got := bus.tryTimeout(3); got != 2*time.Second {
		t.Errorf("with a 2 s timeout the fourth try waits %v, want 2s", got)
	}
}

func TestBusWorkingCounterErrors(t *testing.T) {
	bus, _ := newTestBus(t, func(n int, frame []byte) [][]byte { return [][]byte{answerWith(frame, 0, 0)} })
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
		want WKCError
		msg  string
	}{
		{"FPRD", func() error { return bus.FPRD(ctx, 0x1003, 0x0130, make([]byte, 2)) },
			WKCError{Command: wire.FPRD, Address: wire.PhysicalAddress(0x1003, 0x0130), Want: 1, Got: 0}, "FPRD 0x1003:0x0130: working counter 0, want 1"},
		{"APWR", func() error { return bus.APWR(ctx, 2, 0x0010, []byte{1, 0x10}) },
			WKCError{Command: wire.APWR, Address: wire.PhysicalAddress(wire.PositionADP(2), 0x0010), Want: 1, Got: 0}, "APWR position 2:0x0010"},
		{"BWR", func() error { return bus.BWR(ctx, 0x0120, []byte{1, 0}, 7) },
			WKCError{Command: wire.BWR, Address: wire.PhysicalAddress(0, 0x0120), Want: 7, Got: 0}, "BWR all:0x0120: working counter 0, want 7"},
		{"FPRW", func() error { return bus.FPRW(ctx, 0x1001, 0x0502, make([]byte, 2)) },
			WKCError{Command: wire.FPRW, Address: wire.PhysicalAddress(0x1001, 0x0502), Want: 3, Got: 0}, "want 3"},
		{"LRW", func() error { _, err := bus.LRW(ctx, 0x100, make([]byte, 4), 9); return err },
			WKCError{Command: wire.LRW, Address: 0x100, Want: 9, Got: 0}, "LRW logical 0x00000100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			var we *WKCError
			if !errors.As(err, &we) || *we != c.want {
				t.Fatalf("err %v, want %+v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q lacks %q", err.Error(), c.msg)
			}
		})
	}
	if _, err := bus.BRD(ctx, 0, make([]byte, 2), AnyWKC); err != nil {
		t.Errorf("BRD with AnyWKC: %v", err)
	}
}

func TestBusHonoursContext(t *testing.T) {
	bus, _ := newTestBus(t, func(int, []byte) [][]byte { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := bus.FPRD(ctx, 0x1001, 0, make([]byte, 2)); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}
