package contract

import (
	"bufio"
	"bytes"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
)

// Capability is a Linux capability, by its number in linux/capability.h.
type Capability uint

// The capabilities the cycle process may need, and CAP_SYS_ADMIN, which
// it never does (the agent's forensics do).
const (
	CapSetPCAP  Capability = 8
	CapNetAdmin Capability = 12
	CapNetRaw   Capability = 13
	CapIPCLock  Capability = 14
	CapSysAdmin Capability = 21
	CapSysNice  Capability = 23
	CapBPF      Capability = 39
)

// capNames are the capabilities' names, by number, as in
// linux/capability.h without the CAP_ prefix.
const capNames = "CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE " +
	"NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE " +
	"SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE " +
	"AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF " +
	"CHECKPOINT_RESTORE"

// String is the capability's name, CAP_NET_RAW; one newer than this
// list is CAP_<number>.
func (c Capability) String() string {
	if names := strings.Fields(capNames); int(c) < len(names) {
		return "CAP_" + names[c]
	}
	return "CAP_" + strconv.FormatUint(uint64(c), 10)
}

// Caps is a set of capabilities, bit n for capability n: the form of the
// CapEff, CapPrm, CapInh, CapAmb and CapBnd lines of /proc/PID/status.
type Caps uint64

// CapsOf returns the set of cs.
func CapsOf(cs ...Capability) Caps {
	var s Caps
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s Caps) Has(c Capability) bool { return c < 64 && s&(1<<c) != 0 }

// List returns the capabilities in s, lowest number first.
func (s Caps) List() []Capability {
	var l []Capability
	for rest := uint64(s); rest != 0; rest &= rest - 1 {
		l = append(l, Capability(bits.TrailingZeros64(rest)))
	}
	return l
}

// String lists s as the systemd unit does, comma-separated
// (CAP_NET_RAW,CAP_IPC_LOCK), or says none.
func (s Caps) String() string {
	if s == 0 {
		return "none"
	}
	var b strings.Builder
	for i, c := range s.List() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c.String())
	}
	return b.String()
}

// MarshalText is String, for logs and JSON.
func (s Caps) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Capabilities returns the capabilities the cycle process needs to run c,
// and no other: CAP_NET_RAW for a packet socket on bus.interface (none on
// the built-in simulated segment, whose link the agent hands over as a
// socket pair); CAP_NET_ADMIN and CAP_BPF besides where bus.link may be
// xdp (xdp, auto), to load and attach the XDP program; CAP_SYS_NICE for
// SCHED_FIFO (cycle.priority above 0); CAP_IPC_LOCK for locked memory
// (cycle.lockmemory). Pinning the process's own threads (cycle.core) and
// /dev/cpu_dma_latency need none. The agent gives the cycle process these
// where it holds them itself, and nothing else: never CAP_SYS_ADMIN,
// which the agent's forensics may hold (on kernels before 5.8, whose XDP
// wants CAP_SYS_ADMIN for want of CAP_BPF, the link is then mmap).
func (c Config) Capabilities() Caps {
	var s Caps
	if !c.Bus.Simulated() {
		s |= CapsOf(CapNetRaw)
		if c.Bus.Link == LinkXDP || c.Bus.Link == LinkAuto || c.Bus.Link == "" {
			s |= CapsOf(CapNetAdmin, CapBPF)
		}
	}
	if c.Cycle.Priority > 0 {
		s |= CapsOf(CapSysNice)
	}
	if c.Cycle.LockMemory {
		s |= CapsOf(CapIPCLock)
	}
	return s
}

// ProcessCaps are a process's capability sets and its no_new_privs flag,
// as /proc/PID/status shows them.
type ProcessCaps struct {
	Effective, Permitted, Inheritable, Ambient, Bounding Caps
	// NoNewPrivs is set when no execve of the process can gain a
	// privilege (a set-user-ID program, file capabilities).
	NoNewPrivs bool
}

// ReadProcessCaps reads the capability sets of process pid (0: this
// process; for a process of several threads, its main thread's).
func ReadProcessCaps(pid int) (ProcessCaps, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ProcessCaps{}, fmt.Errorf("capabilities: %w", err)
	}
	return ParseProcessCaps(b)
}

// ParseProcessCaps reads the capability sets from the text of a
// /proc/PID/status file.
func ParseProcessCaps(status []byte) (ProcessCaps, error) {
	var pc ProcessCaps
	sets := map[string]*Caps{"CapEff": &pc.Effective, "CapPrm": &pc.Permitted, "CapInh": &pc.Inheritable,
		"CapAmb": &pc.Ambient, "CapBnd": &pc.Bounding}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if k == "NoNewPrivs" {
			pc.NoNewPrivs = v == "1"
			continue
		}
		if set, ok := sets[k]; ok {
			n, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return ProcessCaps{}, fmt.Errorf("capabilities: %s %q: %w", k, v, err)
			}
			*set = Caps(n)
			found++
		}
	}
	if found != len(sets) {
		return ProcessCaps{}, fmt.Errorf("capabilities: %d of the %d sets (CapEff, CapPrm, CapInh, CapAmb, CapBnd) in the status", found, len(sets))
	}
	return pc, nil
}
