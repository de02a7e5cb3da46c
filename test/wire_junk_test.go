package test

import (
	byteorder "encoding/binary"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/program"
	"github.com/ecagent/ecagent/master/link"
)

// TestWireJunkIsCountedNotBelieved floods the agent's segment with junk
// from the segment's side of the wire — truncated frames, wrong length
// fields, datagram chains that overrun the frame, forged answers (an LRW
// alone with a full working counter for every index, as one forged frame
// once wedged readiness), frames with the master's own source address and
// frames from strangers — at 50 000 frames/s for JUNK seconds (3 in the
// suite; ECAGENT_JUNK=10s for the soak's figure). The agent and its cycle
// process stay up, the bus stays in OP, the junk is counted by reason,
// logged a few times a second at most, and the cycle process's memory
// stays flat.
func TestWireJunkIsCountedNotBelieved(t *testing.T) {
	junkFor := 3 * time.Second
	if v := os.Getenv("ECAGENT_JUNK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ECAGENT_JUNK=%q: %v", v, err)
		}
		junkFor = d
	}
	w := newWire(t, "junk")
	startSim(t, w, strings.Join(referenceSet, ","))
	shmPath := fmt.Sprintf("/dev/shm/ecagent-junk-%d.shm", os.Getpid())
	cmd := exec.Command(ecagentBinary(t), "run", "--bus.interface", w.MasterEnd,
		"--cycle.shm", shmPath, "--metrics.listen", "127.0.0.1:0", "--mqtt.enabled=false",
		"--status.interval", "500ms", "--bus.expectedslaves", "7")
	a := startProcess(t, cmd)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		killOrphanCycle(t, shmPath)
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log())
		}
	})
	addr := a.loggedAddr(t, "metrics endpoint", 30*time.Second)
	waitReady(t, addr, 30*time.Second)
	info, err := program.ReadBusInfo(program.BusInfoPath(shmPath))
	if err != nil {
		t.Fatal(err)
	}
	rssBefore := vmRSS(t, info.CyclePID)
	logBefore := strings.Count(a.log(), "\n")

	ifc, err := net.InterfaceByName(w.MasterEnd)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := sendJunk(t, w, ifc.HardwareAddr, junkFor, 50_000)
	if err != nil {
		t.Fatal(err)
	}

	if err := syscall.Kill(info.CyclePID, 0); err != nil {
		t.Fatalf("cycle process %d gone after the junk: %v", info.CyclePID, err)
	}
	waitReady(t, addr, 10*time.Second)
	text := scrapeText(t, addr)
	for _, reason := range []string{"invalid", "foreign", "mismatched"} {
		if n := discarded(text, reason); n == 0 {
			t.Errorf("ecagent_frames_discarded_total{reason=%q} is 0 after %d junk frames", reason, sent)
		} else {
			t.Logf("discarded as %s: %.0f", reason, n)
		}
	}
	if strings.Contains(a.log(), "bus in NONE") || strings.Contains(a.out(), "NONE") {
		t.Errorf("the junk changed the bus state:\n%s", a.out())
	}
	// A few log lines a second at most: one per reason and second, and
	// the status lines.
	lines := strings.Count(a.log(), "\n") - logBefore
	if limit := int(junkFor.Seconds()+3) * 6; lines > limit {
		t.Errorf("%d log lines during %v of junk, want at most %d", lines, junkFor, limit)
	}
	if rss := vmRSS(t, info.CyclePID); rss > rssBefore+1024 {
		t.Errorf("cycle process VmRSS %d KiB after the junk, %d before", rss, rssBefore)
	}
	t.Logf("%d junk frames in %v; %d log lines; cycle VmRSS %d → %d KiB", sent, junkFor, lines, rssBefore, vmRSS(t, info.CyclePID))
}

// sendJunk sends junk frames toward the master from the simulator's side
// of the wire at rate frames/s for d and returns how many it sent.
func sendJunk(t *testing.T, w wire, master net.HardwareAddr, d time.Duration, rate int) (int, error) {
	t.Helper()
	var l *link.RawSocket
	if err := inNamespace(t, w.NS, func() (err error) {
		l, err = link.Open(w.SimEnd, link.SegmentConfig())
		return err
	}); err != nil {
		return 0, err
	}
	defer l.Close()
	var src, segment [6]byte
	copy(src[:], master)
	segment = src
	segment[0] |= 0x02
	stranger := [6]byte{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30}
	frames := [][]byte{
		junkFrame(segment, 0, 1, 2, 2000),              // length field beyond the frame
		junkFrame(segment, 0, 1, 1400, 0),              // datagram chain overrunning the frame
		junkFrame(src, 12, 0, 8, 0),                    // the master's own address, an LRW
		junkFrame(stranger, 7, 0, 2, 0),                // a stranger's BRD
		append(junkFrame(segment, 0, 0, 0, 0)[:14], 1), // truncated: a header and one byte
	}
	const perTick = 50
	tick := time.Second / time.Duration(rate/perTick)
	sent := 0
	end := time.Now().Add(d)
	for next := time.Now(); time.Now().Before(end); next = next.Add(tick) {
		for i := range perTick {
			var f []byte
			if i%2 == 0 {
				// A forged answer: an LRW alone, WKC 8, for every index in turn.
				f = junkFrame(segment, 12, uint8(sent), 8, 0)
				byteorder.LittleEndian.PutUint16(f[len(f)-2:], 8)
			} else {
				f = frames[sent%len(frames)]
			}
			if l.Send(f) == nil {
				sent++
			}
		}
		time.Sleep(time.Until(next))
	}
	return sent, nil
}

// junkFrame builds an EtherCAT frame from src with one datagram of
// command cmd, index idx and n data bytes; a non-zero length overrides
// the EtherCAT header's length field.
func junkFrame(src [6]byte, cmd, idx uint8, n int, length int) []byte {
	data := min(n, 40)
	f := make([]byte, 14+2+10+data+2)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], src[:])
	byteorder.BigEndian.PutUint16(f[12:], 0x88A4)
	if length == 0 {
		length = 10 + n + 2
	}
	byteorder.LittleEndian.PutUint16(f[14:], uint16(length&0x7FF)|1<<12)
	f[16], f[17] = cmd, idx
	byteorder.LittleEndian.PutUint16(f[22:], uint16(n&0x7FF))
	return f
}

var discardedLine = regexp.MustCompile(`(?m)^ecagent_frames_discarded_total\{[^}]*reason="([a-z]+)"[^}]*\} (\S+)$`)

// discarded returns ecagent_frames_discarded_total for reason.
func discarded(text, reason string) float64 {
	for _, m := range discardedLine.FindAllStringSubmatch(text, -1) {
		if m[1] == reason {
			v, _ := strconv.ParseFloat(m[2], 64)
			return v
		}
	}
	return 0
}

// waitReady waits until /readyz answers 200.
func waitReady(t *testing.T, addr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 within %v (%v)", within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// vmRSS returns a process's VmRSS in KiB.
func vmRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return -1
}
