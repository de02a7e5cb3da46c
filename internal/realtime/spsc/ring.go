package spsc

import (
	"fmt"
	"sync/atomic"
)

// cacheLine separates the producer's and the consumer's positions, so
// that each side writes a line of its own.
const cacheLine = 64

// Ring is a bounded queue of values of T for one producer goroutine and
// one consumer goroutine. Push and Pop copy the value, never block and
// never allocate; a full ring refuses the value. The zero Ring is not
// usable: make one with NewRing.
type Ring[T any] struct {
	buf  []T
	mask uint64
	_    [cacheLine]byte
	head atomic.Uint64 // next position the consumer takes
	_    [cacheLine]byte
	tail atomic.Uint64 // next position the producer fills
	_    [cacheLine]byte
}

// NewRing returns a ring for n values; n must be a power of two.
func NewRing[T any](n int) (*Ring[T], error) {
	if n <= 0 || n&(n-1) != 0 {
		return nil, fmt.Errorf("spsc: ring size %d is not a power of two", n)
	}
	return &Ring[T]{buf: make([]T, n), mask: uint64(n - 1)}, nil
}

// Push appends a copy of *v. It reports false, leaving the ring as it
// was, when the ring is full. Producer only.
func (r *Ring[T]) Push(v *T) bool {
	t := r.tail.Load()
	if t-r.head.Load() > r.mask {
		return false
	}
	r.buf[t&r.mask] = *v
	r.tail.Store(t + 1) // publishes the value
	return true
}

// Pop moves the oldest value into *v and reports whether there was one.
// Consumer only.
func (r *Ring[T]) Pop(v *T) bool {
	h := r.head.Load()
	if h == r.tail.Load() {
		return false
	}
	*v = r.buf[h&r.mask]
	r.head.Store(h + 1) // gives the place back to the producer
	return true
}
