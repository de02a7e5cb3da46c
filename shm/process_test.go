//go:build linux

package shm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// The cross-process tests re-execute the test binary as a second process
// (TestHelperProcess), as the agent starts the cycle process: the segment
// goes to the child as fd 3 through exec.Cmd.ExtraFiles, or by path.
const (
	helperModeEnv  = "ECAGENT_SHM_HELPER"       // what the helper does
	helperCountEnv = "ECAGENT_SHM_HELPER_COUNT" // how many records or images
	helperPathEnv  = "ECAGENT_SHM_HELPER_PATH"  // attach by path instead of fd 3
)

// TestHelperProcess is the child process of the cross-process tests; it
// does nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		t.Skip("child process of the cross-process tests")
	}
	count, err := strconv.ParseUint(os.Getenv(helperCountEnv), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", helperCountEnv, err)
	}
	var seg *Segment
	if path := os.Getenv(helperPathEnv); path != "" {
		seg, err = Attach(path)
	} else {
		seg, err = AttachFile(os.NewFile(3, "inherited-shm"))
	}
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	defer seg.Close()
	seg.Heartbeat().SetCyclePID(os.Getpid())

	switch mode {
	case "samples":
		// The cycle's side: push count samples as fast as possible.
		r := seg.Samples()
		var s Sample
		for c := range count {
			s.Cycle = c
			s.Wake = int64(c)
			r.Push(&s)
			seg.Heartbeat().Beat(c, int64(c))
		}
	case "image":
		img := make([]byte, seg.Image().Cap())
		for c := uint64(1); c <= count; c++ {
			for i := range img {
				img[i] = byte(c)
			}
			seg.Image().Publish(img, c)
		}
	case "echo":
		// Answer count commands with one event each, in order.
		var cmd Command
		deadline := time.Now().Add(30 * time.Second)
		for answered := uint64(0); answered < count; {
			if time.Now().After(deadline) {
				t.Fatalf("answered %d of %d commands before the deadline", answered, count)
			}
			if !seg.Commands().Next(&cmd) {
				runtime.Gosched()
				continue
			}
			seg.Commands().Commit()
			e := Event{Kind: EventCommandDone, Value: cmd.Seq, Slave: cmd.Slave}
			e.SetText("done " + strconv.FormatUint(cmd.Seq, 10))
			for !seg.Events().Push(&e) {
				runtime.Gosched() // only in this test: a real cycle drops instead
			}
			answered++
		}
	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
}

// startHelper starts the test binary as a child in mode on seg (passed as
// fd 3, or by path if path is not empty) and returns a channel closed
// when the child has exited. A child still running when the test ends is
// killed.
func startHelper(t *testing.T, seg *Segment, path, mode string, count uint64) <-chan struct{} {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(),
		helperModeEnv+"="+mode,
		helperCountEnv+"="+strconv.FormatUint(count, 10),
		helperPathEnv+"="+path,
	)
	if path == "" {
		cmd.ExtraFiles = []*os.File{seg.File()}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		defer close(done)
		waitErr = cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
		if waitErr != nil && !t.Failed() {
			t.Errorf("helper: %v", waitErr)
		}
		if t.Failed() {
			t.Logf("helper (%v) output:\n%s", waitErr, out.String())
		}
	})
	return done
}

// TestCrossProcessDropsExact lets a child process push more samples than
// the ring holds while nobody reads: exactly the first ring's worth
// arrive, in order, and every other sample is counted as dropped.
func TestCrossProcessDropsExact(t *testing.T) {
	const total = 1000
	seg := newMemfdSegment(t, Layout{SampleSlots: 64, CommandSlots: 1, EventSlots: 1})
	<-startHelper(t, seg, "", "samples", total)
	r := seg.Samples()
	if r.Drops() != total-64 || r.Pushed() != 64 {
		t.Fatalf("drops %d pushed %d, want %d and 64", r.Drops(), r.Pushed(), total-64)
	}
	buf := make([]Sample, 100)
	n := r.Drain(buf)
	if n != 64 {
		t.Fatalf("drained %d samples, want 64", n)
	}
	for i, s := range buf[:n] {
		if s.Cycle != uint64(i) || s.Wake != int64(i) {
			t.Fatalf("sample %d: %+v, want cycle %d", i, s, i)
		}
	}
	r.Commit()
	if c, _, ok := seg.Heartbeat().Read(); !ok || c != total-1 {
		t.Errorf("heartbeat cycle %d, %v, want %d", c, ok, total-1)
	}
	if pid := seg.Heartbeat().CyclePID(); pid == 0 || pid == os.Getpid() {
		t.Errorf("CyclePID = %d, want the child's", pid)
	}
}

// TestCrossProcessSamples reads while a child process pushes: every cycle
// arrives in order or is counted as dropped, exactly.
func TestCrossProcessSamples(t *testing.T) {
	const total = 300_000
	seg := newMemfdSegment(t, Layout{SampleSlots: 256, CommandSlots: 1, EventSlots: 1})
	done := startHelper(t, seg, "", "samples", total)
	got := drainAll(t, seg.Samples(), done)
	checkArrivals(t, got, seg.Samples().Drops(), total)
}

// TestCrossProcessImage takes snapshots while a child process publishes:
// none is torn.
func TestCrossProcessImage(t *testing.T) {
	const size, total = 777, 50_000
	seg := newMemfdSegment(t, Layout{SampleSlots: 1, CommandSlots: 1, EventSlots: 1, ImageBytes: size})
	done := startHelper(t, seg, "", "image", total)
	dst := make([]byte, size)
	var n snapshots
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if c, err := n.take(seg.Image(), dst); err != nil {
			t.Fatalf("torn snapshot of cycle %d: %v", c, err)
		}
	}
	if c, ok := seg.Image().Snapshot(dst); !ok || c != total {
		t.Errorf("last snapshot is cycle %d (%v), want %d", c, ok, total)
	}
	t.Logf("%d consistent snapshots, %d distinct", n.good, n.distinct)
}

// TestCrossProcessCommands sends commands to a child that attaches by
// path (as a restarted agent would) and answers each with an event.
func TestCrossProcessCommands(t *testing.T) {
	const total = 2000
	path := filepath.Join(segmentDir(t), "seg")
	seg, err := Create(path, Layout{SampleSlots: 1, CommandSlots: 8, EventSlots: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	done := startHelper(t, seg, path, "echo", total)
	var e Event
	sent, answered := uint64(0), uint64(0)
	deadline := time.Now().Add(30 * time.Second)
	for answered < total {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d commands answered before the deadline", answered, total)
		}
		if sent < total && seg.Commands().Push(&Command{Seq: sent, Kind: CommandSetOutputs, Slave: uint16(sent % 7)}) {
			sent++
		}
		for seg.Events().Next(&e) {
			if e.Kind != EventCommandDone || e.Value != answered || e.Slave != uint16(answered%7) ||
				e.TextString() != fmt.Sprintf("done %d", answered) {
				t.Fatalf("answer %d is %+v (%q)", answered, e, e.TextString())
			}
			answered++
		}
		seg.Events().Commit()
		runtime.Gosched()
	}
	<-done
	if seg.Events().Drops() != 0 {
		t.Errorf("%d events dropped", seg.Events().Drops())
	}
	t.Logf("%d commands, %d refused while the ring was full", total, seg.Commands().Drops())
}
