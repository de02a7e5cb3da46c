package rtcheck

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxFileSize bounds what one read of a /proc or /sys file may return;
// /proc/interrupts on a large host is the biggest file read here.
const maxFileSize = 4 << 20

// host is what the checks read from: the filesystem roots and what the
// cycle will use. It holds no cached data, so one host may serve concurrent
// runs.
type host struct {
	proc, sys, dev, run string
	core                int
	iface               string
	priority            int
	nic                 NICInfo
	xdp                 XDPProber
}

func newHost(o Options) *host {
	h := &host{
		proc:     o.ProcRoot,
		sys:      o.SysRoot,
		dev:      o.DevRoot,
		run:      o.RunRoot,
		core:     o.CycleCore,
		iface:    o.Interface,
		priority: o.Priority,
		nic:      o.NIC,
		xdp:      o.XDP,
	}
	if h.xdp == nil {
		h.xdp = NetlinkXDP{}
	}
	if h.proc == "" {
		h.proc = "/proc"
	}
	if h.sys == "" {
		h.sys = "/sys"
	}
	if h.dev == "" {
		h.dev = "/dev"
	}
	if h.run == "" {
		h.run = "/run"
	}
	if h.nic == nil {
		h.nic = EthtoolNIC{}
	}
	if h.priority < 1 {
		h.priority = 1
	}
	return h
}

func (h *host) procPath(elem ...string) string {
	return filepath.Join(append([]string{h.proc}, elem...)...)
}

func (h *host) sysPath(elem ...string) string {
	return filepath.Join(append([]string{h.sys}, elem...)...)
}

func (h *host) devPath(elem ...string) string {
	return filepath.Join(append([]string{h.dev}, elem...)...)
}

func (h *host) runPath(elem ...string) string {
	return filepath.Join(append([]string{h.run}, elem...)...)
}

// display turns a path below one of the roots into the path it has on the
// host being checked ("/sys/..."), for reports and fix commands.
func (h *host) display(path string) string {
	for _, r := range []struct{ root, canonical string }{{h.proc, "/proc"}, {h.sys, "/sys"}, {h.dev, "/dev"}, {h.run, "/run"}} {
		rel, err := filepath.Rel(r.root, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.Join(r.canonical, rel)
		}
	}
	return path
}

// cpuPath is a path below /sys/devices/system/cpu.
func (h *host) cpuPath(elem ...string) string {
	return h.sysPath(append([]string{"devices", "system", "cpu"}, elem...)...)
}

// netPath is a path below /sys/class/net/IF for the configured interface.
func (h *host) netPath(elem ...string) string {
	return h.sysPath(append([]string{"class", "net", h.iface}, elem...)...)
}

// readFile returns a file's contents, bounded by maxFileSize.
func readFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(data), nil
}

// readTrimmed returns a file's contents without surrounding white space.
func readTrimmed(path string) (string, error) {
	s, err := readFile(path)
	return strings.TrimSpace(s), err
}

// readInt reads a file holding one decimal integer.
func readInt(path string) (int64, error) {
	s, err := readTrimmed(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// exists reports whether path exists; errors other than "not found" count as
// existing, since something is there.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// cmdline reads and parses the kernel command line.
func (h *host) cmdline() (kernelParams, error) {
	s, err := readFile(h.procPath("cmdline"))
	if err != nil {
		return nil, err
	}
	return parseCmdline(s), nil
}

// onlineCPUs reads the online CPUs; ok is false when the file is unreadable.
func (h *host) onlineCPUs() (cpuSet, bool) {
	s, err := readFile(h.cpuPath("online"))
	if err != nil {
		return cpuSet{}, false
	}
	set, err := parseCPUList(s, -1)
	if err != nil || set.empty() {
		return cpuSet{}, false
	}
	return set, true
}

// lastCPU is the highest possible CPU number, which "N" in a CPU list
// stands for; -1 when unknown.
func (h *host) lastCPU() int {
	for _, name := range []string{"possible", "present", "online"} {
		s, err := readFile(h.cpuPath(name))
		if err != nil {
			continue
		}
		if set, err := parseCPUList(s, -1); err == nil && !set.empty() {
			return set.last()
		}
	}
	return -1
}

// coreProblem returns a verdict for checks about the cycle core when there
// is nothing to check: no core configured (warn) or a core the host does not
// have (fail). ok is false when the core is usable.
func (h *host) coreProblem() (v verdict, ok bool) {
	if h.core < 0 {
		return verdict{status: Warn, found: "no cycle core configured: the cycle shares every CPU with the rest of the host",
			fix: "# set cycle.core in the ecagent configuration to a core reserved for the cycle (not cpu 0)"}, true
	}
	if online, known := h.onlineCPUs(); known && !online.has(h.core) {
		return verdict{status: Fail, found: fmt.Sprintf("cycle core %d is not an online CPU (online: %s)", h.core, online),
			fix: "# set cycle.core in the ecagent configuration to one of the online CPUs"}, true
	}
	return verdict{}, false
}

// cpuDirs returns the CPU numbers that have a cpuN directory below
// /sys/devices/system/cpu, in increasing order.
func (h *host) cpuDirs() ([]int, error) {
	entries, err := os.ReadDir(h.cpuPath())
	if err != nil {
		return nil, err
	}
	var cpus cpuSet
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "cpu")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 && n < maxCPUs {
			cpus.add(n)
		}
	}
	return cpus.list(), nil
}

// targetCPUs is the cycle core when one is configured, else every CPU.
func (h *host) targetCPUs() ([]int, error) {
	if h.core >= 0 {
		return []int{h.core}, nil
	}
	return h.cpuDirs()
}

// grubFix returns the command that puts the kernel parameters (each
// "name=value") on the kernel command line through GRUB on Debian and
// Ubuntu: it deletes any earlier value of each, adds the new ones to
// GRUB_CMDLINE_LINUX, regenerates grub.cfg and reboots.
func grubFix(params ...string) string {
	var b strings.Builder
	b.WriteString("sudo sed -i -E")
	for _, p := range params {
		name, _, _ := strings.Cut(p, "=")
		fmt.Fprintf(&b, ` -e 's/([" ])%s=[^ "]*/\1/g'`, strings.ReplaceAll(name, ".", `\.`))
	}
	fmt.Fprintf(&b, ` -e 's/^GRUB_CMDLINE_LINUX="/&%s /' /etc/default/grub && sudo update-grub && sudo reboot`, strings.Join(params, " "))
	return b.String()
}

// bounded joins at most max items and says how many were left out.
func bounded(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:max], ", "), len(items)-max)
}

// nicProblem returns the verdict of a NIC check that has nothing to look
// at: no interface configured, or (for every NIC check but nic_link, which
// reports it) an interface that does not exist. ok is false when the
// interface is there.
func (h *host) nicProblem() (v verdict, ok bool) {
	if h.iface == "" {
		return verdict{status: Skip, found: "no interface configured (simulated segment)"}, true
	}
	if !exists(h.netPath()) {
		return verdict{status: Skip, found: fmt.Sprintf("interface %s does not exist (see nic_link)", h.iface)}, true
	}
	return verdict{}, false
}

// nicLabel names the interface and, when the driver says, its driver:
// "eth1 (igb)".
func (h *host) nicLabel() string {
	if driver, err := h.nic.Driver(h.iface); err == nil && driver != "" {
		return h.iface + " (" + driver + ")"
	}
	return h.iface
}
