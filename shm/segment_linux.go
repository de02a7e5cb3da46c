package shm

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Create creates a segment for l as a new file at path (normally under
// /dev/shm) and maps it. It fails with an error matching fs.ErrExist if
// path exists: a running cycle process may still use that segment, so
// the caller decides between Attach and removing it. The file appears at
// path complete, header and all, so an Attach racing Create never sees a
// half-written segment. Remove the file with os.Remove when done.
func Create(path string, l Layout) (*Segment, error) {
	p, err := planFor(l)
	if err != nil {
		return nil, fmt.Errorf("shm: create %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("shm: create %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // the segment lives on under path
	s, err := build(f, path, p, l)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := os.Link(tmp, path); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("shm: create %s: %w", path, err)
	}
	return s, nil
}

// CreateMemfd creates a segment for l in an anonymous memory file
// (memfd_create) named name, sealed against resizing. Hand it to the
// cycle process through exec.Cmd.ExtraFiles (see File); no other process
// can find it by path.
func CreateMemfd(name string, l Layout) (*Segment, error) {
	p, err := planFor(l)
	if err != nil {
		return nil, fmt.Errorf("shm: create memfd %s: %w", name, err)
	}
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("shm: create memfd %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), "memfd:"+name)
	s, err := build(f, f.Name(), p, l)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	// Sealed, the size can never change under a mapping (which would make
	// the mapping's tail fault with SIGBUS). Kernels without sealing
	// answer EINVAL; the segment works without the seal.
	_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
	if err != nil && !errors.Is(err, unix.EINVAL) {
		_ = s.Close()
		return nil, fmt.Errorf("shm: seal %s: %w", f.Name(), err)
	}
	return s, nil
}

// build sizes the new, empty file f for p, maps it, writes the header and
// returns the segment, which owns f.
func build(f *os.File, name string, p plan, l Layout) (*Segment, error) {
	if err := reserve(f, int64(p.total)); err != nil {
		return nil, fmt.Errorf("shm: create %s: %w", name, err)
	}
	mem, err := mapFile(f, p.total)
	if err != nil {
		return nil, fmt.Errorf("shm: create %s: %w", name, err)
	}
	initHeader(mem, p, l, newIdentity(hostBootID()))
	return adopt(bind(mem, p, name), f), nil
}

// reserve makes f size bytes long with its storage allocated now, so that
// a full /dev/shm is an error here rather than a SIGBUS in the cycle.
// Where the file system cannot allocate ahead, it only sets the size.
func reserve(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	runtime.KeepAlive(f)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("reserve %d bytes: %w", size, err)
	}
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("size to %d bytes: %w", size, err)
	}
	return nil
}

// Attach maps the segment at path after checking its header. A file that
// is not a segment this build can use yields an error matching
// ErrIncompatible: *ForeignError, *VersionError, *SizeError, *LayoutError
// or *StaleError.
func Attach(path string) (*Segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: attach: %w", err)
	}
	s, err := AttachFile(f)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return s, nil
}

// AttachFile maps the segment in f, an open read-write file (a memfd
// inherited as fd 3 is os.NewFile(3, "shm")), after checking its header
// as Attach does. On success the Segment owns f and Close closes it; on
// error f stays open.
func AttachFile(f *os.File) (*Segment, error) {
	name := f.Name()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shm: attach %s: %w", name, err)
	}
	size := st.Size()
	// Read the header into 8-byte-aligned memory and check it before
	// mapping: a foreign file is never mapped, let alone pre-faulted.
	var buf [headerSize / 8]uint64
	hb := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), headerSize)
	n, err := f.ReadAt(hb, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("shm: attach %s: read header: %w", name, err)
	}
	if n < headerSize {
		var got [8]byte
		k := copy(got[:], hb[:min(n, len(magic))])
		if string(got[:k]) != string(magic[:k]) {
			return nil, &ForeignError{Name: name, Magic: got}
		}
		return nil, &SizeError{Name: name, FileSize: size, Want: headerSize}
	}
	h := at[header](hb, 0)
	p, err := h.check(name, size)
	if err != nil {
		return nil, err
	}
	if host := hostBootID(); h.BootID != ([16]byte{}) && host != ([16]byte{}) && host != h.BootID {
		return nil, &StaleError{Name: name, SegmentBootID: h.BootID, HostBootID: host}
	}
	mem, err := mapFile(f, p.total)
	if err != nil {
		return nil, fmt.Errorf("shm: attach %s: %w", name, err)
	}
	return adopt(bind(mem, p, name), f), nil
}

// adopt hands f and the mapping's release to s.
func adopt(s *Segment, f *os.File) *Segment {
	s.file = f
	s.unmap = unix.Munmap
	s.lock = unix.Mlock
	return s
}

// mapFile maps the first size bytes of f shared and read-write, and
// faults every page in with write access, so that neither side takes a
// page fault in its steady state.
func mapFile(f *os.File, size uint64) ([]byte, error) {
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	runtime.KeepAlive(f)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	// MAP_POPULATE faults shared pages in for reading only. Ask for write
	// faults (Linux 5.14+), or touch every page with an atomic add of
	// zero, which writes without changing what the other side wrote.
	if err := unix.Madvise(mem, unix.MADV_POPULATE_WRITE); err != nil {
		page := unix.Getpagesize()
		for off := 0; off < len(mem); off += page {
			atomic.AddUint64(at[uint64](mem, uint64(off)), 0)
		}
	}
	return mem, nil
}

// hostBootID returns the running kernel's boot id, or zeros if it cannot
// be read.
func hostBootID() [16]byte {
	var id [16]byte
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return id
	}
	h := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
	if hex.DecodedLen(len(h)) != len(id) {
		return id
	}
	if _, err := hex.Decode(id[:], []byte(h)); err != nil {
		return [16]byte{}
	}
	return id
}

// randomNonce draws a segment's nonce from the kernel's random number
// generator (getrandom(2), which blocks only until the pool is first
// initialised early in boot). It is an identity, not a secret: this keeps
// crypto/rand, and the crypto packages behind it, out of the cycle
// process. Should getrandom fail (a seccomp filter without it), the
// creation time and PID still tell segments apart.
func randomNonce() uint64 {
	var b [8]byte
	for {
		n, err := unix.Getrandom(b[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != len(b) {
			return fallbackNonce()
		}
		return binary.NativeEndian.Uint64(b[:])
	}
}
