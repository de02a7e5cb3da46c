package test

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hogEnv, when set, makes the test binary the injector of the spike
// tests (hogMain): "cpu,priority,burst,every,for,name" — a SCHED_FIFO
// thread named name pinned to cpu spins for burst every every, for for,
// then exits.
const hogEnv = "ECAGENT_TEST_SPIKE_HOG"

// hogMain runs the injector described by spec; it prints its thread's id
// and "go" before the first burst, "burst START END" (CLOCK_MONOTONIC ns)
// after each, and returns its exit code.
func hogMain(spec string) int {
	f := strings.Split(spec, ",")
	if len(f) != 6 {
		fmt.Fprintln(os.Stderr, "hog: want cpu,priority,burst,every,for,name")
		return 2
	}
	cpu, _ := strconv.Atoi(f[0])
	prio, _ := strconv.Atoi(f[1])
	burst, _ := time.ParseDuration(f[2])
	every, _ := time.ParseDuration(f[3])
	total, _ := time.ParseDuration(f[4])
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fmt.Fprintln(os.Stderr, "hog: affinity:", err)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(unsafePointer(f[5]))), 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "hog: name:", err)
		return 1
	}
	if prio > 0 {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			fmt.Fprintln(os.Stderr, "hog: SCHED_FIFO:", err)
			return 1
		}
	}
	fmt.Printf("%d go\n", unix.Gettid())
	end := time.Now().Add(total)
	for next := time.Now().Add(every); next.Before(end); next = next.Add(every) {
		time.Sleep(time.Until(next))
		start := monoNS()
		for spin := time.Now().Add(burst); time.Now().Before(spin); {
		}
		fmt.Printf("burst %d %d\n", start, monoNS())
	}
	return 0
}

// monoNS is CLOCK_MONOTONIC in ns, the clock of the cycle's samples.
func monoNS() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// unsafePointer returns a pointer to a NUL-terminated copy of s.
func unsafePointer(s string) *byte {
	b, _ := unix.BytePtrFromString(s)
	return b
}

// floodEnv, when set, makes the test binary the frame flooder of the
// softirq test (floodMain): "iface,cpu,for" — raw frames sent on iface
// from a thread pinned to cpu as fast as it can, for for.
const floodEnv = "ECAGENT_TEST_SPIKE_FLOOD"

// floodMain floods the interface; it prints "go" when it starts.
func floodMain(spec string) int {
	f := strings.Split(spec, ",")
	if len(f) != 3 {
		fmt.Fprintln(os.Stderr, "flood: want iface,cpu,for")
		return 2
	}
	cpu, _ := strconv.Atoi(f[1])
	total, _ := time.ParseDuration(f[2])
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fmt.Fprintln(os.Stderr, "flood: affinity:", err)
		return 1
	}
	ifi, err := net.InterfaceByName(f[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		return 1
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood: socket:", err)
		return 1
	}
	defer unix.Close(fd)
	// An IPv4/UDP datagram to 10.253.0.2:9 (B's address, no one
	// listening): the whole receive path runs for each frame.
	frame := make([]byte, 14+20+8+64)
	copy(frame[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(frame[6:12], ifi.HardwareAddr)
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
	sa := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
	copy(sa.Addr[:], frame[0:6])
	fmt.Println("go")
	for end := time.Now().Add(total); time.Now().Before(end); {
		for i := 0; i < 256; i++ {
			_ = unix.Sendto(fd, frame, 0, sa)
		}
	}
	return 0
}
