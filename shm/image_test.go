package shm

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestImageNothingPublished(t *testing.T) {
	m := newHeapSegment(t, smallLayout()).Image()
	dst := []byte("untouched")
	if c, ok := m.Snapshot(dst); ok || c != 0 || string(dst) != "untouched" {
		t.Errorf("Snapshot before Publish = %d, %v, dst %q; want 0, false, untouched", c, ok, dst)
	}
	if m.Len() != 0 {
		t.Errorf("Len before Publish = %d", m.Len())
	}
}

func TestImageRoundTrip(t *testing.T) {
	pattern := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i)*7
		}
		return b
	}
	tests := []struct {
		name    string
		publish int // bytes published
		dst     int // len(dst)
		want    int // bytes expected in dst
		wantLen int // Len after publishing
	}{
		{"empty", 0, 8, 0, 0},
		{"one byte", 1, 8, 1, 1},
		{"seven", 7, 7, 7, 7},
		{"one word", 8, 8, 8, 8},
		{"word and a bit", 9, 16, 9, 9},
		{"full", 100, 100, 100, 100},
		{"short destination", 100, 13, 13, 100},
		{"longer than capacity", 130, 130, 100, 100},
	}
	for _, kind := range segmentKinds {
		for _, tt := range tests {
			t.Run(kind.name+"/"+tt.name, func(t *testing.T) {
				m := kind.make(t, smallLayout()).Image() // 100 bytes
				// An earlier, longer image must not leak into a shorter one.
				m.Publish(bytes.Repeat([]byte{0xee}, 100), 1)
				img := pattern(tt.publish, 3)
				m.Publish(img, 42)
				dst := bytes.Repeat([]byte{0xaa}, tt.dst)
				c, ok := m.Snapshot(dst)
				if !ok || c != 42 {
					t.Fatalf("Snapshot = %d, %v, want 42, true", c, ok)
				}
				if !bytes.Equal(dst[:tt.want], img[:tt.want]) {
					t.Errorf("snapshot %x, want %x", dst[:tt.want], img[:tt.want])
				}
				if rest := dst[tt.want:]; !bytes.Equal(rest, bytes.Repeat([]byte{0xaa}, len(rest))) {
					t.Errorf("Snapshot wrote past the image: %x", rest)
				}
				if m.Len() != tt.wantLen {
					t.Errorf("Len = %d, want %d", m.Len(), tt.wantLen)
				}
			})
		}
	}
}

// TestImageWriterDiedMidWrite checks that a sequence left odd by a dead
// writer makes readers give up (not spin forever) until the next writer
// repairs it.
func TestImageWriterDiedMidWrite(t *testing.T) {
	m := newHeapSegment(t, smallLayout()).Image()
	m.Publish([]byte("before"), 1)
	m.ctl.Seq.Add(1) // the writer died after making it odd
	dst := make([]byte, 6)
	if _, ok := m.Snapshot(dst); ok {
		t.Fatalf("Snapshot succeeded during a write")
	}
	m.Publish([]byte("after!"), 2)
	if c, ok := m.Snapshot(dst); !ok || c != 2 || string(dst) != "after!" {
		t.Errorf("Snapshot after repair = %q, %d, %v, want after!, 2, true", dst, c, ok)
	}
	if m.ctl.Seq.Load()&1 != 0 {
		t.Errorf("sequence %d still odd after Publish", m.ctl.Seq.Load())
	}
}

// TestImageNeverTorn publishes images whose every byte is the low byte of
// the cycle number (with an odd length, so the partial last word counts
// too) from one goroutine while another takes snapshots: any snapshot
// mixing two publications has halves that differ. The heap variant runs
// under the race detector's eye; the memfd variant on shared memory.
func TestImageNeverTorn(t *testing.T) {
	for _, kind := range segmentKinds[:2] {
		t.Run(kind.name, func(t *testing.T) {
			const size = 1003
			m := kind.make(t, Layout{SampleSlots: 1, CommandSlots: 1, EventSlots: 1, ImageBytes: size}).Image()
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				img := make([]byte, size)
				for c := uint64(1); !stop.Load(); c++ {
					for i := range img {
						img[i] = byte(c)
					}
					m.Publish(img, c)
				}
			}()
			dst := make([]byte, size)
			deadline := time.Now().Add(300 * time.Millisecond)
			var n snapshots
			for time.Now().Before(deadline) || n.good < 100 {
				if c, err := n.take(m, dst); err != nil {
					stop.Store(true)
					wg.Wait()
					t.Fatalf("torn snapshot of cycle %d: %v", c, err)
				}
			}
			stop.Store(true)
			wg.Wait()
			if n.distinct < 2 {
				t.Errorf("only %d distinct images seen in %d snapshots: the writer did not run alongside", n.distinct, n.good)
			}
			t.Logf("%d consistent snapshots, %d distinct", n.good, n.distinct)
		})
	}
}

// snapshots counts a reader's whole snapshots of an image whose writer
// fills every byte with its cycle's low byte, and how many distinct
// cycles they were.
type snapshots struct {
	good, distinct int
	last           uint64
}

// take snapshots m into dst and counts it; it returns the snapshot's
// cycle and an error if the snapshot is torn. A snapshot the writer
// overtook (Snapshot's ok false) is neither counted nor an error.
func (n *snapshots) take(m *Image, dst []byte) (uint64, error) {
	c, ok := m.Snapshot(dst)
	if !ok {
		return 0, nil
	}
	n.good++
	if c != n.last {
		n.distinct++
		n.last = c
	}
	return c, checkUniform(dst, byte(c))
}

// checkUniform reports an error unless every byte of b is want.
func checkUniform(b []byte, want byte) error {
	half := len(b) / 2
	if !bytes.Equal(b[:half], b[len(b)-half:]) {
		return fmt.Errorf("halves differ: %x… vs %x…", b[:8], b[len(b)-half:][:8])
	}
	for i, v := range b {
		if v != want {
			return fmt.Errorf("byte %d is %#x, want %#x", i, v, want)
		}
	}
	return nil
}

func TestImageAllocs(t *testing.T) {
	m := newMemfdSegment(t, DefaultLayout()).Image()
	img := bytes.Repeat([]byte{1, 2, 3}, 1000)
	dst := make([]byte, len(img))
	c := uint64(0)
	tests := []struct {
		name string
		f    func()
	}{
		{"Publish", func() { c++; img[5] = byte(c); m.Publish(img, c) }},
		{"Snapshot", func() { m.Snapshot(dst) }},
	}
	for _, tt := range tests {
		if a := testing.AllocsPerRun(1000, tt.f); a != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tt.name, a)
		}
	}
}

func BenchmarkPublishSnapshot(b *testing.B) {
	for _, size := range []int{64, 1024, 4096} {
		for _, changing := range []string{"few-words-change", "all-words-change"} {
			b.Run(fmt.Sprintf("%d/%s", size, changing), func(b *testing.B) {
				m := newMemfdSegment(b, Layout{SampleSlots: 1, CommandSlots: 1, EventSlots: 1, ImageBytes: size}).Image()
				img := make([]byte, size)
				dst := make([]byte, size)
				c := uint64(0)
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for b.Loop() {
					c++
					if changing == "all-words-change" {
						for i := 0; i < size; i += 8 {
							img[i] = byte(c)
						}
					} else {
						img[0] = byte(c)
					}
					m.Publish(img, c)
					m.Snapshot(dst)
				}
			})
		}
	}
}

// BenchmarkPublish measures the cycle's side alone.
func BenchmarkPublish(b *testing.B) {
	for _, size := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			m := newMemfdSegment(b, Layout{SampleSlots: 1, CommandSlots: 1, EventSlots: 1, ImageBytes: size}).Image()
			img := make([]byte, size)
			c := uint64(0)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				c++
				img[0], img[size/2] = byte(c), byte(c)
				m.Publish(img, c)
			}
		})
	}
}
