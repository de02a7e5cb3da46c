package shm

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync/atomic"
)

// compareBlock is how many bytes Publish compares at once before storing
// the words that changed.
const compareBlock = 64

// snapshotTries bounds how often Snapshot and Heartbeat.Read retry when
// the writer is in the middle of an update.
const snapshotTries = 64

// Image is the process-image snapshot: the cycle publishes its outputs and
// inputs after every exchange, and readers copy a consistent snapshot at
// their own pace. It is a sequence lock: the cycle makes the sequence odd,
// writes, and makes it even again; a reader copies between two loads of
// an even, unchanged sequence, or tries again. The cycle never waits for a
// reader.
//
// Every word of the data is read and written with atomic 8-byte loads and
// stores, so a reader racing the writer reads stale or fresh words but
// never a value the memory model leaves undefined; the sequence check
// throws such a mixed copy away. Publish stores only the words that
// changed, so an image that changes little costs little.
type Image struct {
	ctl   *imageControl
	words []uint64
	data  []byte // the same memory as words, for the writer's comparisons
	size  int
}

// bindImage makes an Image over the image region mem[p.offset:].
func bindImage(mem []byte, p imagePlan) Image {
	return Image{
		ctl:   at[imageControl](mem, p.offset),
		words: unsafeSlice[uint64](mem, p.dataOffset(), p.words()),
		data:  mem[p.dataOffset() : p.dataOffset()+8*p.words()],
		size:  int(p.capacity),
	}
}

// Cap returns the largest image the segment holds, in bytes.
func (m *Image) Cap() int { return m.size }

// Len returns the length of the image last published, in bytes.
func (m *Image) Len() int { return int(min(m.ctl.Len.Load(), uint64(m.size))) }

// Publish makes img the current snapshot, stamped with cycle. Bytes beyond
// Cap are not published (check Cap at bring-up). Only the cycle calls
// Publish; it never blocks and never allocates.
func (m *Image) Publish(img []byte, cycle uint64) {
	n := min(len(img), m.size)
	seq := m.ctl.Seq.Load()
	// A writer that died half-way left the sequence odd; it stays odd
	// while this one writes.
	odd := seq | 1
	if odd != seq {
		m.ctl.Seq.Store(odd)
	}
	// Compare a block at a time and store only the words of blocks that
	// changed. The comparison reads the words without atomics: the cycle
	// is their only writer, and reads racing reads are no race.
	full := n / 8
	for off := 0; off < 8*full; off += compareBlock {
		end := min(off+compareBlock, 8*full)
		if bytes.Equal(m.data[off:end], img[off:end]) {
			continue
		}
		for i := off / 8; i < end/8; i++ {
			storeChanged(&m.words[i], binary.NativeEndian.Uint64(img[8*i:]))
		}
	}
	if tail := n - 8*full; tail > 0 {
		var last [8]byte
		copy(last[:], img[8*full:n])
		storeChanged(&m.words[full], binary.NativeEndian.Uint64(last[:]))
	}
	if m.ctl.Len.Load() != uint64(n) {
		m.ctl.Len.Store(uint64(n))
	}
	m.ctl.Cycle.Store(cycle)
	m.ctl.Seq.Store(odd + 1)
}

// storeChanged stores v at p unless p already holds it.
func storeChanged(p *uint64, v uint64) {
	if *p != v {
		atomic.StoreUint64(p, v)
	}
}

// Snapshot copies the current image into dst (its first min(len(dst),
// Len()) bytes; the rest of dst is left alone) and returns the cycle it
// was published in. ok is false when nothing was published yet, or when
// the writer kept changing the image through every one of a bounded
// number of attempts (or died while writing). It never allocates.
func (m *Image) Snapshot(dst []byte) (cycle uint64, ok bool) {
	for range snapshotTries {
		s1 := m.ctl.Seq.Load()
		if s1 == 0 {
			return 0, false
		}
		if s1&1 == 0 {
			cycle = m.ctl.Cycle.Load()
			n := min(len(dst), int(min(m.ctl.Len.Load(), uint64(m.size))))
			m.copyOut(dst[:n])
			if m.ctl.Seq.Load() == s1 {
				return cycle, true
			}
		}
		runtime.Gosched()
	}
	return 0, false
}

// copyOut copies the first len(dst) bytes of the image into dst.
func (m *Image) copyOut(dst []byte) {
	full := len(dst) / 8
	for i := range full {
		binary.NativeEndian.PutUint64(dst[8*i:], atomic.LoadUint64(&m.words[i]))
	}
	if tail := len(dst) - 8*full; tail > 0 {
		var last [8]byte
		binary.NativeEndian.PutUint64(last[:], atomic.LoadUint64(&m.words[full]))
		copy(dst[8*full:], last[:tail])
	}
}
