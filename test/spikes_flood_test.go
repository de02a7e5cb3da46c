package test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// floodEnv, when set, makes the test binary the frame flooder of the
// softirq test (floodMain): "iface,cpu,burst,every,for" — a thread
// pinned to cpu sends IPv4/UDP frames on iface as fast as it can for
// burst every every, for for, then exits.
const floodEnv = "ECAGENT_TEST_SPIKE_FLOOD"

// floodMain floods the interface; it prints its thread's id and "go"
// before the first burst and "burst START END" (CLOCK_MONOTONIC ns) after
// each, as hogMain does.
func floodMain(spec string) int {
	f, ok := injectorSpec("flood", spec, "iface,cpu,burst,every,for")
	if !ok {
		return 2
	}
	cpu, _ := strconv.Atoi(f[1])
	burst, _ := time.ParseDuration(f[2])
	every, _ := time.ParseDuration(f[3])
	total, _ := time.ParseDuration(f[4])
	if err := pinThread(cpu); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		return 1
	}
	ifi, err := net.InterfaceByName(f[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		return 1
	}
	tx, err := newTxRing(ifi, floodFrame(ifi.HardwareAddr))
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		return 1
	}
	defer tx.close()
	if err := runBursts(burst, every, total, tx.send); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		return 1
	}
	return 0
}

// txRing is a PACKET_MMAP transmit ring (TPACKET_V2) whose every slot
// holds the same frame: one send call hands the kernel all of them, so
// the sender outruns the receiving core instead of waking it for each
// frame.
type txRing struct {
	fd    int
	ring  []byte
	slots int
}

// txSlot is the size of one slot; a frame's bytes follow its header
// (TPACKET_ALIGN(sizeof(tpacket2_hdr))).
const txSlot = 2048

func newTxRing(ifi *net.Interface, frame []byte) (*txRing, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	r := &txRing{fd: fd, slots: 256}
	req := unix.TpacketReq{Block_size: 1 << 16, Block_nr: uint32(r.slots * txSlot >> 16), Frame_size: txSlot, Frame_nr: uint32(r.slots)}
	switch {
	case unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2) != nil,
		unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1) != nil,
		unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req) != nil:
		unix.Close(fd)
		return nil, fmt.Errorf("a TPACKET_V2 transmit ring of %d slots refused", r.slots)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind to %s: %w", ifi.Name, err)
	}
	if r.ring, err = unix.Mmap(fd, 0, r.slots*txSlot, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mmap: %w", err)
	}
	for i := 0; i < r.slots; i++ {
		slot := r.ring[i*txSlot:]
		copy(slot[unix.SizeofTpacket2Hdr:], frame)
		(*unix.Tpacket2Hdr)(unsafe.Pointer(&slot[0])).Len = uint32(len(frame))
	}
	return r, nil
}

// send queues every free slot and hands them to the kernel, which sends
// them before it returns.
func (r *txRing) send() error {
	for i := 0; i < r.slots; i++ {
		st := &(*unix.Tpacket2Hdr)(unsafe.Pointer(&r.ring[i*txSlot])).Status
		if atomic.LoadUint32(st) == unix.TP_STATUS_AVAILABLE {
			atomic.StoreUint32(st, unix.TP_STATUS_SEND_REQUEST)
		}
	}
	if _, err := unix.Write(r.fd, nil); err != nil && err != unix.EAGAIN && err != unix.ENOBUFS {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

func (r *txRing) close() {
	_ = unix.Munmap(r.ring)
	_ = unix.Close(r.fd)
}

// floodFrame is a broadcast IPv4/UDP datagram from 10.253.0.1 to
// 10.253.0.2:9 (the receiving end's address, where no one listens): the
// whole IP and UDP receive path runs for each frame.
func floodFrame(src net.HardwareAddr) []byte {
	frame := make([]byte, 14+20+8+64)
	copy(frame[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(frame[6:12], src)
	frame[12], frame[13] = 0x08, 0x00
	ip := frame[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	ip[2], ip[3] = byte((20+8+64)>>8), byte(20+8+64)
	copy(ip[12:16], []byte{10, 253, 0, 1})
	copy(ip[16:20], []byte{10, 253, 0, 2})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(ip[i])<<8 | uint32(ip[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	ip[10], ip[11] = byte(^sum>>8), byte(^sum)
	udp := frame[34:42]
	udp[0], udp[1], udp[2], udp[3] = 0x30, 0x39, 0, 9
	udp[4], udp[5] = 0, 8+64
	return frame
}

// floodSegment makes a veth pair for the flood: the receiving end in a
// namespace of its own, its receive steered to the cycle's core by RPS
// and made dearer by tc filters. It returns the sending end's name; the
// test's end removes both.
func floodSegment(t *testing.T) string {
	t.Helper()
	needRoot(t)
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("needs iproute2's tc")
	}
	if _, err := os.Stat("/sys/class/net/lo/queues/rx-0/rps_cpus"); err != nil {
		t.Skipf("the kernel has no RPS (CONFIG_RPS) to steer a veth's receive to the cycle's core: %v", err)
	}
	id := strconv.Itoa(os.Getpid() % 100000)
	ns, tx, rx := "ecn-nrx"+id, "ecfa"+id, "ecfb"+id
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run(t, "ip", "link", "add", tx, "type", "veth", "peer", "name", rx)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", tx).Run() })
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+tx+"/disable_ipv6", []byte("1"), 0o644)
	run(t, "ip", "link", "set", rx, "netns", ns)
	run(t, "ip", "netns", "exec", ns, "ip", "addr", "add", "10.253.0.2/24", "dev", rx)
	run(t, "ip", "netns", "exec", ns, "ip", "link", "set", rx, "up")
	run(t, "ip", "link", "set", tx, "up")
	run(t, "ip", "netns", "exec", ns, "sh", "-c",
		fmt.Sprintf("echo %x > /sys/class/net/%s/queues/rx-0/rps_cpus", 1<<spikeCore, rx))
	// 200 tc filters that match nothing make each frame's receive cost
	// some µs more than its sending: the receiving core's backlog stays
	// full through a burst and NET_RX runs it in its longest slices.
	if out, err := exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", rx, "clsact").CombinedOutput(); err != nil {
		t.Skipf("the kernel has no clsact qdisc (CONFIG_NET_SCH_INGRESS): %v: %s", err, out)
	}
	var batch strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&batch, "filter add dev %s ingress prio %d protocol ip u32 match ip dport %d 0xffff classid 1:1\n", rx, i, 20000+i)
	}
	tc := exec.Command("ip", "netns", "exec", ns, "tc", "-batch", "-")
	tc.Stdin = strings.NewReader(batch.String())
	if out, err := tc.CombinedOutput(); err != nil {
		t.Skipf("the kernel has no u32 classifier (CONFIG_NET_CLS_U32): %v: %s", err, out)
	}
	return tx
}

// TestSpikesBlameNetRX: bursts of frames flooded into a veth pair from
// the other core, received on the cycle's core (RPS steers the
// receiving end's queue there), keep NET_RX busy on it: the cycle's
// spikes during the bursts are the softirq's, NET_RX.
func TestSpikesBlameNetRX(t *testing.T) {
	tx := floodSegment(t)
	a, addr := startSpikeAgent(t, "nrx")
	const bursts = 12
	h := startInjector(t, floodEnv, fmt.Sprintf("%s,%d,%v,%v,%v", tx, 1-spikeCore, 20*time.Millisecond,
		250*time.Millisecond, bursts*250*time.Millisecond+100*time.Millisecond))
	for deadline := time.Now().Add(30 * time.Second); len(h.spans()) < bursts; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bursts sent\n%s", len(h.spans()), bursts, a.log())
		}
	}
	waitExplained(t, a, addr)
	per := spikesIn(getSpikes(t, addr).Spikes, h.spans())
	var n, right, hit int
	var excess, netrx float64
	for i, sps := range per {
		if len(sps) > 0 {
			hit++
		}
		for _, sp := range sps {
			n++
			excess += sp.ExcessUS
			t.Logf("burst %d: cycle %d late %.0f µs excess %.0f µs: %+v", i, sp.Cycle, sp.LateUS, sp.ExcessUS, sp.Causes)
			for _, c := range sp.Causes {
				if c.Class == "softirq" && c.Name == "NET_RX" {
					netrx += c.TimeUS
				}
			}
			if top := topCause(sp); top.Class == "softirq" && top.Name == "NET_RX" {
				right++
			}
		}
	}
	t.Logf("%d of %d spikes in %d of %d bursts blamed on NET_RX; NET_RX %.0f of %.0f µs of their excess", right, n, hit, len(per), netrx, excess)
	if hit*2 < bursts {
		t.Errorf("spikes in %d of %d bursts: the flood did not hold the core", hit, bursts)
	}
	if right*10 < n*9 {
		t.Errorf("%d of %d spikes during the bursts blamed on NET_RX, want ≥ 90 %%", right, n)
	}
}
