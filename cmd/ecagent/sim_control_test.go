package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/master/link"
)

// simRig runs `ecagent sim` in-process on one end of a socket pair and
// holds the other end, as a master would.
type simRig struct {
	master  *link.FDLink
	socket  string
	done    chan int
	stderr  *strings.Builder
	log     *testsupport.SyncBuffer // the simulator's output while it runs
	cancel  context.CancelFunc
	scratch []byte
}

func startSim(t *testing.T, args ...string) *simRig {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	master, err := link.FileLink(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	// A short path: Unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "ecsim")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &simRig{master: master, socket: filepath.Join(dir, "ctl.sock"), done: make(chan int, 1),
		stderr: &strings.Builder{}, scratch: make([]byte, link.MaxFrameSize)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	argv := append([]string{"sim", "--link-fd", strconv.Itoa(fds[1]), "--devices", "EK1100,EL1004,EL2004,EL3204",
		"--control", r.socket}, args...)
	errOut := &testsupport.SyncBuffer{}
	r.log = errOut
	go func() {
		code := dispatch(ctx, &env{stdout: errOut, stderr: errOut}, argv)
		r.stderr.WriteString(errOut.String())
		r.done <- code
	}()
	t.Cleanup(func() {
		r.stop(t)
		master.Close()
	})
	// The socket's file appears at bind, before listen: ready is when a
	// connection is accepted.
	for range 500 {
		if c, err := net.Dial("unix", r.socket); err == nil {
			c.Close()
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("control socket %s never accepted a connection: %s", r.socket, errOut.String())
	return nil
}

// stop ends the simulator and checks that it exited cleanly.
func (r *simRig) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case code := <-r.done:
		if code != exitOK {
			t.Errorf("sim exited %d: %s", code, r.stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Error("sim did not stop")
	}
}

// brd sends a BRD of register 0x0000 and returns its working counter, or
// -1 when no answer comes.
func (r *simRig) brd(t *testing.T) int {
	t.Helper()
	buf := make([]byte, wire.MaxFrameLen)
	var b wire.Builder
	if err := b.Reset(buf, [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, [6]byte{2}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(wire.BRD, 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.master.Send(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	n, err := r.master.Recv(r.scratch, time.Now().Add(300*time.Millisecond))
	if err != nil {
		return -1
	}
	var f wire.Frame
	if err := f.Decode(r.scratch[:n]); err != nil {
		t.Fatalf("answer: %v", err)
	}
	it := f.Datagrams()
	var dg wire.Datagram
	if !it.Next(&dg) {
		t.Fatalf("answer without a datagram: %v", it.Err())
	}
	return int(dg.WKC)
}

// control opens a control connection.
func (r *simRig) control(t *testing.T) func(cmd string) string {
	t.Helper()
	conn, err := net.Dial("unix", r.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	rd := bufio.NewReader(conn)
	return func(cmd string) string {
		t.Helper()
		if _, err := conn.Write([]byte(cmd + "\n")); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: no answer: %v", cmd, err)
		}
		return strings.TrimSuffix(line, "\n")
	}
}

func TestSimControlSocket(t *testing.T) {
	r := startSim(t)
	send := r.control(t)
	if w := r.brd(t); w != 4 {
		t.Fatalf("BRD: WKC %d, want 4", w)
	}
	steps := []struct {
		cmd, answer string
		after       func()
	}{
		{"drop every 1", "ok", func() {
			if w := r.brd(t); w != -1 {
				t.Errorf("frame after drop every 1: WKC %d, want it lost", w)
			}
		}},
		{"drop off", "ok", func() {
			if w := r.brd(t); w != 4 {
				t.Errorf("frame after drop off: WKC %d, want 4", w)
			}
		}},
		{"disappear 2", "ok", func() {
			if w := r.brd(t); w != 2 {
				t.Errorf("BRD with device 2 gone: WKC %d, want 2", w)
			}
		}},
		{"disappear 2", "error: sim: disappear 2: device has no power", nil},
		{"return 2", "ok", func() {
			if w := r.brd(t); w != 4 {
				t.Errorf("BRD after the return: WKC %d, want 4", w)
			}
		}},
		{"alerror 0 0x001B", "error: sim: AL error on 0 (EK1100): device has no application controller", nil},
		{"disappear 9", "error: sim: disappear 9: no device at that position (the segment has 4 devices)", nil},
		{"drift 0 50", "ok", nil},
		{"bogus", `error: unknown command "bogus"`, nil},
		{"link down", "error: link: no interface to set down or up (serving on --link-fd)", nil},
		{"counts", "dropped=1 delayed=0 corrupted_wkc=0 corrupted_length=0 disappeared=1 returned=1 al_errors=0 " +
			"drift_jumps=1 offset_jumps=0 frames=5 answered=4 unanswered=1 link_errors=0 link_downs=0 link_ups=0", nil},
	}
	for _, s := range steps {
		if got := send(s.cmd); got != s.answer {
			t.Errorf("%q:\n got %q\nwant %q", s.cmd, got, s.answer)
		}
		if s.after != nil {
			s.after()
		}
	}
	// A second connection works alongside the first.
	if got := r.control(t)("seed 5"); got != "ok" {
		t.Errorf("second connection: %q", got)
	}
	r.stop(t)
	if _, err := os.Stat(r.socket); !os.IsNotExist(err) {
		t.Errorf("control socket left behind: %v", err)
	}
}

func TestSimFaultSchedule(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "faults.txt")
	if err := os.WriteFile(file, []byte("# lose frames for the first 200 ms\n0s drop every 1\n200ms drop off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startSim(t, "--faults", file)
	send := r.control(t)
	r.waitSteps(t, 1) // 0s drop every 1
	if w := r.brd(t); w != -1 {
		t.Errorf("first frame: WKC %d, want it lost", w)
	}
	r.waitSteps(t, 2) // 200ms drop off
	if w := r.brd(t); w != 4 {
		t.Errorf("frame after drop off: WKC %d, want 4", w)
	}
	if got := send("counts"); !strings.HasPrefix(got, "dropped=1 ") {
		t.Errorf("counts %q", got)
	}
}

func TestSimFaultScheduleErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(file, []byte("1s drop next 1\n2s explode\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, context.Background(), nil, "sim", "--link-fd", "99", "--faults", file)
	want := "sim: --faults " + file + `: line 2: unknown command "explode"`
	if code != exitUsage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want usage error %q", code, errOut, want)
	}
	code, out, _ := runCLI(t, context.Background(), nil, "sim", "--help")
	for _, s := range []string{"--control", "--faults", "disappear POS", "repeat 10s", "socat"} {
		if code != exitOK || !strings.Contains(out, s) {
			t.Errorf("sim --help does not mention %q", s)
		}
	}
}

// waitSteps waits until the simulator has logged n steps of its fault
// schedule as run.
func (r *simRig) waitSteps(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(r.log.String(), "fault schedule step") < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d fault schedule steps run within 5 s:\n%s", n, r.log.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSimControlLinkDownUp serves on one end of a veth pair and sets it
// down and up through the control socket: the master's end loses its
// answers, the simulator rides through the outage and answers again.
func TestSimControlLinkDownUp(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("needs iproute2's ip: %v", err)
	}
	tag := fmt.Sprintf("ecs%x", os.Getpid()&0xFFFFFF)
	simIf, masterIf := tag+"s", tag+"m"
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := ip("link", "add", simIf, "type", "veth", "peer", "name", masterIf); err != nil {
		t.Skipf("creating a veth pair needs CAP_NET_ADMIN: %v", err)
	}
	t.Cleanup(func() { _ = ip("link", "del", simIf) })
	for _, ifname := range []string{simIf, masterIf} {
		if err := ip("link", "set", ifname, "up"); err != nil {
			t.Fatal(err)
		}
	}
	master, err := link.Open(masterIf, nil)
	if err != nil {
		t.Skipf("raw socket: %v", err)
	}
	defer master.Close()
	dir, err := os.MkdirTemp("", "ecsim")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "ctl.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	errOut := &testsupport.SyncBuffer{}
	go func() {
		done <- dispatch(ctx, &env{stdout: errOut, stderr: errOut},
			[]string{"sim", "--iface", simIf, "--devices", "EK1100,EL2004", "--control", socket})
	}()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("sim exited %d: %s", code, errOut.String())
		}
	}()
	r := &simRig{master: nil, socket: socket, scratch: make([]byte, link.MaxFrameSize)}
	for i := 0; ; i++ {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if i > 200 {
			t.Fatalf("no control socket: %s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	send := r.control(t)
	// answers reports whether a BRD comes back within a few tries.
	answers := func(tries int) bool {
		for range tries {
			if brdOn(t, master, r.scratch) == 2 {
				return true
			}
		}
		return false
	}
	if !answers(5) {
		t.Fatalf("no answers before the outage: %s", errOut.String())
	}
	if got := send("link down"); got != "ok" {
		t.Fatalf("link down: %q", got)
	}
	if answers(3) {
		t.Error("answers while the simulator's interface is down")
	}
	if got := send("link up"); got != "ok" {
		t.Fatalf("link up: %q", got)
	}
	if !answers(20) {
		t.Fatalf("no answers after the link came back: %s", errOut.String())
	}
	got := send("counts")
	t.Log(got)
	if !strings.HasSuffix(got, "link_downs=1 link_ups=1") {
		t.Errorf("counts %q", got)
	}
}

// brdOn sends a BRD on l and returns its working counter, or -1 when no
// answer comes within 200 ms (or the link fails).
func brdOn(t *testing.T, l link.Link, rx []byte) int {
	t.Helper()
	buf := make([]byte, wire.MaxFrameLen)
	var b wire.Builder
	// From the link's own address, as a master sends: a raw socket takes
	// only the frames that come back with it (link.Config.OwnFramesOnly).
	if err := b.Reset(buf, [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, [6]byte(l.HardwareAddr())); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(wire.BRD, 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.Send(b.Bytes()); err != nil {
		time.Sleep(50 * time.Millisecond)
		return -1
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		n, err := l.Recv(rx, deadline)
		if err != nil {
			if !errors.Is(err, link.ErrTimeout) {
				time.Sleep(50 * time.Millisecond)
			}
			return -1
		}
		var f wire.Frame
		if f.Decode(rx[:n]) != nil || f.Source()[0]&0x02 == 0 {
			continue // our own frame, or not EtherCAT
		}
		it := f.Datagrams()
		var dg wire.Datagram
		if it.Next(&dg) {
			return int(dg.WKC)
		}
	}
}
