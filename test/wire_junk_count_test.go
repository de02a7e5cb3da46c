package test

import (
	byteorder "encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stranger is a source address that is not the master's.
var stranger = [6]byte{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30}

// filteredJunk are EtherCAT frames the socket filter refuses: a stranger's
// and ones from the master's address with another bit of the first byte
// or another last byte changed.
func (s *junkSender) filteredJunk() [][]byte {
	group, other := s.master, s.master
	group[0] ^= 0x01
	other[5] ^= 0x40
	return [][]byte{
		junkFrame(stranger, 7, 0, 2, 0),    // a BRD
		junkFrame(stranger, 12, 3, 8, 0),   // an LRW
		junkFrame(group, 12, 1, 8, 0),      // the master's address as a group address
		junkFrame(other, 1, 2, 2, 0),       // another station
		junkFrame(stranger, 0, 0, 2, 2000), // and not even valid
	}
}

// invalidJunk are frames from the segment's address that are no EtherCAT
// datagram frames.
func (s *junkSender) invalidJunk() [][]byte {
	return [][]byte{
		junkFrame(s.segment, 0, 1, 2, 2000),                // the length field beyond the frame
		junkFrame(s.segment, 0, 1, 1400, 0),                // a datagram chain overrunning the frame
		append(junkFrame(s.segment, 0, 0, 0, 0)[:14], 1),   // truncated: a header and one byte
		append(junkFrame(s.master, 0, 0, 0, 0)[:14], 0x10), // the same from the master's own address
	}
}

// mismatchedJunk are EtherCAT frames from the segment's (or the master's
// own) address that answer nothing the master sent: an LRW alone with a
// full working counter, at the logical address of the process image and
// elsewhere, of the image's length and others, for every index in turn
// (a late answer's index, command and source, not its datagrams: these
// counted as late answers once).
func (s *junkSender) mismatchedJunk(n int) [][]byte {
	frames := make([][]byte, 0, n)
	for i := range n {
		src := s.segment
		if i%5 == 4 {
			src = s.master
		}
		var f []byte
		switch i % 4 {
		case 0: // the process image's LRW alone: no AL status read after it
			f = junkFrame(src, 12, uint8(i), 6, 0) // logical address 0, the image's
		case 1: // another logical address
			f = junkFrame(src, 12, uint8(i), 6, 0)
			byteorder.LittleEndian.PutUint32(f[18:], uint32(0x100+i))
		default: // another length, another address
			f = junkFrame(src, 12, uint8(i), 6+i%4, 0)
		}
		byteorder.LittleEndian.PutUint16(f[len(f)-2:], 8)
		frames = append(frames, f)
	}
	return frames
}

// TestWireJunkCountedByKind injects junk of each kind on the master's
// interface, one kind at a time, a known number of frames, and checks
// that each lands in its counter, by exactly that number, and in no
// other: the socket filter's frames nowhere, invalid and mismatched ones
// under their reason, and a burst sent while the cycle process is stopped
// split between invalid (read once it runs again) and the kernel's drops.
// A frame the host made late or lost is no junk, and not counted as such:
// the only slack allowed is an answer the kernel dropped in the burst,
// which is a lost frame too. Junk is never a late answer: late answers
// never outnumber the cycles that lost a frame.
func TestWireJunkCountedByKind(t *testing.T) {
	j := startJunkAgent(t, "junkn", 5*time.Millisecond)
	s := newJunkSender(t, j.w, j.master)
	start := j.counts(t)

	// checkPhase checks the counts d after sent frames of one kind that
	// belong in got (nil: nowhere) and reports the others.
	checkPhase := func(name string, d junkCounts, sent int, want func(junkCounts) float64, wireDropped float64) {
		t.Helper()
		reached := float64(sent) - wireDropped
		got := 0.0
		if want != nil {
			got = want(d)
		}
		others := d.counted() - got - d.drops
		switch {
		case others != 0:
			t.Errorf("%s: %d frames sent, counted elsewhere: %v", name, sent, d)
		case want == nil && d.drops > d.framesLost:
			t.Errorf("%s: %d frames sent, %.0f kernel drops beyond the %.0f frames lost: %v", name, sent, d.drops, d.framesLost, d)
		case want != nil && (got > reached || got+d.drops < reached || got+d.drops > reached+d.framesLost):
			t.Errorf("%s: %.0f of %d frames reached the master (%.0f dropped on the wire); counted %.0f and %.0f kernel drops: %v",
				name, reached, sent, wireDropped, got, d.drops, d)
		default:
			t.Logf("%s: %d sent, %.0f dropped on the wire, counted as they should be: %v", name, sent, wireDropped, d)
		}
	}

	// The socket filter: nothing counts them.
	before, wd := j.counts(t), s.wireDropped()
	sent := s.send(s.filteredJunk(), 200, 5000)
	checkPhase("socket filter", j.settle(t, before, 0), sent, nil, s.wireDropped()-wd)

	before, wd = j.counts(t), s.wireDropped()
	sent = s.send(s.invalidJunk(), 250, 5000)
	checkPhase("invalid", j.settle(t, before, float64(sent)-(s.wireDropped()-wd)), sent, func(d junkCounts) float64 { return d.invalid }, s.wireDropped()-wd)

	before, wd = j.counts(t), s.wireDropped()
	sent = s.send(s.mismatchedJunk(1000), 1, 5000)
	d := j.settle(t, before, float64(sent)-(s.wireDropped()-wd))
	checkPhase("mismatched", d, sent, func(d junkCounts) float64 { return d.mismatched }, s.wireDropped()-wd)
	// Since the agent started: a frame lost before a phase may be late in it.
	if c := j.counts(t); c.late > c.lostCycles || c.framesLate > c.framesLost {
		t.Errorf("after the mismatched junk, late answers exceed the frames lost: %v", c)
	}

	// A burst while the cycle process is stopped: the socket's queue takes
	// what fits, the kernel drops the rest.
	before, wd = j.counts(t), s.wireDropped()
	burst := [][]byte{append(junkFrame(s.segment, 0, 0, 0, 0)[:14], 1)}
	if err := syscall.Kill(j.cyclePID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(j.cyclePID, syscall.SIGCONT) })
	stopped := time.Now()
	waitStopped(t, j.cyclePID)
	sent = s.send(burst, 1000, 0)
	if err := syscall.Kill(j.cyclePID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	held := time.Since(stopped)
	d = j.settle(t, before, float64(sent)-(s.wireDropped()-wd))
	checkPhase("kernel drop", d, sent, func(d junkCounts) float64 { return d.invalid }, s.wireDropped()-wd)
	if d.drops == 0 {
		t.Errorf("a burst of %d frames into a stopped cycle's socket: no kernel drop counted (%v)", sent, d)
	}
	t.Logf("cycle process stopped for %v", held.Round(time.Millisecond))

	if c := j.counts(t); c.late > c.lostCycles || c.framesLate > c.framesLost {
		t.Errorf("late answers exceed the frames lost: %v", c)
	}
	if total := j.counts(t).minus(start); total.foreign != 0 {
		t.Errorf("%.0f foreign frames reached the cycle through the socket filter", total.foreign)
	}
}

// waitStopped waits until every thread of pid is stopped (SIGSTOP).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		all := len(tasks) > 0
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			if err != nil {
				continue // a thread that ended
			}
			// The state follows the command name in parentheses.
			if i := strings.LastIndexByte(string(b), ')'); i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped after 5 s", pid)
		}
		time.Sleep(time.Millisecond)
	}
}
