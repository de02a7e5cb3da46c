package mqtt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// compactNow runs a compaction of w on the caller's goroutine.
func compactNow(w *wal) {
	w.mu.Lock()
	w.compacting = true
	w.mu.Unlock()
	w.compact()
}

// payloadOf is the number a test message carries.
func payloadOf(m message) uint32 { return binary.LittleEndian.Uint32(m.payload) }

// TestWALCompactionHoldsNoLock: while a compaction copies the outstanding
// records and waits for storage to flush them, messages are still logged
// and settled (the outbox logs on the goroutine of whoever publishes).
// The file that replaces the log holds what is outstanding after both;
// the entries of the records that moved point at them (a second
// compaction copies them from there). A compaction whose log was emptied
// meanwhile is abandoned, its copy removed.
func TestWALCompactionHoldsNoLock(t *testing.T) {
	for _, settleAll := range []bool{false, true} {
		t.Run(map[bool]string{false: "logging goes on", true: "everything settled meanwhile"}[settleAll], func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "buffer")
			w, _ := openTestWAL(t, path)
			defer w.close(nil)
			close(w.stop) // only compactions call syncFile
			<-w.stopped
			w.stop = make(chan struct{})
			entered, release := make(chan struct{}), make(chan struct{})
			var hold atomic.Bool
			hold.Store(true)
			w.mu.Lock()
			w.syncFile = func(f *os.File) error {
				if hold.Load() {
					entered <- struct{}{}
					<-release
				}
				return f.Sync()
			}
			w.mu.Unlock()

			// One message in a hundred stays outstanding, until the file
			// is past its bound and a compaction begins.
			logMsg := func(n uint32) uint64 {
				m := message{topic: "t", payload: binary.LittleEndian.AppendUint32(make([]byte, 0, 1024), n)[:1024], qos: 1}
				return w.append(&m)
			}
			var kept []uint64
			var keptN []uint32
			for n := uint32(0); ; n++ {
				seq := logMsg(n)
				if n%100 == 0 {
					kept, keptN = append(kept, seq), append(keptN, n)
				} else {
					w.done(seq)
				}
				w.mu.Lock()
				started := w.compacting
				w.mu.Unlock()
				if started {
					break
				}
				if n == 100000 {
					t.Fatal("no compaction began")
				}
			}
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the compaction did not flush its copy")
			}

			want := slices.Clone(keptN)
			logged := make(chan struct{})
			go func() {
				defer close(logged)
				if settleAll {
					for _, s := range kept {
						w.done(s)
					}
					want = nil
					return
				}
				n1, n2, n3 := logMsg(1e6+1), logMsg(1e6+2), logMsg(1e6+3)
				w.done(kept[0])
				w.drop(kept[1])
				w.done(n1)
				_, _ = n2, n3
				want = append(want[2:], 1e6+2, 1e6+3)
			}()
			select {
			case <-logged:
			case <-time.After(10 * time.Second):
				hold.Store(false)
				close(release)
				<-logged
				t.Fatal("logging waited for the compaction")
			}
			hold.Store(false)
			close(release)
			compacted(t, w)

			check := func(when string, wantDropped uint64) {
				t.Helper()
				rp, err := replayWAL(path)
				if err != nil {
					t.Fatal(err)
				}
				var got []uint32
				for _, m := range rp.messages {
					got = append(got, payloadOf(m))
				}
				if !slices.Equal(got, want) || rp.dropped != wantDropped || rp.corrupt != 0 || rp.torn != 0 {
					t.Fatalf("%s: replayed %v, %d dropped, %d corrupt, %d torn bytes; want %v, %d dropped",
						when, got, rp.dropped, rp.corrupt, rp.torn, want, wantDropped)
				}
				w.mu.Lock()
				errs := w.errors
				w.mu.Unlock()
				if errs != 0 {
					t.Fatalf("%s: %d write errors counted", when, errs)
				}
				names, _ := filepath.Glob(filepath.Join(dir, "*"))
				hidden, _ := filepath.Glob(filepath.Join(dir, ".*"))
				if len(names) != 1 || len(hidden) != 0 {
					t.Fatalf("%s: the directory holds %v %v, want the log alone", when, names, hidden)
				}
			}
			if settleAll {
				check("after the abandoned compaction", 0)
				return
			}
			check("after the compaction", 1)
			if fi, err := os.Stat(path); err != nil || fi.Size() > 64<<10 {
				t.Fatalf("the compacted log: %v, %v", fi.Size(), err)
			}
			// The moved entries: settle one, log one more, compact again.
			w.done(kept[2])
			logMsg(1e6 + 4)
			want = append(want[1:], 1e6+4)
			compactNow(w)
			check("after a second compaction", 1)
		})
	}
}
