package mqtt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/agent/mqtt/walfile"
)

// The write-ahead log of the outbox (mqtt.bufferfile). While the broker
// is not reachable — from the start until the first connection, and from
// a lost connection until the next — every message the outbox takes is
// appended to the log as it is buffered (one write(2) each, so a kill -9
// loses none), and so is what the outbox held when the connection broke,
// messages in flight included. Delivered, superseded and dropped messages
// get a small record each; once nothing logged is outstanding the log is
// cut back to its header. The file is synced every walSyncEvery while it
// has unsynced records ("group fsync"): a power cut loses at most that
// much. It is bounded: when it grows past twice what is outstanding (plus
// walSlack), the outstanding records are copied to a new file, which
// replaces it atomically; the copy runs beside the logging, which waits
// for it only while the files are swapped (wal_compact.go). Every record carries a CRC-32C: on replay a
// torn tail (the crash came mid-write) is ignored, a damaged record is
// skipped and counted, and the messages outstanding come back in the
// order they were buffered.
//
// The format of the file is package walfile's.

const (
	// walSyncEvery is the group-fsync period.
	walSyncEvery = 100 * time.Millisecond
	// walSlack is how far the file may grow beyond twice what is
	// outstanding before it is compacted.
	walSlack = 1 << 20
)

// walEntry locates an outstanding message record in the file.
type walEntry struct {
	off int64
	n   int
}

// wal is an open write-ahead log. Its methods are safe for concurrent
// use; they never block on the broker, and a write error is logged (once
// until a write succeeds again) and counted, the outbox carrying on in
// memory.
type wal struct {
	path string
	log  *slog.Logger

	mu        sync.Mutex
	f         *os.File
	size      int64
	live      map[uint64]walEntry
	liveBytes int64
	next      uint64 // the next message's seq
	dropped   uint64 // drops since the log was last empty
	dirty     bool
	failing   bool
	errors    uint64
	// gen counts the times the file's contents were replaced or cut
	// back: a compaction that began in another generation is abandoned.
	gen        uint64
	compacting bool                            // a compaction runs (compact)
	compaction sync.WaitGroup                  // ... and close waits for it
	buf, rec   []byte                          // scratch: a record with its header, a record
	seqRec     [1 + binary.MaxVarintLen64]byte // scratch: a record of a seq

	// syncFile flushes the file to storage: (*os.File).Sync, or a test's
	// stand-in for slow storage (set under mu).
	syncFile func(*os.File) error

	stop, stopped chan struct{}
}

// walReplay is what a replay found.
type walReplay struct {
	messages []message // outstanding, in the order they were buffered
	dropped  uint64    // messages the earlier run dropped from this backlog
	corrupt  uint64    // records whose CRC or contents are wrong, skipped
	torn     int64     // bytes of a partly written last record, ignored
}

// openWAL opens the log at path, replays it (a buffer file of the old
// format is read too), and rewrites it with just the outstanding
// messages, numbered afresh (their wseq set). It starts the group fsync.
func openWAL(path string, log *slog.Logger) (*wal, walReplay, error) {
	rp, err := replayWAL(path)
	if err != nil {
		return nil, rp, err
	}
	w := &wal{path: path, log: log, live: map[uint64]walEntry{}, next: 1, syncFile: (*os.File).Sync,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	w.mu.Lock()
	err = w.rewriteLocked(rp.messages, rp.dropped)
	w.mu.Unlock()
	if err != nil {
		return nil, rp, err
	}
	go w.syncLoop()
	return w, rp, nil
}

// replayWAL reads the outstanding messages of the log at path.
func replayWAL(path string) (walReplay, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return walReplay{}, nil
	}
	if err != nil {
		return walReplay{}, fmt.Errorf("mqtt: buffer file: %w", err)
	}
	return parseWAL(path, b)
}

// parseWAL reads the outstanding messages of b, the contents of the log
// (or of a buffer file of the old format) at path.
func parseWAL(path string, b []byte) (walReplay, error) {
	var rp walReplay
	if len(b) >= len(spoolMagic) && string(b[:len(spoolMagic)]) == spoolMagic {
		var err error
		rp.messages, err = loadSpool(bytes.NewReader(b))
		if err != nil {
			return rp, fmt.Errorf("mqtt: buffer file %s: %w (remove it to start without it)", path, err)
		}
		return rp, nil
	}
	if len(b) < len(walfile.Magic) || string(b[:len(walfile.Magic)]) != walfile.Magic {
		return rp, fmt.Errorf("mqtt: buffer file %s: not an ecagent MQTT buffer file (remove it to start without it)", path)
	}
	wr, err := walfile.Parse(b)
	if err != nil {
		return rp, fmt.Errorf("mqtt: buffer file %s: %w", path, err)
	}
	rp.dropped, rp.corrupt, rp.torn = wr.Dropped, wr.Corrupt, wr.Torn
	for i := range wr.Messages {
		rp.messages = append(rp.messages, fromWAL(&wr.Messages[i]))
	}
	return rp, nil
}

// toWAL is m as the log keeps it.
func toWAL(m *message) walfile.Message {
	return walfile.Message{Topic: m.topic, Payload: m.payload, QoS: m.qos, Retain: m.retain, Sparkplug: m.sparkplug, Made: m.made}
}

// fromWAL is the message the log kept as wm.
func fromWAL(wm *walfile.Message) message {
	return message{topic: wm.Topic, payload: wm.Payload, qos: wm.QoS, retain: wm.Retain, sparkplug: wm.Sparkplug, made: wm.Made}
}

// writeRecordLocked appends one record (type and body in rec) to the
// file, in one write.
func (w *wal) writeRecordLocked(rec []byte) (int64, bool) {
	if w.f == nil {
		return 0, false
	}
	w.buf = walfile.AppendRecord(w.buf[:0], rec)
	off := w.size
	n, err := w.f.WriteAt(w.buf, off)
	w.size += int64(n)
	if err != nil {
		w.fail(err)
		return off, false
	}
	w.dirty, w.failing = true, false
	return off, true
}

// fail logs a write error, once until a write succeeds again.
func (w *wal) fail(err error) {
	w.errors++
	if !w.failing {
		w.log.Error("mqtt: the buffer file cannot be written; buffering in memory only", "file", w.path, "err", err)
	}
	w.failing = true
}

// append logs m, buffered now, and returns its seq (0 if not logged).
func (w *wal) append(m *message) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	seq := w.next
	w.next++
	wm := toWAL(m)
	w.rec = walfile.AppendMessage(w.rec[:0], seq, &wm)
	rec := w.rec
	off, ok := w.writeRecordLocked(rec)
	if !ok {
		return 0
	}
	w.live[seq] = walEntry{off: off, n: walfile.HeaderLen + len(rec)}
	w.liveBytes += int64(walfile.HeaderLen + len(rec))
	w.maybeCompactLocked()
	return seq
}

// done records that message seq was delivered (or superseded).
func (w *wal) done(seq uint64) { w.settle(seq, walfile.Done) }

// drop records that message seq was dropped for room.
func (w *wal) drop(seq uint64) { w.settle(seq, walfile.Drop) }

func (w *wal) settle(seq uint64, typ byte) {
	if seq == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.live[seq]
	if !ok {
		return
	}
	delete(w.live, seq)
	w.liveBytes -= int64(e.n)
	if typ == walfile.Drop {
		w.dropped++
	}
	if len(w.live) == 0 {
		w.truncateLocked()
		return
	}
	w.writeRecordLocked(walfile.AppendSeq(w.seqRec[:0], typ, seq))
}

// truncateLocked cuts the log back to its header: nothing is
// outstanding.
func (w *wal) truncateLocked() {
	if w.f == nil {
		return
	}
	if err := w.f.Truncate(int64(len(walfile.Magic))); err != nil {
		w.fail(err)
		return
	}
	w.size, w.liveBytes, w.dropped, w.dirty = int64(len(walfile.Magic)), 0, 0, true
	w.gen++
}

// rewriteLocked replaces the log with ms, numbered afresh (their wseq
// set), and dropped carried over.
func (w *wal) rewriteLocked(ms []message, dropped uint64) error {
	w.next = 1
	for i := range ms {
		ms[i].wseq = w.next
		w.next++
	}
	return w.writeFileLocked(ms, dropped)
}

// writeFileLocked writes a new log of ms (each with its wseq) and the
// drops carried over, synced, and renames it over the old one.
func (w *wal) writeFileLocked(ms []message, dropped uint64) error {
	tmp, err := w.createTemp()
	if err != nil {
		return fmt.Errorf("mqtt: buffer file: %w", err)
	}
	defer os.Remove(tmp.Name())
	old, oldSize, oldLive, oldLiveBytes, oldDropped := w.f, w.size, w.live, w.liveBytes, w.dropped
	w.f, w.size, w.live, w.liveBytes, w.dropped = tmp, 0, map[uint64]walEntry{}, 0, dropped
	fail := func(err error) error {
		tmp.Close()
		w.f, w.size, w.live, w.liveBytes, w.dropped = old, oldSize, oldLive, oldLiveBytes, oldDropped
		return fmt.Errorf("mqtt: buffer file: %w", err)
	}
	n, err := tmp.WriteString(walfile.Magic)
	w.size = int64(n)
	if err != nil {
		return fail(err)
	}
	if dropped > 0 {
		if _, ok := w.writeRecordLocked(walfile.AppendSeq(nil, walfile.Dropped, dropped)); !ok {
			return fail(errors.New("write failed"))
		}
	}
	for i := range ms {
		wm := toWAL(&ms[i])
		rec := walfile.AppendMessage(nil, ms[i].wseq, &wm)
		off, ok := w.writeRecordLocked(rec)
		if !ok {
			return fail(errors.New("write failed"))
		}
		w.live[ms[i].wseq] = walEntry{off: off, n: walfile.HeaderLen + len(rec)}
		w.liveBytes += int64(walfile.HeaderLen + len(rec))
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), w.path); err != nil {
		return fail(err)
	}
	syncDir(filepath.Dir(w.path))
	if old != nil {
		old.Close()
	}
	w.dirty = false
	w.gen++
	return nil
}

// createTemp creates a hidden file beside the log, to be renamed over it.
func (w *wal) createTemp() (*os.File, error) {
	return os.CreateTemp(filepath.Dir(w.path), "."+filepath.Base(w.path)+".*")
}

// syncDir syncs a directory, so that a rename in it survives a power cut.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// syncLoop syncs the log every walSyncEvery while it has unsynced
// records, until close.
func (w *wal) syncLoop() {
	defer close(w.stopped)
	t := time.NewTicker(walSyncEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.sync()
		}
	}
}

// sync flushes what was written to the log to storage. It does so
// without holding the log's lock: on slow storage an fsync takes tens or
// hundreds of milliseconds, and the outbox appends under its own lock, on
// the goroutine of whoever publishes (the agent's sample drain). What is
// written meanwhile marks the log dirty again and is flushed next time; a
// file replaced meanwhile (compaction) was flushed before its
// replacement's rename and is left alone.
func (w *wal) sync() {
	w.mu.Lock()
	f, syncFile := w.f, w.syncFile
	if !w.dirty || f == nil {
		w.mu.Unlock()
		return
	}
	w.dirty = false
	w.mu.Unlock()
	if err := syncFile(f); err != nil {
		w.mu.Lock()
		if w.f == f {
			w.dirty = true
			w.fail(err)
		}
		w.mu.Unlock()
	}
}

// close replaces the log with ms (what is still undelivered at a clean
// stop; none removes the file) and closes it.
func (w *wal) close(ms []message) error {
	close(w.stop)
	<-w.stopped
	w.compaction.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	if len(ms) == 0 {
		if rerr := os.Remove(w.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = fmt.Errorf("mqtt: buffer file: %w", rerr)
		}
		syncDir(filepath.Dir(w.path))
	} else {
		err = w.rewriteLocked(ms, w.dropped)
	}
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	w.gen++
	return err
}

// replay opens the write-ahead log (cfg.BufferFile) and queues what an
// earlier run left in it, in order; Sparkplug messages are marked
// is_historical, as store and forward requires. Logging is on until the
// first connection.
func (p *Publisher) replay() error {
	w, rp, err := openWAL(p.cfg.BufferFile, p.log)
	if err != nil {
		return err
	}
	p.droppedBefore, p.bufferCorrupt = rp.dropped, rp.corrupt
	if len(rp.messages) > 0 || rp.dropped > 0 || rp.corrupt > 0 || rp.torn > 0 {
		p.log.Info("mqtt: messages kept from the last run", "messages", len(rp.messages), "file", p.cfg.BufferFile,
			"dropped_before", rp.dropped, "corrupt_records", rp.corrupt, "torn_bytes", rp.torn)
	}
	if rp.corrupt > 0 {
		p.log.Warn("mqtt: damaged records in the buffer file were skipped", "file", p.cfg.BufferFile, "records", rp.corrupt)
	}
	p.out.mu.Lock()
	p.out.wal, p.out.logging = w, true
	p.out.mu.Unlock()
	for _, m := range rp.messages {
		if m.sparkplug {
			if h, err := sparkplug.MarkHistorical(m.payload); err == nil {
				m.payload = h
			}
		}
		p.out.push(m)
	}
	return nil
}
