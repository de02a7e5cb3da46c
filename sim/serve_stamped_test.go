package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// queuedLink is a link.Waiter and link.Poller whose frames were queued
// before Serve looked: each is received with the age given, as frames
// that the kernel took in while the simulator's process was held up.
type queuedLink struct {
	mu     sync.Mutex
	frames [][]byte
	ages   []time.Duration
	sent   chan []byte
}

func (l *queuedLink) Wait(deadline time.Time) error {
	l.mu.Lock()
	n := len(l.frames)
	l.mu.Unlock()
	if n > 0 {
		return nil
	}
	time.Sleep(time.Until(deadline))
	return fmt.Errorf("queued link: %w", link.ErrTimeout)
}

func (l *queuedLink) Poll(buf []byte) (int, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.frames) == 0 {
		return 0, 0, nil
	}
	n := copy(buf, l.frames[0])
	rx := time.Now().Add(-l.ages[0]).UnixNano()
	l.frames, l.ages = l.frames[1:], l.ages[1:]
	return n, rx, nil
}

func (l *queuedLink) Send(frame []byte) error {
	l.sent <- append([]byte(nil), frame...)
	return nil
}

func (l *queuedLink) Recv([]byte, time.Time) (int, error) {
	return 0, fmt.Errorf("queued link: Recv not expected, Serve waits and polls")
}
func (l *queuedLink) Close() error                   { return nil }
func (l *queuedLink) HardwareAddr() net.HardwareAddr { return net.HardwareAddr{2, 0, 0, 0, 0, 1} }

// TestServeKeepsArrivalTimeOfQueuedFrames: the master wrote outputs every
// 50 ms while the simulator was held up for 150 ms; the frames waited in
// the receive queue. Served with the times they arrived, the process data
// watchdog (100 ms) sees a write every 50 ms and the device stays in OP;
// served as if they arrived when the simulator woke, it would see 150 ms
// without outputs and drop to SAFEOP+ERR 0x001B.
func TestServeKeepsArrivalTimeOfQueuedFrames(t *testing.T) {
	seg, now := opEL4132(t)
	one(t, seg, phys(wire.FPWR, 0x1001, 0x1100, make([]byte, 4)))
	*now += 150_000_000 // the simulator wakes 150 ms after that write
	write := frameOf(t, phys(wire.FPWR, 0x1001, 0x1100, make([]byte, 4)))
	l := &queuedLink{
		frames: [][]byte{write, write, frameOf(t, phys(wire.FPRD, 0x1001, 0x0130, make([]byte, 6)))},
		ages:   []time.Duration{100 * time.Millisecond, 50 * time.Millisecond, 0},
		sent:   make(chan []byte, 3),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- seg.Serve(ctx, l) }()
	var status []byte
	for i := range 3 {
		select {
		case f := <-l.sent:
			if i == 2 {
				status = datagrams(f)[0].Data
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("answer %d of 3 not sent", i+1)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st, code := binary.LittleEndian.Uint16(status), binary.LittleEndian.Uint16(status[4:]); st != 0x08 {
		t.Errorf("AL status %#04x code %#04x after outputs every 50 ms that waited in the queue, want OP", st, code)
	}
}
