package shm

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// magic opens every segment: "ECAGSHM" and a NUL.
var magic = [8]byte{'E', 'C', 'A', 'G', 'S', 'H', 'M', 0}

// ringDesc is a ring's entry in the header.
type ringDesc struct {
	Offset     uint64 // region offset from the start of the segment
	Capacity   uint32 // records
	RecordSize uint32 // bytes per record
}

// imageDesc is the process image's entry in the header.
type imageDesc struct {
	Offset   uint64 // region offset from the start of the segment
	Capacity uint32 // bytes
	_        uint32
}

// header is the immutable part of the header region, at offset 0. The
// owner writes it once before any other process can see the segment;
// afterwards every process only reads it. Fields are in native byte
// order (both processes run the same binary on the same host) and every
// field sits at a multiple of its size, so 32- and 64-bit builds agree.
type header struct {
	Magic            [8]byte  // 0: "ECAGSHM\x00"
	Version          uint32   // 8: LayoutVersion of the creator
	HeaderSize       uint32   // 12: headerSize
	TotalSize        uint64   // 16: segment (file) size in bytes
	PeriodNanos      int64    // 24: Layout.Period
	CreatorPID       uint32   // 32: PID of the creating process
	_                uint32   // 36
	Nonce            uint64   // 40: random, new for every segment
	BootID           [16]byte // 48: kernel boot id at creation, or zeros
	CreatedUnixNanos int64    // 64: wall-clock creation time
	Samples          ringDesc // 72
	Events           ringDesc // 88
	Commands         ringDesc // 104
	Image            imageDesc
	_                [120]byte // 136..256: reserve
}

// heartbeatOffset is where the heartbeat line starts in the header region.
const heartbeatOffset = 256

// heartbeatLine is written by the cycle process every cycle, on its own
// cache lines after the immutable header.
type heartbeatLine struct {
	Seq      atomic.Uint64 // seqlock over Cycle and Mono: odd while writing
	Cycle    atomic.Uint64 // latest cycle number
	Mono     atomic.Int64  // CLOCK_MONOTONIC ns of that cycle
	CyclePID atomic.Int64  // PID of the cycle process, 0 if none yet
	// Cyclic frames sent and lost since cyclic operation began (see
	// Heartbeat.CountFrames); each written on its own, not under Seq.
	FramesSent atomic.Uint64
	FramesLost atomic.Uint64
	// Of those lost, the frames whose answer came late (Heartbeat.CountLate).
	FramesLate atomic.Uint64
	// The link's receive counters since the cycle process opened it
	// (Heartbeat.CountLink): frames that reached its socket, and those
	// of them the kernel dropped; each written on its own, not under Seq.
	LinkReceived atomic.Uint64
	LinkDrops    atomic.Uint64
	_            [regionAlign - 72]byte
}

// ringControl is the start of every ring's region: the producer's line
// and the consumer's line, regionAlign bytes apart.
type ringControl struct {
	Prod  atomic.Uint64 // records pushed since creation; written by the producer
	Drops atomic.Uint64 // records refused because the ring was full; producer
	_     [regionAlign - 16]byte
	Cons  atomic.Uint64 // records released by the consumer (committed)
	_     [regionAlign - 8]byte
}

// imageControl is the start of the image region.
type imageControl struct {
	Seq   atomic.Uint64 // seqlock: odd while the cycle writes, 0 before the first publish
	Cycle atomic.Uint64 // cycle number of the published image
	Len   atomic.Uint64 // bytes published
	_     [regionAlign - 24]byte
}

// Compile-time checks of the control blocks' sizes.
var (
	_ [256 - unsafe.Sizeof(header{})]byte
	_ [unsafe.Sizeof(header{}) - 256]byte
	_ [regionAlign - unsafe.Sizeof(heartbeatLine{})]byte
	_ [unsafe.Sizeof(heartbeatLine{}) - regionAlign]byte
	_ [ringControlSize - unsafe.Sizeof(ringControl{})]byte
	_ [unsafe.Sizeof(ringControl{}) - ringControlSize]byte
	_ [imageControlSize - unsafe.Sizeof(imageControl{})]byte
	_ [unsafe.Sizeof(imageControl{}) - imageControlSize]byte
	_ [headerSize - heartbeatOffset - unsafe.Sizeof(heartbeatLine{})]byte
)

// at returns a pointer of type *T to mem[off:]. The caller guarantees
// that mem[off] is 8-byte aligned and that
// T holds no Go pointers; at panics if T does not fit in mem. Such a T may live in memory the Go heap does not
// own (an mmapped segment): the garbage collector neither scans nor moves
// it, so the pointer stays valid until the mapping goes.
func at[T any](mem []byte, off uint64) *T {
	var zero T
	b := mem[off : off+uint64(unsafe.Sizeof(zero))]
	return (*T)(unsafe.Pointer(unsafe.SliceData(b)))
}

// layout returns the Layout h describes.
func (h *header) layout() Layout {
	return Layout{
		SampleSlots:  int(h.Samples.Capacity),
		ImageBytes:   int(h.Image.Capacity),
		CommandSlots: int(h.Commands.Capacity),
		EventSlots:   int(h.Events.Capacity),
		Period:       time.Duration(h.PeriodNanos),
	}
}

// fill writes every field of h from p except Magic, which the caller
// writes last.
func (h *header) fill(p plan, l Layout, id identity) {
	h.Version = LayoutVersion
	h.HeaderSize = headerSize
	h.TotalSize = p.total
	h.PeriodNanos = int64(l.Period)
	h.CreatorPID = uint32(id.pid)
	h.Nonce = id.nonce
	h.BootID = id.bootID
	h.CreatedUnixNanos = id.createdUnixNanos
	h.Samples = ringDesc{Offset: p.samples.offset, Capacity: uint32(p.samples.capacity), RecordSize: uint32(p.samples.recordSize)}
	h.Events = ringDesc{Offset: p.events.offset, Capacity: uint32(p.events.capacity), RecordSize: uint32(p.events.recordSize)}
	h.Commands = ringDesc{Offset: p.commands.offset, Capacity: uint32(p.commands.capacity), RecordSize: uint32(p.commands.recordSize)}
	h.Image = imageDesc{Offset: p.image.offset, Capacity: uint32(p.image.capacity)}
}

// identity is what the header records about the segment's creation.
type identity struct {
	pid              int
	nonce            uint64
	bootID           [16]byte
	createdUnixNanos int64
}

// check verifies h against this build's layout rules and against the
// size of the file holding it, and returns the plan it describes. name
// identifies the file in errors. The caller has checked that the file
// holds at least headerSize bytes.
func (h *header) check(name string, fileSize int64) (plan, error) {
	if h.Magic != magic {
		return plan{}, &ForeignError{Name: name, Magic: h.Magic}
	}
	if h.Version != LayoutVersion {
		return plan{}, &VersionError{Name: name, Segment: h.Version, Reader: LayoutVersion}
	}
	if h.HeaderSize != headerSize {
		return plan{}, &LayoutError{Name: name, Field: "header size", Got: uint64(h.HeaderSize), Want: headerSize}
	}
	l := h.layout()
	p, err := planFor(l)
	if err != nil {
		return plan{}, &LayoutError{Name: name, Field: "layout", Err: err}
	}
	fields := []struct {
		name      string
		got, want uint64
	}{
		{"total size", h.TotalSize, p.total},
		{"samples offset", h.Samples.Offset, p.samples.offset},
		{"samples record size", uint64(h.Samples.RecordSize), p.samples.recordSize},
		{"events offset", h.Events.Offset, p.events.offset},
		{"events record size", uint64(h.Events.RecordSize), p.events.recordSize},
		{"commands offset", h.Commands.Offset, p.commands.offset},
		{"commands record size", uint64(h.Commands.RecordSize), p.commands.recordSize},
		{"image offset", h.Image.Offset, p.image.offset},
	}
	for _, f := range fields {
		if f.got != f.want {
			return plan{}, &LayoutError{Name: name, Field: f.name, Got: f.got, Want: f.want}
		}
	}
	if uint64(fileSize) != p.total {
		return plan{}, &SizeError{Name: name, FileSize: fileSize, Want: int64(p.total)}
	}
	return p, nil
}

// unsafeSlice returns the n values of type T stored from mem[off:], with
// the same requirements as at. It panics if they do not fit in mem.
func unsafeSlice[T any](mem []byte, off, n uint64) []T {
	if n == 0 {
		return nil
	}
	var zero T
	b := mem[off : off+n*uint64(unsafe.Sizeof(zero))]
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
