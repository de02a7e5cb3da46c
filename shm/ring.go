package shm

// Record is the set of fixed-size, pointer-free types a Ring carries.
// Listing them (rather than accepting any type) keeps pointers out of
// shared memory and keeps every record layout pinned by TestGoldenLayout.
type Record interface {
	Sample | Command | Event
}

// Ring is a single-producer, single-consumer ring of fixed-size records
// in a segment. One process pushes, one process reads; the positions
// live in the segment, so either side can restart and resume.
//
// The producer never waits: when the ring is full, Push drops the new
// record and counts it in Drops. The producer keeps the consumer's
// position it last saw and reloads it only when the ring looks full.
//
// The consumer reads records with Next or Drain, which copy them out and
// advance a private read position, and releases them with Commit once it
// has processed them (reading the producer's position once per batch).
// Records read but not committed are read again by a consumer that
// attaches after this one stops. A typical loop:
//
//	n := ring.Drain(buf)
//	process(buf[:n])
//	ring.Commit()
//
// Push is for the producing side only, and Next, Drain, Commit and
// Discard for the consuming side only; the other methods may be called
// from anywhere.
type Ring[T Record] struct {
	ctl   *ringControl
	slots []T
	mask  uint64

	// Producer side: the next position to write, and the consumer
	// position last loaded.
	prod     uint64
	consSeen uint64
	_        [regionAlign - 16]byte

	// Consumer side: the next position to read, and the producer
	// position last loaded.
	read     uint64
	prodSeen uint64
}

// bindRing makes a Ring over the ring region mem[p.offset:], starting
// both sides at the positions stored there.
func bindRing[T Record](mem []byte, p ringPlan) Ring[T] {
	ctl := at[ringControl](mem, p.offset)
	slots := unsafeSlice[T](mem, p.recordsOffset(), p.capacity)
	prod := ctl.Prod.Load()
	cons := ctl.Cons.Load()
	return Ring[T]{
		ctl:      ctl,
		slots:    slots,
		mask:     p.capacity - 1,
		prod:     prod,
		consSeen: cons,
		read:     cons,
		prodSeen: cons,
	}
}

// Cap returns the ring's capacity in records.
func (r *Ring[T]) Cap() int { return len(r.slots) }

// Len returns the number of records pushed and not yet committed.
func (r *Ring[T]) Len() int {
	cons := r.ctl.Cons.Load()
	return int(r.ctl.Prod.Load() - cons)
}

// Pushed returns the number of records pushed since the segment was
// created (the producer position).
func (r *Ring[T]) Pushed() uint64 { return r.ctl.Prod.Load() }

// Committed returns the number of records released by consumers since the
// segment was created (the consumer position).
func (r *Ring[T]) Committed() uint64 { return r.ctl.Cons.Load() }

// Drops returns the number of records Push refused because the ring was
// full, since the segment was created.
func (r *Ring[T]) Drops() uint64 { return r.ctl.Drops.Load() }

// Push copies rec into the ring and reports whether it fitted. When the
// ring is full it drops rec, counts the drop and returns false; it never
// waits and never allocates.
func (r *Ring[T]) Push(rec *T) bool {
	pos := r.prod
	size := uint64(len(r.slots))
	if pos-r.consSeen >= size {
		r.consSeen = r.ctl.Cons.Load()
		if pos-r.consSeen >= size {
			r.ctl.Drops.Add(1)
			return false
		}
	}
	r.slots[pos&r.mask] = *rec
	r.prod = pos + 1
	// The store publishes the record: a consumer that loads the new
	// position also sees the record written before it.
	r.ctl.Prod.Store(pos + 1)
	return true
}

// available loads the producer position and returns how many records
// wait after the read position.
func (r *Ring[T]) available() uint64 {
	r.prodSeen = r.ctl.Prod.Load()
	n := r.prodSeen - r.read
	if int64(n) < 0 {
		// The producer position went backwards: not something a correct
		// producer does. Start again from it rather than read garbage.
		r.read = r.prodSeen
		return 0
	}
	if size := uint64(len(r.slots)); n > size {
		// More than a ring's worth ahead of us: equally impossible with
		// a correct producer. Keep to the newest ring's worth.
		r.read = r.prodSeen - size
		return size
	}
	return n
}

// Next copies the next record into rec and reports whether there was one.
// It loads the producer position only when the records it saw last are
// used up. The record stays reserved until Commit.
func (r *Ring[T]) Next(rec *T) bool {
	if r.read == r.prodSeen && r.available() == 0 {
		return false
	}
	*rec = r.slots[r.read&r.mask]
	r.read++
	return true
}

// Drain copies up to len(buf) waiting records into buf and returns how
// many it copied. It loads the producer position once. The records stay
// reserved until Commit.
func (r *Ring[T]) Drain(buf []T) int {
	n := min(r.available(), uint64(len(buf)))
	if n == 0 {
		return 0
	}
	start := r.read & r.mask
	first := min(n, uint64(len(r.slots))-start)
	copy(buf[:first], r.slots[start:start+first])
	copy(buf[first:n], r.slots[:n-first])
	r.read += n
	return int(n)
}

// Commit releases every record read so far to the producer and stores the
// read position in the segment, where a consumer that attaches later
// resumes.
func (r *Ring[T]) Commit() {
	if r.ctl.Cons.Load() != r.read {
		r.ctl.Cons.Store(r.read)
	}
}

// Discard skips and releases every waiting record, read or not, and
// returns how many it skipped that had not been read. A consumer that
// wants fresh records only, for example after a long absence, calls it
// once after attaching.
func (r *Ring[T]) Discard() uint64 {
	n := r.available()
	r.read = r.prodSeen
	r.Commit()
	return n
}
