package shm

import (
	"errors"
	"fmt"
	"time"
)

// LayoutVersion identifies the byte layout of a segment: the header, the
// control blocks of every region and the three record types. Bump it on
// any change to them; TestGoldenLayout fails until the bump is made, and
// Attach refuses segments whose version differs from this one.
const LayoutVersion uint32 = 4

// Limits on a Layout. They keep every offset well inside 32 bits of
// capacity and the whole segment below a few hundred MiB.
const (
	// MaxSlots is the largest capacity of a ring, in records.
	MaxSlots = 1 << 20
	// MaxImageBytes is the largest process image a segment can carry.
	MaxImageBytes = 1 << 20
)

// Fixed sizes of the segment's parts, in bytes.
const (
	// headerSize is the size of the header region at offset 0: the
	// immutable header (256 bytes), the heartbeat line and a reserve.
	headerSize = 512
	// regionAlign aligns every region and every control line. 128 bytes
	// rather than one 64-byte cache line, because x86's adjacent-line
	// prefetcher pulls cache lines in pairs and would otherwise couple the
	// producer's and the consumer's positions.
	regionAlign = 128
	// ringControlSize holds a ring's producer line and consumer line.
	ringControlSize = 2 * regionAlign
	// imageControlSize holds the image's sequence, cycle and length.
	imageControlSize = regionAlign
	// sizeAlign rounds the total size of a segment (the file size).
	sizeAlign = 4096
)

// ErrInvalidLayout is wrapped by the errors that Layout.Validate returns.
var ErrInvalidLayout = errors.New("shm: invalid layout")

// Layout sizes the regions of a segment. Every offset of a segment is
// computed from a Layout, once, by the same function on both sides; the
// header records the result and Attach recomputes and compares it.
type Layout struct {
	// SampleSlots is the capacity of the sample ring (cycle → agent), a
	// power of two. At a 1 ms period, 8192 slots hold 8 s of samples.
	SampleSlots int
	// ImageBytes is the capacity of the process-image snapshot in bytes.
	// The cycle may publish fewer bytes (the image it brought up).
	ImageBytes int
	// CommandSlots is the capacity of the command ring (agent → cycle),
	// a power of two.
	CommandSlots int
	// EventSlots is the capacity of the event ring (cycle → agent), a
	// power of two.
	EventSlots int
	// Period is the cycle period the segment was created for. It is
	// recorded in the header for the attaching side and does not affect
	// any offset; zero means not recorded.
	Period time.Duration
}

// DefaultLayout returns a layout for a 1 ms cycle with 8 s of sample
// backlog, a 4 KiB process image, 64 pending commands and 1024 events.
func DefaultLayout() Layout {
	return Layout{
		SampleSlots:  8192,
		ImageBytes:   4096,
		CommandSlots: 64,
		EventSlots:   1024,
		Period:       time.Millisecond,
	}
}

// Validate reports whether l can be built: ring capacities are powers of
// two between 1 and MaxSlots, ImageBytes is between 0 and MaxImageBytes
// and Period is not negative.
func (l Layout) Validate() error {
	rings := []struct {
		name  string
		slots int
	}{
		{"SampleSlots", l.SampleSlots},
		{"CommandSlots", l.CommandSlots},
		{"EventSlots", l.EventSlots},
	}
	for _, r := range rings {
		if r.slots < 1 || r.slots > MaxSlots || r.slots&(r.slots-1) != 0 {
			return fmt.Errorf("%w: %s is %d, want a power of two from 1 to %d",
				ErrInvalidLayout, r.name, r.slots, MaxSlots)
		}
	}
	if l.ImageBytes < 0 || l.ImageBytes > MaxImageBytes {
		return fmt.Errorf("%w: ImageBytes is %d, want 0 to %d",
			ErrInvalidLayout, l.ImageBytes, MaxImageBytes)
	}
	if l.Period < 0 {
		return fmt.Errorf("%w: Period is %v, want zero or more", ErrInvalidLayout, l.Period)
	}
	return nil
}

// ringPlan places one ring: its control lines at offset, then capacity
// records of recordSize bytes.
type ringPlan struct {
	offset     uint64
	capacity   uint64
	recordSize uint64
}

// size is the ring's whole region, control lines and records, aligned.
func (p ringPlan) size() uint64 {
	return alignUp(ringControlSize+p.capacity*p.recordSize, regionAlign)
}

// recordsOffset is where the first record starts.
func (p ringPlan) recordsOffset() uint64 { return p.offset + ringControlSize }

// imagePlan places the process-image snapshot: its control line at
// offset, then capacity bytes rounded up to whole 8-byte words.
type imagePlan struct {
	offset   uint64
	capacity uint64
}

// words is the number of 8-byte words the image's data occupies.
func (p imagePlan) words() uint64 { return alignUp(p.capacity, 8) / 8 }

// size is the image's whole region, control line and data, aligned.
func (p imagePlan) size() uint64 {
	return alignUp(imageControlSize+p.words()*8, regionAlign)
}

// dataOffset is where the image's first byte starts.
func (p imagePlan) dataOffset() uint64 { return p.offset + imageControlSize }

// plan is the computed placement of every region of a segment. Regions
// follow the header in this order: samples, events, commands, image.
type plan struct {
	samples  ringPlan
	events   ringPlan
	commands ringPlan
	image    imagePlan
	total    uint64
}

// planFor computes the placement of every region of l. It is the only
// place offsets are computed.
func planFor(l Layout) (plan, error) {
	if err := l.Validate(); err != nil {
		return plan{}, err
	}
	var p plan
	off := uint64(headerSize)
	p.samples = ringPlan{offset: off, capacity: uint64(l.SampleSlots), recordSize: SampleSize}
	off += p.samples.size()
	p.events = ringPlan{offset: off, capacity: uint64(l.EventSlots), recordSize: EventSize}
	off += p.events.size()
	p.commands = ringPlan{offset: off, capacity: uint64(l.CommandSlots), recordSize: CommandSize}
	off += p.commands.size()
	p.image = imagePlan{offset: off, capacity: uint64(l.ImageBytes)}
	off += p.image.size()
	p.total = alignUp(off, sizeAlign)
	return p, nil
}

// alignUp rounds n up to a multiple of a, a power of two.
func alignUp(n, a uint64) uint64 { return (n + a - 1) &^ (a - 1) }
