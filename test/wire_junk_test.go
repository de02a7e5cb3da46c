package test

import (
	byteorder "encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
	"github.com/ecagent/ecagent/master/link"
)

// Junk on the master's interface lands in exactly one place: the socket's
// kernel filter (another source than the master's address: counted
// nowhere but by the sender here), a kernel drop (the socket's queue was
// full: ecagent_link_kernel_drops_total), or one of the reasons of
// ecagent_frames_discarded_total (invalid, foreign, mismatched). None is a
// late answer. docs/operations.md, "Junk on the wire".

// junkAgent is an agent with its cycle process on the master's end of a
// wire whose other end the simulator serves.
type junkAgent struct {
	w        wire
	a        *agentProc
	addr     string // metrics endpoint
	cyclePID int
	period   time.Duration
	master   [6]byte // the master's interface address
}

// startJunkAgent starts the simulator with the reference set and an agent
// with the cycle period on the wire, and waits until it is ready.
func startJunkAgent(t *testing.T, tag string, period time.Duration) *junkAgent {
	t.Helper()
	w := newWire(t, tag)
	startSim(t, w, strings.Join(referenceSet, ","))
	shmPath := fmt.Sprintf("/dev/shm/ecagent-%s-%d.shm", tag, os.Getpid())
	cmd := exec.Command(ecagentBinary(t), "run", "--bus.interface", w.MasterEnd,
		"--cycle.shm", shmPath, "--cycle.period", period.String(), "--metrics.listen", "127.0.0.1:0", "--mqtt.enabled=false",
		"--status.interval", "500ms", "--bus.expectedslaves", "7")
	a := startProcess(t, cmd)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		cyclereap.Stop(t, shmPath)
		if t.Failed() || os.Getenv("ECAGENT_JUNK_LOG") != "" {
			t.Logf("agent log:\n%s", a.log())
		}
	})
	j := &junkAgent{w: w, a: a, period: period}
	j.addr = a.loggedAddr(t, "metrics endpoint", 30*time.Second)
	waitReady(t, j.addr, 30*time.Second)
	info, err := process.ReadBusInfo(process.BusInfoPath(shmPath))
	if err != nil {
		t.Fatal(err)
	}
	j.cyclePID = info.CyclePID
	ifc, err := net.InterfaceByName(w.MasterEnd)
	if err != nil {
		t.Fatal(err)
	}
	copy(j.master[:], ifc.HardwareAddr)
	return j
}

// junkCounts are the counters a junk frame can land in, and those that
// tell the frames the host made late or lost.
type junkCounts struct {
	invalid, foreign, mismatched float64 // ecagent_frames_discarded_total{reason}
	drops, received              float64 // ecagent_link_kernel_drops_total, ecagent_link_frames_received_total
	lostCycles, late             float64 // ecagent_lost_frames_total, ecagent_late_answers_total
	framesLost, framesLate       float64 // ecagent_cyclic_frames_lost_total, ecagent_cyclic_frames_late_total
	cycles                       float64
}

func (j *junkAgent) counts(t *testing.T) junkCounts {
	t.Helper()
	fams := scrape(t, j.addr)
	reason := func(r string) float64 {
		return counter(fams, "ecagent_frames_discarded_total", map[string]string{"reason": r})
	}
	return junkCounts{
		invalid: reason("invalid"), foreign: reason("foreign"), mismatched: reason("mismatched"),
		drops:      counter(fams, "ecagent_link_kernel_drops_total", nil),
		received:   counter(fams, "ecagent_link_frames_received_total", nil),
		lostCycles: counter(fams, "ecagent_lost_frames_total", nil),
		late:       counter(fams, "ecagent_late_answers_total", nil),
		framesLost: counter(fams, "ecagent_cyclic_frames_lost_total", nil),
		framesLate: counter(fams, "ecagent_cyclic_frames_late_total", nil),
		cycles:     counter(fams, "ecagent_cycles_total", nil),
	}
}

func (c junkCounts) minus(o junkCounts) junkCounts {
	return junkCounts{c.invalid - o.invalid, c.foreign - o.foreign, c.mismatched - o.mismatched,
		c.drops - o.drops, c.received - o.received,
		c.lostCycles - o.lostCycles, c.late - o.late, c.framesLost - o.framesLost, c.framesLate - o.framesLate, c.cycles - o.cycles}
}

// counted is what the master counted of the junk that reached its socket.
func (c junkCounts) counted() float64 { return c.invalid + c.foreign + c.mismatched + c.drops }

func (c junkCounts) String() string {
	return fmt.Sprintf("invalid %.0f, foreign %.0f, mismatched %.0f, kernel drops %.0f, received %.0f; "+
		"cycles %.0f, lost %.0f (%.0f frames), late %.0f (%.0f frames)",
		c.invalid, c.foreign, c.mismatched, c.drops, c.received, c.cycles, c.lostCycles, c.framesLost, c.late, c.framesLate)
}

// settle waits until the master has counted at least want junk frames
// since before (discarded or dropped by the kernel), then until the
// cycles of 2.5 s more have run — the discarded frames are reported once
// a second per reason, the link's counters read once a second — so that
// a frame counted twice would show too; it returns the counts since
// before.
func (j *junkAgent) settle(t *testing.T, before junkCounts, want float64) junkCounts {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	d := j.counts(t).minus(before)
	for d.counted() < want {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s the master counted %.0f junk frames, want %.0f: %v", d.counted(), want, d)
		}
		time.Sleep(100 * time.Millisecond)
		d = j.counts(t).minus(before)
	}
	more := d.cycles + float64(5*time.Second/2/j.period)
	for d.cycles < more {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("the cycles stopped at %.0f, want %.0f: %v", d.cycles, more, d)
		}
		time.Sleep(100 * time.Millisecond)
		d = j.counts(t).minus(before)
	}
	return d
}

// junkSender sends frames toward the master from the simulator's end of
// the wire.
type junkSender struct {
	t       *testing.T
	w       wire
	l       *link.RawSocket
	master  [6]byte // the master's address
	segment [6]byte // the master's address as the segment returns it
}

func newJunkSender(t *testing.T, w wire, master [6]byte) *junkSender {
	t.Helper()
	var l *link.RawSocket
	// The default configuration: its filter passes only frames from the
	// simulator's end itself, so the sender reads nothing.
	if err := inNamespace(t, w.NS, func() (err error) {
		l, err = link.Open(w.SimEnd, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	s := &junkSender{t: t, w: w, l: l, master: master, segment: master}
	s.segment[0] |= 0x02
	return s
}

// send sends frames, every one n times, rate frames a second (0: as fast
// as the link takes them), and returns how many the link took.
func (s *junkSender) send(frames [][]byte, n, rate int) int {
	s.t.Helper()
	const perTick = 25
	tick := time.Duration(0)
	if rate > 0 {
		tick = time.Second * perTick / time.Duration(rate)
	}
	sent := 0
	next := time.Now()
	for i := range n * len(frames) {
		if s.l.Send(frames[i%len(frames)]) == nil {
			sent++
		}
		if tick > 0 && (i+1)%perTick == 0 {
			next = next.Add(tick)
			time.Sleep(time.Until(next))
		}
	}
	return sent
}

// wireDropped returns the frames the simulator's end of the wire dropped
// on their way to the master's (tx_dropped of the veth: the receiving
// CPU's backlog was full). Those never reached the master's interface.
func (s *junkSender) wireDropped() float64 {
	s.t.Helper()
	return txDropped(s.t, s.w.NS, s.w.SimEnd)
}

// txDropped returns tx_dropped of the interface ifname in the network
// namespace ns ("" for the test's).
func txDropped(t *testing.T, ns, ifname string) float64 {
	t.Helper()
	args := []string{"-s", "-j", "link", "show", "dev", ifname}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	out, err := exec.Command("ip", args...).Output()
	if err != nil {
		t.Fatalf("ip -s link show %s: %v", ifname, err)
	}
	var links []struct {
		Stats struct {
			TX struct {
				Dropped float64 `json:"dropped"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -s -j link show %s: %v: %s", ifname, err, out)
	}
	return links[0].Stats.TX.Dropped
}

// TestWireJunkIsCountedNotBelieved floods the agent's segment with junk
// from the segment's side of the wire — truncated frames, wrong length
// fields, datagram chains that overrun the frame, forged answers (an LRW
// alone with a full working counter for every index, as one forged frame
// once wedged readiness), frames with the master's own source address and
// frames from strangers — at 50 000 frames/s for JUNK seconds (3 in the
// suite; ECAGENT_JUNK=10s for the soak's figure). The agent and its cycle
// process stay up, the bus stays in OP, the heartbeat never stalls, every
// junk frame lands in exactly one place — the socket filter (the
// strangers'), a kernel drop, or a reason of the discarded frames — none
// is a late answer (late answers ≤ lost), the junk is logged a few times a
// second at most, and the cycle process's memory stays flat.
func TestWireJunkIsCountedNotBelieved(t *testing.T) {
	junkFor := 3 * time.Second
	if v := os.Getenv("ECAGENT_JUNK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ECAGENT_JUNK=%q: %v", v, err)
		}
		junkFor = d
	}
	j := startJunkAgent(t, "junk", time.Millisecond)
	rssBefore := vmRSS(t, j.cyclePID)
	logBefore := strings.Count(j.a.log(), "\n")
	s := newJunkSender(t, j.w, j.master)
	before, wd, md := j.counts(t), s.wireDropped(), txDropped(t, "", j.w.MasterEnd)

	sent, filtered := s.flood(junkFor, 50_000)
	wireDropped := s.wireDropped() - wd

	if err := syscall.Kill(j.cyclePID, 0); err != nil {
		t.Fatalf("cycle process %d gone after the junk: %v", j.cyclePID, err)
	}
	waitReady(t, j.addr, 10*time.Second)
	// What passed the filter, less what the wire dropped (of either kind:
	// counted against the passing ones, the bound below stays exact when
	// the wire drops none).
	passing := float64(sent-filtered) - wireDropped
	d := j.settle(t, before, passing)
	t.Logf("%d junk frames in %v (%d for the socket filter, %.0f dropped on the wire): %v; the master's frames dropped on the wire: %.0f",
		sent, junkFor, filtered, wireDropped, d, txDropped(t, "", j.w.MasterEnd)-md)
	if d.foreign != 0 {
		t.Errorf("%.0f foreign frames passed the socket filter", d.foreign)
	}
	// Each passing junk frame counted once; an answer the kernel dropped
	// counts as a drop and as a lost frame.
	if d.counted() < passing || d.counted() > passing+d.framesLost+wireDropped {
		t.Errorf("%.0f junk frames passed the filter, %.0f counted (invalid, foreign, mismatched, kernel drops), %.0f frames lost",
			passing, d.counted(), d.framesLost)
	}
	if d.invalid == 0 || d.mismatched == 0 {
		t.Errorf("no invalid or no mismatched frame counted: %v", d)
	}
	// Since the agent started: a frame lost before the junk may be late
	// during it.
	if c := j.counts(t); c.late > c.lostCycles || c.framesLate > c.framesLost {
		t.Errorf("late answers exceed the frames lost: %v", c)
	}
	if strings.Contains(j.a.log(), "bus in NONE") || strings.Contains(j.a.out(), "NONE") {
		t.Errorf("the junk changed the bus state:\n%s", j.a.out())
	}
	// A heartbeat stall is the host's as much as the junk's on a shared
	// machine: a figure here, compared with a run without junk by
	// TestWireJunkWakeupBench.
	t.Logf("heartbeat stalls: %d", strings.Count(j.a.log(), "heartbeat stopped"))
	// A few log lines a second at most: one per reason and second, and
	// the status lines.
	lines := strings.Count(j.a.log(), "\n") - logBefore
	if limit := int(junkFor.Seconds()+6) * 6; lines > limit {
		t.Errorf("%d log lines during %v of junk, want at most %d", lines, junkFor, limit)
	}
	if rss := vmRSS(t, j.cyclePID); rss > rssBefore+1024 {
		t.Errorf("cycle process VmRSS %d KiB after the junk, %d before", rss, rssBefore)
	}
	t.Logf("%d log lines; cycle VmRSS %d → %d KiB", lines, rssBefore, vmRSS(t, j.cyclePID))
}

// flood sends junk toward the master at rate frames/s for d and returns
// how many frames it sent and how many of them were for the socket
// filter: half forged answers (an LRW alone, WKC 8, for every index in
// turn), the rest in turn a length field beyond the frame, a datagram
// chain overrunning it, an LRW from the master's own address, a
// stranger's BRD and a truncated frame.
func (s *junkSender) flood(d time.Duration, rate int) (sent, filtered int) {
	stop := make(chan struct{})
	timer := time.AfterFunc(d, func() { close(stop) })
	defer timer.Stop()
	return s.floodUntil(stop, rate, false)
}

// floodUntil is flood until stop is closed; with strangers, every frame is
// a stranger's (all for the socket filter).
func (s *junkSender) floodUntil(stop <-chan struct{}, rate int, strangers bool) (sent, filtered int) {
	frames := [][]byte{
		junkFrame(s.segment, 0, 1, 2, 2000),
		junkFrame(s.segment, 0, 1, 1400, 0),
		junkFrame(s.master, 12, 0, 8, 0),
		junkFrame(stranger, 7, 0, 2, 0),
		append(junkFrame(s.segment, 0, 0, 0, 0)[:14], 1),
	}
	const perTick = 50
	tick := time.Second / time.Duration(rate/perTick)
	odd := 0
	for next := time.Now(); !closedChan(stop); next = next.Add(tick) {
		for i := range perTick {
			var f []byte
			if strangers {
				f = junkFrame(stranger, 12, uint8(sent), 8, 0)
				if s.l.Send(f) == nil {
					sent++
					filtered++
				}
				continue
			}
			if i%2 == 0 {
				f = junkFrame(s.segment, 12, uint8(sent), 8, 0)
				byteorder.LittleEndian.PutUint16(f[len(f)-2:], 8)
			} else {
				f = frames[odd%len(frames)]
			}
			if s.l.Send(f) == nil {
				sent++
				if i%2 == 1 {
					if odd%len(frames) == 3 {
						filtered++
					}
					odd++
				}
			}
		}
		time.Sleep(time.Until(next))
	}
	return sent, filtered
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

func closedChan(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
