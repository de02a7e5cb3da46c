package mqtt

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/agent/mqtt/walfile"
)

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// openTestWAL opens the log at path, failing t on error.
func openTestWAL(t *testing.T, path string) (*wal, walReplay) {
	t.Helper()
	w, rp, err := openWAL(path, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	return w, rp
}

// plain strips what a replay does not keep (wseq) for comparison.
func plain(ms []message) []message {
	out := make([]message, len(ms))
	for i, m := range ms {
		m.wseq = 0
		if m.payload == nil {
			m.payload = []byte{}
		}
		out[i] = m
	}
	return out
}

func walTestMessages() []message {
	return []message{
		{topic: "a/b", payload: []byte(`{"x":1}`), qos: 1, retain: true, made: 123},
		{topic: "spBv1.0/g/DDATA/n/d", payload: []byte{0, 1, 2, 255}, qos: 0, sparkplug: true, made: -1},
		{topic: "empty", qos: 2},
	}
}

// TestWALRoundTrip: what a clean stop leaves is read back in order; an
// empty stop removes the file.
func TestWALRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "outbox")
	w, rp := openTestWAL(t, path)
	if len(rp.messages) != 0 {
		t.Fatalf("a new log replays %v", rp.messages)
	}
	if err := w.close(walTestMessages()); err != nil {
		t.Fatal(err)
	}
	w, rp = openTestWAL(t, path)
	if got, want := plain(rp.messages), plain(walTestMessages()); !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if err := w.close(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("nothing left, yet the file stays: %v", err)
	}
}

// TestWALReplaysWhatACrashLeft: messages appended and never closed (the
// process killed) come back in order, without those delivered; the drops
// are counted; a log with nothing outstanding is cut to its header.
func TestWALReplaysWhatACrashLeft(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "outbox")
	w, _ := openTestWAL(t, path)
	var seqs []uint64
	for i := range 10 {
		seqs = append(seqs, w.append(&message{topic: "t", payload: []byte{byte(i)}, qos: 1, made: int64(i)}))
	}
	w.done(seqs[3])
	w.drop(seqs[0])
	w.drop(seqs[1])
	// No close: what a kill -9 leaves (every record was written).
	_, rp := openTestWAL(t, path)
	var got []byte
	for _, m := range rp.messages {
		got = append(got, m.payload...)
	}
	if string(got) != "\x02\x04\x05\x06\x07\x08\x09" || rp.dropped != 2 || rp.corrupt != 0 || rp.torn != 0 {
		t.Fatalf("replayed %v, dropped %d, corrupt %d, torn %d", got, rp.dropped, rp.corrupt, rp.torn)
	}

	w2, _ := openTestWAL(t, filepath.Join(t.TempDir(), "b"))
	s := w2.append(&message{topic: "t", payload: []byte("x")})
	w2.done(s)
	if fi, err := os.Stat(w2.path); err != nil || fi.Size() != int64(len(walfile.Magic)) {
		t.Fatalf("nothing outstanding, yet the log holds %v bytes (%v)", fi.Size(), err)
	}
}

// TestWALDetectsDamage: a torn last record is ignored; a record whose
// CRC fails is skipped and counted, the others replayed.
func TestWALDetectsDamage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "outbox")
	w, _ := openTestWAL(t, path)
	for i := range 5 {
		w.append(&message{topic: "t", payload: []byte{'a' + byte(i)}, qos: 1})
	}
	w.mu.Lock()
	second := w.live[2]
	w.mu.Unlock()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[second.off+int64(second.n)-1] ^= 0xFF // the payload of message 2
	b = b[:len(b)-3]                        // message 5 torn
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, rp := openTestWAL(t, path)
	var got []byte
	for _, m := range rp.messages {
		got = append(got, m.payload...)
	}
	if string(got) != "acd" || rp.corrupt != 1 || rp.torn == 0 {
		t.Fatalf("replayed %q, corrupt %d, torn %d; want acd, 1, > 0", got, rp.corrupt, rp.torn)
	}
	// A record type nobody knows, with a good CRC, is counted too.
	if err := os.WriteFile(path, walfile.AppendRecord([]byte(walfile.Magic), []byte{9, 1}), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, rp := openTestWAL(t, path); rp.corrupt != 1 || len(rp.messages) != 0 {
		t.Fatalf("unknown record: %+v", rp)
	}
}

// TestWALRejectsGarbage: a file of neither format, or an old-format
// buffer file that is cut or absurd, is refused with the advice to remove
// it.
func TestWALRejectsGarbage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "outbox")
	for name, content := range map[string]string{
		"foreign":   "hello",
		"truncated": spoolMagic + "\x01\x02\x05ab",
		"huge":      spoolMagic + "\x01\x02\x01a\xff\xff\xff\xff\x0f",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, rp, err := openWAL(path, quietLog()); err == nil {
			t.Errorf("%s: loaded %v", name, rp.messages)
		}
	}
	// The old format is still read.
	if err := os.WriteFile(path, []byte(spoolMagic+"\x01\x02\x01a\x02hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, rp, err := openWAL(path, quietLog()); err != nil || len(rp.messages) != 1 || string(rp.messages[0].payload) != "hi" {
		t.Errorf("old format: %+v %v", rp.messages, err)
	}
}

// TestWALCompacts: a long outage with a small bound keeps the log near
// twice what is outstanding, and the replay is the same.
func TestWALCompacts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "outbox")
	o := newOutbox(100)
	w, _ := openTestWAL(t, path)
	o.wal, o.logging = w, true
	payload := make([]byte, 1000)
	for i := range 20000 {
		binary.LittleEndian.PutUint32(payload, uint32(i))
		o.push(message{topic: "t", payload: append([]byte(nil), payload...), qos: 1})
	}
	compacted(t, w)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 2*100*1100+walSlack+64<<10 {
		t.Errorf("the log holds %d bytes for 100 messages of 1 kB", fi.Size())
	}
	_, rp := openTestWAL(t, path)
	if len(rp.messages) != 100 || rp.dropped != 19900 {
		t.Fatalf("replayed %d messages, %d dropped; want 100, 19900", len(rp.messages), rp.dropped)
	}
	for i, m := range rp.messages {
		if got := binary.LittleEndian.Uint32(m.payload); got != uint32(19900+i) {
			t.Fatalf("message %d is %d, want %d", i, got, 19900+i)
		}
	}
}

// compacted waits for w's compactions, those they start included (each
// starts the next before it ends), and fails t when one is still due.
func compacted(t *testing.T, w *wal) {
	t.Helper()
	w.compaction.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.compacting || w.size > 2*w.liveBytes+walSlack {
		t.Fatalf("after the compactions: %d bytes for %d outstanding, compacting %v", w.size, w.liveBytes, w.compacting)
	}
}

// TestMarkHistorical: every metric of a replayed Sparkplug payload reads
// is_historical, its value unchanged.
func TestMarkHistorical(t *testing.T) {
	t.Parallel()
	in := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: 5, Metrics: []sparkplug.Metric{
		{Name: "a", DataType: sparkplug.Double, Float: 2.5, HasValue: true},
		{Alias: 3, HasAlias: true, DataType: sparkplug.Boolean, Bool: true, HasValue: true},
	}, Seq: 7, HasSeq: true})
	out, err := sparkplug.MarkHistorical(in)
	if err != nil {
		t.Fatal(err)
	}
	var p sparkplug.Payload
	if err := sparkplug.DecodePayload(out, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Metrics) != 2 || !p.Metrics[0].Historical || !p.Metrics[1].Historical || p.Metrics[0].Float != 2.5 || !p.Metrics[1].Bool || p.Seq != 7 || p.Timestamp != 5 {
		t.Fatalf("%+v", p)
	}
}

// TestReplayMarksSparkplugHistorical: a Sparkplug message an earlier run
// left in the log is queued with its metrics marked is_historical.
func TestReplayMarksSparkplugHistorical(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "outbox")
	w, _ := openTestWAL(t, path)
	data := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: 9, Metrics: []sparkplug.Metric{
		{Alias: 4, HasAlias: true, DataType: sparkplug.Double, Float: 1.5, HasValue: true}}})
	w.append(&message{topic: "spBv1.0/plant/DDATA/edge1/EL3204-7", payload: data, sparkplug: true})
	p, err := New(Config{Broker: "tcp://127.0.0.1:1", Scheme: SchemeSparkplug, Group: "plant", Node: "edge1", BufferFile: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(0) })
	m, ok := p.out.pop()
	var pl sparkplug.Payload
	if !ok || sparkplug.DecodePayload(m.payload, &pl) != nil || len(pl.Metrics) != 1 || !pl.Metrics[0].Historical || pl.Metrics[0].Float != 1.5 {
		t.Fatalf("replayed %v %+v", ok, pl)
	}
}

// TestWALSyncHoldsNoLock: while the group fsync waits on slow storage,
// messages are still logged and settled (the publisher's callers do not
// wait for the disk); what was written meanwhile is flushed by the next
// sync, and a failed flush is counted and tried again.
func TestWALSyncHoldsNoLock(t *testing.T) {
	w, _ := openTestWAL(t, filepath.Join(t.TempDir(), "buffer"))
	defer w.close(nil)
	// The test calls sync itself: the group fsync's own loop is stopped
	// (and close finds it so).
	close(w.stop)
	<-w.stopped
	w.stop = make(chan struct{})
	entered, release := make(chan struct{}), make(chan struct{})
	var fail atomic.Bool
	w.mu.Lock()
	w.syncFile = func(f *os.File) error {
		entered <- struct{}{}
		<-release
		if fail.Load() {
			return errors.New("injected: storage gone")
		}
		return f.Sync()
	}
	w.mu.Unlock()

	// flushing waits until a flush has begun and waits on the "disk".
	flushing := func() {
		t.Helper()
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("sync did not flush a dirty log")
		}
	}
	ms := walTestMessages()
	seq := w.append(&ms[0])
	syncs := make(chan struct{})
	go func() { w.sync(); close(syncs) }()
	flushing()
	logged := make(chan uint64)
	go func() {
		s := w.append(&ms[1])
		w.done(seq)
		logged <- s
	}()
	select {
	case s := <-logged:
		if s == 0 {
			t.Error("message not logged during the flush")
		}
	case <-time.After(10 * time.Second):
		release <- struct{}{} // let the flush end, and the log close
		<-syncs
		<-logged
		t.Fatal("logging a message waited for the flush")
	}
	release <- struct{}{}
	<-syncs
	w.mu.Lock()
	dirty := w.dirty
	w.mu.Unlock()
	if !dirty {
		t.Fatal("records written during a flush are not marked for the next one")
	}

	// A failed flush keeps the log dirty and counts an error.
	fail.Store(true)
	syncs = make(chan struct{})
	go func() { w.sync(); close(syncs) }()
	flushing()
	release <- struct{}{}
	<-syncs
	w.mu.Lock()
	dirty, errs := w.dirty, w.errors
	w.mu.Unlock()
	if !dirty || errs != 1 {
		t.Errorf("after a failed flush: dirty %v, %d errors; want true, 1", dirty, errs)
	}
}
