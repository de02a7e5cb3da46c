package link

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func newPipePair(t *testing.T, opts ...PipeOption) (a, b *PipeEnd) {
	a, b = NewPipe(opts...)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestPipeConformance(t *testing.T) {
	runLinkSuite(t, func(t *testing.T) (Link, Link) { return newPipePair(t) })
}

func TestPipeFullQueueDropsAndCounts(t *testing.T) {
	tests := []struct {
		name      string
		opts      []PipeOption
		send      int
		wantSlots int
	}{
		{"default", nil, 100, DefaultPipeQueueLen},
		{"four slots", []PipeOption{WithQueueLen(4)}, 10, 4},
		{"rounded up to a power of two", []PipeOption{WithQueueLen(5)}, 10, 8},
		{"at least one slot", []PipeOption{WithQueueLen(0)}, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newPipePair(t, tt.opts...)
			for i := range tt.send {
				if err := a.Send(testFrame(MinFrameSize, b.HardwareAddr(), a.HardwareAddr(), byte(i))); err != nil {
					t.Fatalf("Send #%d: %v", i, err)
				}
			}
			wantDropped := uint64(tt.send - tt.wantSlots)
			if got := b.Dropped(); got != wantDropped {
				t.Errorf("Dropped() = %d, want %d", got, wantDropped)
			}
			if got, want := b.Stats(), (Stats{Packets: uint64(tt.send), Drops: wantDropped}); got != want {
				t.Errorf("Stats() = %+v, want %+v", got, want)
			}
			if got := a.Dropped(); got != 0 {
				t.Errorf("sender's Dropped() = %d, want 0", got)
			}
			// The oldest frames survive, in order.
			for i := range tt.wantSlots {
				if got := recvSoon(t, b); got[HeaderSize] != byte(i+HeaderSize) {
					t.Fatalf("frame %d carries sequence %d", i, got[HeaderSize]-HeaderSize)
				}
			}
			if _, err := b.Recv(make([]byte, MaxFrameSize), time.Now()); !errors.Is(err, ErrTimeout) {
				t.Errorf("Recv after draining = %v, want ErrTimeout", err)
			}
		})
	}
}

func TestPipeMaxFrameSize(t *testing.T) {
	tests := []struct {
		name    string
		opts    []PipeOption
		size    int
		wantErr bool
	}{
		{"default accepts MaxFrameSize", nil, MaxFrameSize, false},
		{"default rejects MaxFrameSize+1", nil, MaxFrameSize + 1, true},
		{"custom accepts its size", []PipeOption{WithMaxFrameSize(100)}, 100, false},
		{"custom rejects one more", []PipeOption{WithMaxFrameSize(100)}, 101, true},
		{"never below MinFrameSize", []PipeOption{WithMaxFrameSize(10)}, MinFrameSize, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newPipePair(t, tt.opts...)
			err := a.Send(testFrame(tt.size, b.HardwareAddr(), a.HardwareAddr(), 0))
			if gotErr := errors.Is(err, ErrFrameSize); gotErr != tt.wantErr || (err != nil && !gotErr) {
				t.Fatalf("Send(%d bytes) = %v, want ErrFrameSize: %v", tt.size, err, tt.wantErr)
			}
			if !tt.wantErr {
				if got := recvSoon(t, b); len(got) != tt.size {
					t.Errorf("received %d bytes, want %d", len(got), tt.size)
				}
			}
		})
	}
}

func TestPipePeerCloseDrainsThenClosed(t *testing.T) {
	a, b := newPipePair(t)
	for i := range 3 {
		if err := a.Send(testFrame(MinFrameSize, b.HardwareAddr(), a.HardwareAddr(), byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
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

func TestPipePeerCloseUnblocksRecv(t *testing.T) {
	a, b := newPipePair(t)
	done := make(chan error, 1)
	go func() {
		_, err := b.Recv(make([]byte, MaxFrameSize), time.Time{})
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	a.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Recv = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Recv still blocked 2s after the peer closed")
	}
}

// TestPipeConcurrentSenderReceiver streams numbered frames from one
// goroutine to another: every frame arrives once, in order, or is counted
// as dropped. Run it with -race. Sequence numbers are 16 bits.
func TestPipeConcurrentSenderReceiver(t *testing.T) {
	const frames = 20000
	a, b := newPipePair(t, WithQueueLen(8))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer a.Close()
		frame := testFrame(MinFrameSize, b.HardwareAddr(), a.HardwareAddr(), 0)
		for i := range frames {
			frame[HeaderSize], frame[HeaderSize+1] = byte(i>>8), byte(i)
			if err := a.Send(frame); err != nil {
				t.Errorf("Send #%d: %v", i, err)
				return
			}
		}
	}()
	buf := make([]byte, MaxFrameSize)
	received, last := 0, -1
	for {
		n, err := b.Recv(buf, time.Now().Add(5*time.Second))
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		seq := int(buf[HeaderSize])<<8 | int(buf[HeaderSize+1])
		if n != MinFrameSize || seq <= last {
			t.Fatalf("received %d bytes, sequence %d after %d; want %d bytes, a later sequence", n, seq, last, MinFrameSize)
		}
		last = seq
		received++
	}
	wg.Wait()
	if got := uint64(received) + b.Dropped(); got != frames {
		t.Errorf("received %d + dropped %d = %d, want %d", received, b.Dropped(), got, frames)
	}
}

func BenchmarkRoundTripPipe(b *testing.B) {
	x, y := NewPipe()
	defer x.Close()
	defer y.Close()
	benchmarkRoundTrip(b, x, y)
}
