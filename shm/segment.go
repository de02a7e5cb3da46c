package shm

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"
)

// Segment is one shared-memory segment: the header, the sample, event and
// command rings, the process-image snapshot and the heartbeat. The agent
// creates it (Create, CreateMemfd); the cycle process, and an agent that
// restarts, attach to it (Attach, AttachFile).
//
// A Segment's methods and the rings, image and heartbeat it hands out may
// be used until Close; afterwards the memory behind them is gone.
type Segment struct {
	mem   []byte
	file  *os.File
	unmap func([]byte) error
	lock  func([]byte) error
	info  Info

	samples   Ring[Sample]
	events    Ring[Event]
	commands  Ring[Command]
	image     Image
	heartbeat Heartbeat
}

// Info is what a segment's header says about it.
type Info struct {
	// Name is the segment's path, "memfd:<name>", or "heap" for New.
	Name string
	// Version is the segment's layout version (LayoutVersion).
	Version uint32
	// Size is the segment's size in bytes.
	Size int64
	// Layout is the layout the segment was created with.
	Layout Layout
	// CreatorPID is the PID of the process that created the segment.
	CreatorPID int
	// Nonce is a random number drawn at creation: a process that attaches
	// again can tell the segment it knew from a new one at the same path.
	Nonce uint64
	// BootID is the kernel boot id at creation (zeros if unknown).
	BootID [16]byte
	// Created is the wall-clock creation time.
	Created time.Time
}

// New creates a segment in ordinary Go memory, for a cycle and an agent
// that share one process, and for tests. It behaves like a shared one
// except that no other process can attach and Lock may be refused.
func New(l Layout) (*Segment, error) {
	p, err := planFor(l)
	if err != nil {
		return nil, fmt.Errorf("shm: new segment: %w", err)
	}
	words := make([]uint64, p.total/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), p.total)
	initHeader(mem, p, l, newIdentity([16]byte{}))
	return bind(mem, p, "heap"), nil
}

// newIdentity returns the identity of a segment created now by this
// process under bootID.
func newIdentity(bootID [16]byte) identity {
	return identity{
		pid:              os.Getpid(),
		nonce:            randomNonce(),
		bootID:           bootID,
		createdUnixNanos: time.Now().UnixNano(),
	}
}

// fallbackNonce is a nonce when the kernel gives no random bytes: the
// creation time in nanoseconds mixed with the PID (splitmix64's
// finaliser), distinct for every segment this host creates.
func fallbackNonce() uint64 {
	z := uint64(time.Now().UnixNano()) ^ uint64(os.Getpid())<<48
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// initHeader writes the header of a new, zeroed segment, the magic last.
func initHeader(mem []byte, p plan, l Layout, id identity) {
	h := at[header](mem, 0)
	h.fill(p, l, id)
	h.Magic = magic
}

// bind makes a Segment over mem, whose header has been checked against p.
func bind(mem []byte, p plan, name string) *Segment {
	h := at[header](mem, 0)
	return &Segment{
		mem: mem,
		info: Info{
			Name:       name,
			Version:    h.Version,
			Size:       int64(h.TotalSize),
			Layout:     h.layout(),
			CreatorPID: int(h.CreatorPID),
			Nonce:      h.Nonce,
			BootID:     h.BootID,
			Created:    time.Unix(0, h.CreatedUnixNanos),
		},
		samples:   bindRing[Sample](mem, p.samples),
		events:    bindRing[Event](mem, p.events),
		commands:  bindRing[Command](mem, p.commands),
		image:     bindImage(mem, p.image),
		heartbeat: Heartbeat{line: at[heartbeatLine](mem, heartbeatOffset)},
	}
}

// Info returns what the segment's header says about it.
func (s *Segment) Info() Info { return s.info }

// Layout returns the layout the segment was created with.
func (s *Segment) Layout() Layout { return s.info.Layout }

// Samples returns the sample ring: the cycle pushes, the agent reads.
func (s *Segment) Samples() *Ring[Sample] { return &s.samples }

// Events returns the event ring: the cycle pushes, the agent reads.
func (s *Segment) Events() *Ring[Event] { return &s.events }

// Commands returns the command ring: the agent pushes, the cycle reads.
func (s *Segment) Commands() *Ring[Command] { return &s.commands }

// Image returns the process-image snapshot: the cycle publishes, the
// agent takes snapshots.
func (s *Segment) Image() *Image { return &s.image }

// Heartbeat returns the cycle process's heartbeat.
func (s *Segment) Heartbeat() *Heartbeat { return &s.heartbeat }

// File returns the file behind the segment, nil for New. Pass it in
// exec.Cmd.ExtraFiles to hand the segment to a child process, which
// attaches with AttachFile. It stays owned by the Segment.
func (s *Segment) File() *os.File { return s.file }

// Lock locks the segment's pages in memory (mlock) so the cycle never
// takes a page fault on them. A refusal (no privilege, RLIMIT_MEMLOCK) is
// returned for the caller to report; the segment works without it.
func (s *Segment) Lock() error {
	if s.lock == nil {
		return fmt.Errorf("shm: lock %s: %w", s.info.Name, errors.ErrUnsupported)
	}
	if err := s.lock(s.mem); err != nil {
		return fmt.Errorf("shm: lock %s (%d bytes): %w", s.info.Name, len(s.mem), err)
	}
	return nil
}

// Close unmaps the segment and closes its file. The file in /dev/shm (if
// any) stays: remove it with os.Remove when no process needs it any more.
// Calling Close again does nothing.
func (s *Segment) Close() error {
	if s.mem == nil {
		return nil
	}
	var errs []error
	if s.unmap != nil {
		if err := s.unmap(s.mem); err != nil {
			errs = append(errs, fmt.Errorf("shm: unmap %s: %w", s.info.Name, err))
		}
	}
	s.mem = nil
	if s.file != nil {
		if err := s.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("shm: close %s: %w", s.info.Name, err))
		}
		s.file = nil
	}
	return errors.Join(errs...)
}
