package mqtt

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/ecagent/ecagent/agent/mqtt/walfile"
)

// Compaction copies the log's outstanding records to a new file that then
// replaces it. Copying and flushing take as long as the storage makes
// them (an fsync of megabytes on slow flash: hundreds of milliseconds),
// and the outbox logs under its own lock on the goroutine of whoever
// publishes, so the copy does not hold the log's lock: it takes stock
// under the lock, copies the outstanding records and flushes them without
// it while logging goes on in the old file, then copies what was written
// meanwhile (in rounds, until little is left) and swaps the files under
// the lock. The records are copied as they are, checksum and all, so a
// record the storage damaged is skipped by the replay as before.
//
// The records written while the copy ran are copied in the order they
// were written and mean what they meant: a message logged meanwhile is
// outstanding in the new file, a settle record of a copied message settles
// it there. A compaction whose log was cut back meanwhile (everything
// settled) or replaced is abandoned: there is nothing left to copy.

// compactTailRounds bounds the rounds of copying, outside the lock, what
// was written during the copy; compactTailLeft is what may be left for
// the last round, under the lock.
const (
	compactTailRounds = 4
	compactTailLeft   = 64 << 10
)

// maybeCompactLocked starts a compaction in the background when the file
// has grown past twice what is outstanding (plus walSlack) and none runs.
func (w *wal) maybeCompactLocked() {
	if w.compacting || w.f == nil || w.size <= 2*w.liveBytes+walSlack {
		return
	}
	w.compacting = true
	w.compaction.Add(1)
	go func() {
		defer w.compaction.Done()
		w.compact()
	}()
}

// walMove is an outstanding record at the time a compaction took stock:
// where it was, and where the copy put it.
type walMove struct {
	seq      uint64
	from, to int64
	n        int
}

// compact replaces the log with a copy of its outstanding records, holding
// the lock only to take stock and to swap the files. It runs with
// w.compacting set, and clears it.
func (w *wal) compact() {
	w.mu.Lock()
	old, gen, start, dropped, syncFile := w.f, w.gen, w.size, w.dropped, w.syncFile
	if old == nil { // closed meanwhile
		w.compacting = false
		w.mu.Unlock()
		return
	}
	moves := make([]walMove, 0, len(w.live))
	for s, e := range w.live {
		moves = append(moves, walMove{seq: s, from: e.off, n: e.n})
	}
	w.mu.Unlock()
	slices.SortFunc(moves, func(a, b walMove) int { return cmp.Compare(a.from, b.from) })

	var copied, tail int64
	tmp, err := w.copyOutstanding(old, moves, dropped, syncFile)
	if err == nil {
		tail = fileSize(tmp)
		copied, err = w.copyTail(old, tmp, start, gen, syncFile)
	}

	w.mu.Lock()
	w.compacting = false
	switch {
	case w.gen != gen || w.f != old:
		// Cut back or replaced meanwhile: its errors (reading a file cut
		// short) are the copy's only.
	case err != nil:
		w.fail(err)
	default:
		if err = w.swapLocked(old, tmp, moves, start, tail, copied); err != nil {
			w.fail(err)
		}
	}
	swapped := tmp != nil && w.f == tmp
	if swapped {
		// What the last round copied, and what is logged from now on, is
		// flushed by the group fsync. What was logged during the copy
		// may call for another.
		w.dirty = true
		w.maybeCompactLocked()
	}
	w.mu.Unlock()
	switch {
	case swapped:
		syncDir(filepath.Dir(w.path))
	case tmp != nil:
		tmp.Close()
		os.Remove(tmp.Name())
	}
}

// fileSize is how much was written to f so far (written in order), -1 if
// it cannot be told.
func fileSize(f *os.File) int64 {
	n, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	return n
}

// copyOutstanding writes a new log beside the old one: the drops carried
// over and the outstanding records moves lists, read from old (in the
// order they were written), flushed. It fills in each move's new offset.
func (w *wal) copyOutstanding(old *os.File, moves []walMove, dropped uint64, syncFile func(*os.File) error) (*os.File, error) {
	tmp, err := w.createTemp()
	if err != nil {
		return nil, fmt.Errorf("mqtt: buffer file: compaction: %w", err)
	}
	b := []byte(walfile.Magic)
	if dropped > 0 {
		b = walfile.AppendRecord(b, walfile.AppendSeq(nil, walfile.Dropped, dropped))
	}
	off := int64(0)
	for i := range moves {
		mv := &moves[i]
		at := len(b)
		b = slices.Grow(b, mv.n)[:at+mv.n]
		if _, err := old.ReadAt(b[at:], mv.from); err != nil {
			return tmp, fmt.Errorf("mqtt: buffer file: compaction: reading a record: %w", err)
		}
		mv.to = off + int64(at)
		if len(b) >= 1<<20 {
			if _, err := tmp.Write(b); err != nil {
				return tmp, fmt.Errorf("mqtt: buffer file: compaction: %w", err)
			}
			off += int64(len(b))
			b = b[:0]
		}
	}
	if len(b) > 0 {
		if _, err := tmp.Write(b); err != nil {
			return tmp, fmt.Errorf("mqtt: buffer file: compaction: %w", err)
		}
	}
	if err := syncFile(tmp); err != nil {
		return tmp, fmt.Errorf("mqtt: buffer file: compaction: %w", err)
	}
	return tmp, nil
}

// copyTail appends to tmp what was written to old from end on, in rounds
// without the lock, until little is left or the rounds are used up; each
// round is flushed. It returns how far old was copied. A round stops
// early when the log was cut back or replaced meanwhile.
func (w *wal) copyTail(old, tmp *os.File, end int64, gen uint64, syncFile func(*os.File) error) (int64, error) {
	for range compactTailRounds {
		w.mu.Lock()
		size, same := w.size, w.gen == gen && w.f == old
		w.mu.Unlock()
		if !same {
			return end, errors.New("mqtt: buffer file: compaction: the log was replaced")
		}
		if size-end <= compactTailLeft {
			break
		}
		if err := copyRange(tmp, old, end, size); err != nil {
			return end, err
		}
		if err := syncFile(tmp); err != nil {
			return end, fmt.Errorf("mqtt: buffer file: compaction: %w", err)
		}
		end = size
	}
	return end, nil
}

// copyRange appends old's bytes [from, to) to tmp.
func copyRange(tmp, old *os.File, from, to int64) error {
	if _, err := io.Copy(tmp, io.NewSectionReader(old, from, to-from)); err != nil {
		return fmt.Errorf("mqtt: buffer file: compaction: copying what was logged meanwhile: %w", err)
	}
	return nil
}

// swapLocked makes tmp the log: it copies what old has from copied on
// (the last round of the tail), moves every outstanding record's entry to
// its place in tmp and renames tmp over the log. Old's bytes from start
// on are at tail in tmp, in one run.
func (w *wal) swapLocked(old, tmp *os.File, moves []walMove, start, tail, copied int64) error {
	if err := copyRange(tmp, old, copied, w.size); err != nil {
		return err
	}
	size := fileSize(tmp)
	if tail < 0 || size != tail+w.size-start {
		return fmt.Errorf("mqtt: buffer file: compaction: the copy holds %d bytes, want %d", size, tail+w.size-start)
	}
	to := make(map[uint64]int64, len(moves))
	for _, mv := range moves {
		to[mv.seq] = mv.to
	}
	live := make(map[uint64]walEntry, len(w.live))
	for s, e := range w.live {
		if e.off >= start {
			e.off += tail - start
		} else if off, ok := to[s]; ok {
			e.off = off
		} else {
			return fmt.Errorf("mqtt: buffer file: compaction: message %d was not copied", s)
		}
		live[s] = e
	}
	if err := os.Rename(tmp.Name(), w.path); err != nil {
		return fmt.Errorf("mqtt: buffer file: compaction: %w", err)
	}
	w.f, w.size, w.live = tmp, size, live
	w.gen++
	old.Close()
	return nil
}
