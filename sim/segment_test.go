package sim

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// cycleFrame is the cyclic frame of a master running the reference line:
// the DC sync FRMW, the LRW of the process image, an AL status BRD.
func cycleFrame(tb testing.TB) []byte {
	return frameOf(tb,
		phys(wire.FRMW, 0x1001, 0x0910, make([]byte, 8)),
		logical(wire.LRW, 0, make([]byte, 6)),
		phys(wire.BRD, 0, 0x0130, make([]byte, 2)),
	)
}

func TestProcessDoesNotAllocate(t *testing.T) {
	seg := referenceLine(t, WithInputPattern(Pattern{Kind: PatternSine, Period: 50}))
	frame := cycleFrame(t)
	buf := make([]byte, len(frame))
	allocs := testing.AllocsPerRun(1000, func() {
		copy(buf, frame)
		if !seg.Process(buf) {
			panic("not processed")
		}
	})
	if allocs != 0 {
		t.Errorf("Process allocates %v times per LRW cycle frame", allocs)
	}
	bad := frame[:20]
	if a := testing.AllocsPerRun(100, func() { seg.Process(bad) }); a != 0 {
		t.Errorf("Process allocates %v times per dropped frame", a)
	}
}

func BenchmarkProcess(b *testing.B) {
	seg := referenceLine(b)
	frame := cycleFrame(b)
	buf := make([]byte, len(frame))
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		copy(buf, frame)
		seg.Process(buf)
	}
}

// FuzzProcess checks that no frame makes Process panic or change the
// frame's length, and that a frame it refuses is left alone.
func FuzzProcess(f *testing.F) {
	for _, name := range []string{"ethercrab-dc", "soem-sdinfo-ek1100-el1004", "ethercrab-ek1914-el3004-mailbox"} {
		for i, p := range capturePairs(f, name) {
			if i%25 == 0 {
				f.Add(p.req)
			}
		}
	}
	f.Add(cycleFrame(f))
	devs, err := ParseDevices([]string{"EK1100", "EL2004", "EL1014", "EL3204", "EL4132"})
	if err != nil {
		f.Fatal(err)
	}
	seg := NewSegment(devs)
	f.Fuzz(func(t *testing.T, frame []byte) {
		before := append([]byte(nil), frame...)
		n := len(frame)
		ok := seg.Process(frame)
		if len(frame) != n {
			t.Fatalf("frame length changed from %d to %d", n, len(frame))
		}
		if !ok && !bytes.Equal(frame, before) {
			_, err := wire.Validate(before)
			if err != nil {
				t.Fatalf("refused frame (%v) was changed", err)
			}
		}
	})
}

func TestServe(t *testing.T) {
	master, wireEnd := link.NewPipe()
	defer master.Close()
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	seg := referenceLine(t, WithLogger(logger))
	before := seg.Stats()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- seg.Serve(ctx, wireEnd) }()

	exchangeOnLink := func(f []byte) []byte {
		t.Helper()
		if err := master.Send(f); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, link.MaxFrameSize)
		n, err := master.Recv(buf, time.Now().Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return buf[:n]
	}
	// Outputs and inputs are touched from this goroutine while Serve runs.
	seg.Devices()[3].SetInputs([]byte{0x03})
	ans := datagrams(exchangeOnLink(frameOf(t, logical(wire.LRW, 0, []byte{0x21, 0, 0, 0, 0, 0}))))
	if len(ans) != 1 || ans[0].Data[1] != 0x03 {
		t.Fatalf("answer %+v", ans)
	}
	if o := seg.Devices()[1].Outputs(); !bytes.Equal(o, []byte{0x01}) {
		t.Errorf("EL2004 outputs % x", o)
	}
	// A state change is logged.
	exchangeOnLink(frameOf(t, phys(wire.BWR, 0, 0x0120, le16b(0x0002))))
	exchangeOnLink(frameOf(t, phys(wire.NOP, 0, 0, []byte{0})))
	// Not EtherCAT: not answered.
	bad := frameOf(t, phys(wire.NOP, 0, 0, []byte{0}))
	bad[12] = 0x08
	if err := master.Send(bad); err != nil {
		t.Fatal(err)
	}
	if _, err := master.Recv(make([]byte, link.MaxFrameSize), time.Now().Add(50*time.Millisecond)); err == nil {
		t.Error("a non-EtherCAT frame was answered")
	}
	stopServe(t, cancel, done)
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "device state changed") || !strings.Contains(logs.String(), "to=PREOP") {
		t.Errorf("state change not logged:\n%s", logs.String())
	}
	if st := seg.Stats(); st.Answered-before.Answered != 3 || st.Dropped-before.Dropped != 1 {
		t.Errorf("stats %+v", st)
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestRunErrors(t *testing.T) {
	if err := Run(t.Context(), "lo", nil, nil); err == nil {
		t.Error("Run without devices succeeded")
	}
	devs, err := ParseDevices([]string{"EK1100"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(t.Context(), "no-such-interface0", devs, nil); err == nil {
		t.Error("Run on a missing interface succeeded")
	}
	if err := RunSpecs(t.Context(), "lo", []string{"EX9999"}, nil); err == nil {
		t.Error("RunSpecs with an unknown model succeeded")
	}
}

// TestServeKeepingP serves over a socket pair with WithWaitKeepsP, as
// 'ecagent sim' does: frames are answered, and cancelling ends Serve
// although its wait holds the goroutine's P.
func TestServeKeepingP(t *testing.T) {
	master, wireEnd, err := link.NewSocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer wireEnd.Close()
	seg := referenceLine(t, WithWaitKeepsP())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- seg.Serve(ctx, wireEnd) }()
	buf := make([]byte, link.MaxFrameSize)
	for i := range 50 {
		seg.Devices()[3].SetInputs([]byte{byte(i % 16)}) // four inputs
		if err := master.Send(frameOf(t, logical(wire.LRW, 0, []byte{0x21, 0, 0, 0, 0, 0}))); err != nil {
			t.Fatal(err)
		}
		n, err := master.Recv(buf, time.Now().Add(2*time.Second))
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if ans := datagrams(buf[:n]); len(ans) != 1 || ans[0].Data[1] != byte(i%16) {
			t.Fatalf("frame %d: answer %+v", i, ans)
		}
	}
	stopServe(t, cancel, done)
}

// stopServe cancels a Serve started with the context cancel ends and wants
// it to return nil on done within 2 s.
func stopServe(t *testing.T, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v on cancel", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Serve did not stop")
	}
}
