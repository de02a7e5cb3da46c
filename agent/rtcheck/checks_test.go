package rtcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// edit changes one file of a copied fixture tree: writes content, or
// removes the file or directory.
type edit struct {
	path    string
	content string
	remove  bool
}

func write(path, content string) edit { return edit{path: path, content: content} }
func remove(path string) edit         { return edit{path: path, remove: true} }

// overlay copies a fixture tree into a temporary directory and applies
// edits to the copy.
func overlay(t *testing.T, base string, edits ...edit) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		p := filepath.Join(root, e.path)
		if e.remove {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(e.content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// scenario runs one check on a variant of a fixture tree.
type scenario struct {
	name   string
	base   string // "tuned" or "stock"
	edits  []edit
	opts   func(*Options)
	status Status
	found  string // a substring Found must contain
	fix    string // a substring Fix must contain; "" requires no check
}

func runScenarios(t *testing.T, id string, scenarios []scenario) {
	t.Helper()
	var c check
	for _, r := range registry() {
		if r.id == id {
			c = r
		}
	}
	if c.run == nil {
		t.Fatalf("no check %q", id)
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var nic NICInfo = tunedNIC()
			if sc.base == "stock" {
				nic = stockNIC()
			}
			opts := fixtureOptions(overlay(t, filepath.Join("testdata", sc.base), sc.edits...), nic)
			if sc.opts != nil {
				sc.opts(&opts)
			}
			v := c.run(newHost(opts))
			if v.status != sc.status || !strings.Contains(v.found, sc.found) {
				t.Errorf("got %v %q, want %v containing %q", v.status, v.found, sc.status, sc.found)
			}
			if !strings.Contains(v.fix, sc.fix) {
				t.Errorf("fix %q does not contain %q", v.fix, sc.fix)
			}
		})
	}
}

func noCore(o *Options)      { o.CycleCore = -1 }
func noInterface(o *Options) { o.Interface = "" }

func withNIC(n fixtureNIC) func(*Options) { return func(o *Options) { o.NIC = n } }

func TestPreemptRT(t *testing.T) {
	runScenarios(t, "preempt_rt", []scenario{
		{name: "version string without realtime file", base: "tuned", edits: []edit{remove("sys/kernel/realtime")},
			status: Pass, found: "#1 SMP PREEMPT_RT"},
		{name: "old RT kernel via /proc/version", base: "stock", edits: []edit{remove("proc/sys/kernel/version"),
			write("proc/version", "Linux version 4.19.0-rt (gcc) #1 SMP PREEMPT RT Debian 4.19.98-1\n")}, status: Pass, found: "PREEMPT RT"},
		{name: "realtime file says 1", base: "stock", edits: []edit{write("sys/kernel/realtime", "1\n")}, status: Pass, found: "/sys/kernel/realtime is 1"},
		{name: "arm64 package", base: "stock", edits: []edit{write("proc/sys/kernel/arch", "aarch64\n")}, status: Fail, fix: "linux-image-rt-arm64"},
		{name: "nothing readable", base: "stock", edits: []edit{remove("proc/sys/kernel/version"), remove("proc/version")}, status: Warn, found: "cannot tell"},
	})
}

func TestIsolcpus(t *testing.T) {
	runScenarios(t, "isolcpus", []scenario{
		{name: "no core configured", base: "tuned", opts: noCore, status: Warn, found: "no cycle core configured"},
		{name: "core not online", base: "tuned", opts: func(o *Options) { o.CycleCore = 7 }, status: Fail, found: "not an online CPU (online: 0-3)"},
		{name: "command line only", base: "tuned", edits: []edit{remove("sys/devices/system/cpu/isolated")}, status: Pass, found: "isolcpus=managed_irq,domain,3 covers"},
		{name: "other core isolated", base: "tuned", edits: []edit{
			write("proc/cmdline", "ro isolcpus=2\n"), remove("sys/devices/system/cpu/isolated")},
			status: Fail, found: "does not cover cycle core 3", fix: "isolcpus=managed_irq,domain,2-3 "},
		{name: "without domain flag", base: "tuned", edits: []edit{
			write("proc/cmdline", "ro isolcpus=nohz,3\n"), remove("sys/devices/system/cpu/isolated")},
			status: Fail, found: "lacks the domain flag", fix: "isolcpus=managed_irq,domain,nohz,3 "},
		{name: "kernel did not isolate it", base: "tuned", edits: []edit{write("sys/devices/system/cpu/isolated", "\n")},
			status: Fail, found: "the kernel isolated only cpus none"},
		{name: "isolated by a cpuset partition", base: "stock", edits: []edit{write("sys/devices/system/cpu/isolated", "3\n")},
			status: Pass, found: "not on the kernel command line"},
		{name: "unknown flag", base: "tuned", edits: []edit{write("proc/cmdline", "isolcpus=everything,3\n")},
			status: Fail, found: "unknown flag", fix: "isolcpus=managed_irq,domain,3 "},
		{name: "list up to N", base: "tuned", edits: []edit{write("proc/cmdline", "isolcpus=2-N\n"), remove("sys/devices/system/cpu/isolated")},
			status: Pass, found: "isolcpus=2-N covers"},
		{name: "no command line", base: "tuned", edits: []edit{remove("proc/cmdline")}, status: Warn, found: "cannot read the kernel command line"},
	})
}

func TestNohzFull(t *testing.T) {
	runScenarios(t, "nohz_full", []scenario{
		{name: "kernel without NO_HZ_FULL", base: "tuned", edits: []edit{remove("sys/devices/system/cpu/nohz_full")},
			status: Warn, found: "built without NO_HZ_FULL"},
		{name: "kernel refused the core", base: "tuned", edits: []edit{write("sys/devices/system/cpu/nohz_full", "(null)\n")},
			status: Fail, found: `only on cpus "(null)"`},
		{name: "list misses the core", base: "tuned", edits: []edit{write("proc/cmdline", "nohz_full=1-2\n")},
			status: Fail, found: "nohz_full=1-2 does not cover", fix: "nohz_full=1-3 "},
		{name: "bad list", base: "tuned", edits: []edit{write("proc/cmdline", "nohz_full=x\n")}, status: Fail, found: "bad CPU number"},
		{name: "no core", base: "stock", opts: noCore, status: Warn, found: "no cycle core"},
	})
}

func TestRcuNocbs(t *testing.T) {
	runScenarios(t, "rcu_nocbs", []scenario{
		{name: "implied by nohz_full", base: "tuned", edits: []edit{write("proc/cmdline", "nohz_full=2-3\n")},
			status: Pass, found: "nohz_full=2-3 covers cycle core 3 (implies rcu_nocbs)"},
		{name: "bare parameter offloads nothing", base: "tuned", edits: []edit{write("proc/cmdline", "rcu_nocbs\n")},
			status: Fail, found: "rcu_nocbs does not cover", fix: "rcu_nocbs=3 "},
	})
}

func TestCpufreqGovernor(t *testing.T) {
	cpufreqGone := make([]edit, 4)
	for c := range cpufreqGone {
		cpufreqGone[c] = remove(fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpufreq", c))
	}
	runScenarios(t, "cpufreq_governor", []scenario{
		{name: "no cpufreq (VM)", base: "stock", edits: cpufreqGone, status: Skip, found: "no cpufreq on cpu 3"},
		{name: "no cpufreq anywhere, no core", base: "stock", edits: cpufreqGone, opts: noCore, status: Skip, found: "no cpufreq on cpu 0-3"},
		{name: "minimum raised to maximum", base: "stock", edits: []edit{write("sys/devices/system/cpu/cpu3/cpufreq/scaling_min_freq", "4200000\n")},
			status: Pass, found: "full frequency on cpu 3"},
		{name: "every CPU when no core", base: "stock", opts: noCore, status: Warn, found: "governor powersave on cpu 0-3",
			fix: "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor /sys/devices/system/cpu/cpu1/"},
		{name: "mixed governors", base: "stock", opts: noCore, edits: []edit{
			write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil\n"),
			write("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n")},
			status: Warn, found: "governor powersave on cpu 2-3; governor schedutil on cpu 0"},
		{name: "core not online", base: "stock", opts: func(o *Options) { o.CycleCore = 9 }, status: Fail, found: "not an online CPU"},
	})
}

func TestCstates(t *testing.T) {
	cpuidleGone := make([]edit, 4)
	for c := range cpuidleGone {
		cpuidleGone[c] = remove(fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpuidle", c))
	}
	runScenarios(t, "cstates", []scenario{
		{name: "idle=poll", base: "stock", edits: []edit{write("proc/cmdline", "ro idle=poll\n")}, status: Pass, found: "idle=poll"},
		{name: "no cpuidle driver", base: "stock", edits: cpuidleGone, status: Skip, found: "no cpuidle states exposed"},
		{name: "one deep state left on one CPU", base: "tuned", edits: []edit{write("sys/devices/system/cpu/cpu2/cpuidle/state3/disable", "0\n")},
			status: Warn, found: "C6 (133 µs) on cpu 2 enabled (command line: intel_idle.max_cstate=0",
			fix: "echo 1 | sudo tee /sys/devices/system/cpu/cpu2/cpuidle/state3/disable  # at boot"},
		{name: "dma latency note", base: "stock", edits: []edit{write("dev/cpu_dma_latency", "")},
			status: Warn, found: "holds /dev/cpu_dma_latency at 0"},
		{name: "unreadable latency", base: "tuned", edits: []edit{write("sys/devices/system/cpu/cpu1/cpuidle/state2/latency", "fast\n")},
			status: Warn, found: "idle state state2 of cpu 1"},
	})
}

func TestIRQAffinity(t *testing.T) {
	runScenarios(t, "irq_affinity", []scenario{
		{name: "NIC IRQ off the core", base: "tuned", edits: []edit{write("proc/irq/131/smp_affinity_list", "0-3\n")},
			status: Warn, found: "eth1 IRQs not pinned to cycle core 3: 131 eth1-TxRx-1 (0-3)", fix: "for i in 130 131 132; do echo 3 |"},
		{name: "default affinity includes the core", base: "tuned", edits: []edit{write("proc/irq/default_smp_affinity", "f\n")},
			status: Warn, found: "default_smp_affinity lets new IRQs onto cycle core 3", fix: "echo 7 | sudo tee /proc/irq/default_smp_affinity"},
		{name: "one foreign IRQ", base: "tuned", edits: []edit{write("proc/irq/121/smp_affinity_list", "3\n")},
			status: Fail, found: "1 IRQs may run on cycle core 3: 121 ahci[0000:00:17.0] (3)", fix: "for i in 121; do echo 0-2 |"},
		{name: "no interface: NIC IRQs are foreign", base: "tuned", opts: noInterface,
			status: Fail, found: "3 IRQs may run on cycle core 3: 130 eth1-TxRx-0 (3)"},
		{name: "NIC found by name only", base: "tuned", edits: []edit{remove("sys/class/net/eth1/device/msi_irqs")},
			status: Pass, found: "eth1 IRQs 130 131 132 are pinned to it"},
		{name: "NIC without IRQs", base: "tuned", opts: func(o *Options) { o.Interface = "veth0" },
			edits: []edit{write("sys/class/net/veth0/ifindex", "9\n"), write("proc/irq/130/smp_affinity_list", "0-2\n"),
				write("proc/irq/131/smp_affinity_list", "0-2\n"), write("proc/irq/132/smp_affinity_list", "0-2\n")},
			status: Pass, found: "no IRQs found for veth0"},
		{name: "IRQ vanished", base: "tuned", edits: []edit{remove("proc/irq/121")}, status: Pass, found: "none of 6 IRQs"},
		{name: "from /proc/irq when interrupts is missing", base: "stock", edits: []edit{remove("proc/interrupts")},
			status: Fail, found: "6 IRQs may run on cycle core 3: 0 (0-3), 8 (0-3), 9 (0-3), 120 (0-3)"},
		{name: "no core", base: "tuned", opts: noCore, status: Warn, found: "no cycle core configured"},
		{name: "unparsable interrupts", base: "tuned", edits: []edit{write("proc/interrupts", "nonsense\n")}, status: Warn, found: "cannot list interrupts"},
		{name: "many offenders are bounded", base: "stock", opts: noInterface, status: Fail, found: "(0-3) and 1 more"},
	})
}

func TestClocksource(t *testing.T) {
	runScenarios(t, "clocksource", []scenario{
		{name: "tsc available but not used", base: "stock", edits: []edit{
			write("sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm\n")},
			status: Warn, found: "clocksource hpet (available: tsc hpet acpi_pm)", fix: "echo tsc | sudo tee"},
		{name: "no clocksource", base: "stock", edits: []edit{remove("sys/devices/system/clocksource")}, status: Skip, found: "cannot read the clocksource"},
	})
}

func TestRTThrottling(t *testing.T) {
	runScenarios(t, "rt_throttling", []scenario{
		{name: "runtime equals period", base: "stock", edits: []edit{write("proc/sys/kernel/sched_rt_runtime_us", "1000000\n")}, status: Pass, found: "no throttling"},
		{name: "odd share", base: "stock", edits: []edit{write("proc/sys/kernel/sched_rt_runtime_us", "333333\n")}, status: Warn, found: "(33.3 %)"},
		{name: "unreadable", base: "stock", edits: []edit{write("proc/sys/kernel/sched_rt_runtime_us", "lots\n")}, status: Warn, found: "cannot read"},
	})
}

// stockLimit is an edit of the stock /proc/self/limits with one limit
// changed.
func stockLimit(t *testing.T, name, soft, hard string) edit {
	t.Helper()
	data, err := os.ReadFile("testdata/stock/proc/self/limits")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	replaced := false
	for i, line := range lines {
		if strings.HasPrefix(line, name+" ") {
			lines[i] = fmt.Sprintf("%-25s %-20s %-20s", name, soft, hard)
			replaced = true
		}
	}
	if !replaced {
		t.Fatalf("no %q in the stock limits", name)
	}
	return write("proc/self/limits", strings.Join(lines, "\n"))
}

func TestSchedFIFO(t *testing.T) {
	rtprio := func(soft, hard string) edit { return stockLimit(t, "Max realtime priority", soft, hard) }
	noCgroup := remove("sys/fs/cgroup")
	runScenarios(t, "sched_fifo", []scenario{
		{name: "no privilege", base: "stock", edits: []edit{noCgroup}, status: Fail, found: "RLIMIT_RTPRIO 0/0 (soft/hard)", fix: "LimitRTPRIO=80"},
		{name: "hard limit allows it", base: "stock", edits: []edit{noCgroup, rtprio("0", "99")}, status: Warn, found: "hard limit 99"},
		{name: "limit below the priority", base: "stock", edits: []edit{noCgroup, rtprio("50", "50")}, status: Fail, found: "priority 80 is refused"},
		{name: "any priority when none configured", base: "stock", edits: []edit{noCgroup, rtprio("1", "1")},
			opts: func(o *Options) { o.Priority = 0 }, status: Pass, found: "allows SCHED_FIFO priority 1"},
		{name: "CAP_SYS_NICE", base: "stock", edits: []edit{noCgroup, write("proc/self/status", "CapEff:\t0000000000800000\n")}, status: Pass, found: "CAP_SYS_NICE"},
		{name: "cgroup refuses even with the capability", base: "stock", edits: []edit{write("proc/self/status", "CapEff:\t000001ffffffffff\n")},
			status: Fail, found: "/sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.rt_runtime_us is 0"},
		{name: "cgroup with a budget", base: "stock", edits: []edit{rtprio("99", "99"),
			write("sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.rt_runtime_us", "950000\n")}, status: Pass, found: "RLIMIT_RTPRIO 99"},
		{name: "container cgroup at the top", base: "tuned", edits: []edit{write("sys/fs/cgroup/cpu.rt_runtime_us", "0\n")},
			status: Fail, found: "/sys/fs/cgroup/cpu.rt_runtime_us is 0"},
		{name: "no status", base: "tuned", edits: []edit{remove("proc/self/status")}, status: Warn, found: "cannot read /proc/self/status"},
	})
}

func TestMlock(t *testing.T) {
	memlock := func(soft, hard string) edit { return stockLimit(t, "Max locked memory", soft, hard) }
	runScenarios(t, "mlock", []scenario{
		{name: "CAP_IPC_LOCK", base: "stock", edits: []edit{write("proc/self/status", "CapEff:\t0000000000004000\n")}, status: Pass, found: "CAP_IPC_LOCK"},
		{name: "soft limit can be raised", base: "stock", edits: []edit{memlock("8388608", "unlimited")}, status: Warn, found: "hard limit is unlimited"},
		{name: "large finite limit", base: "stock", edits: []edit{memlock("4294967296", "4294967296")}, status: Warn, found: "RLIMIT_MEMLOCK 4.0 GiB"},
		{name: "limits missing the line", base: "stock", edits: []edit{write("proc/self/limits", "Limit Soft Hard Units\n")}, status: Warn, found: "no \"Max locked memory\" line"},
	})
}

func TestDMALatency(t *testing.T) {
	runScenarios(t, "dma_latency", []scenario{
		{name: "present", base: "stock", edits: []edit{write("dev/cpu_dma_latency", "")}, status: Pass, found: "/dev/cpu_dma_latency exists"},
	})
	if os.Geteuid() == 0 {
		t.Skip("root may write any file: cannot test a refused write")
	}
	root := overlay(t, "testdata/tuned")
	if err := os.Chmod(filepath.Join(root, "dev", "cpu_dma_latency"), 0o444); err != nil {
		t.Fatal(err)
	}
	v := checkDMALatency(newHost(fixtureOptions(root, tunedNIC())))
	if v.status != Warn || !strings.Contains(v.found, "may not write it (permission denied)") || v.fix == "" {
		t.Errorf("read-only node: got %v %q fix %q", v.status, v.found, v.fix)
	}
}

func TestSwap(t *testing.T) {
	runScenarios(t, "swap", []scenario{
		{name: "zram", base: "tuned", edits: []edit{write("proc/swaps", "Filename Type Size Used Priority\n/dev/zram0 partition 4194300 0 100\n")},
			status: Warn, found: "/dev/zram0 (partition, 4.0 GiB, 0 KiB used) zram; vm.swappiness 10", fix: "swapoff -a"},
		{name: "unparsable", base: "tuned", edits: []edit{write("proc/swaps", "what\n")}, status: Warn, found: "no header"},
	})
}

func TestNICLink(t *testing.T) {
	runScenarios(t, "nic_link", []scenario{
		{name: "no interface configured", base: "tuned", opts: noInterface, status: Skip, found: "no interface configured"},
		{name: "missing interface", base: "tuned", opts: func(o *Options) { o.Interface = "eth9" }, status: Fail, found: "eth9 does not exist"},
		{name: "no carrier", base: "tuned", edits: []edit{remove("sys/class/net/eth1/carrier"), write("sys/class/net/eth1/operstate", "down\n")},
			status: Fail, found: "eth1 has no link (operstate down)", fix: "sudo ip link set dev eth1 up"},
		{name: "small MTU", base: "tuned", edits: []edit{write("sys/class/net/eth1/mtu", "1400\n")},
			status: Warn, found: "MTU 1400 is below 1500", fix: "sudo ip link set dev eth1 mtu 1500"},
		{name: "speed and duplex unknown (virtual NIC)", base: "tuned", edits: []edit{write("sys/class/net/eth1/speed", "-1\n"), write("sys/class/net/eth1/duplex", "unknown\n")},
			status: Warn, found: "speed unknown, duplex unknown"},
		{name: "gigabit", base: "tuned", edits: []edit{write("sys/class/net/eth1/speed", "1000\n")}, status: Pass, found: "1000 Mbit/s"},
	})
}

func TestNICCoalescing(t *testing.T) {
	veth := tunedNIC()
	veth.driver = "veth"
	veth.errs = map[string]error{"Coalescing": fmt.Errorf("ethtool get coalescing veth0: %w", ErrNotSupported)}
	broken := tunedNIC()
	broken.errs = map[string]error{"Coalescing": errors.New("ethtool get coalescing eth1: input/output error"), "Driver": ErrNotSupported}
	frames := tunedNIC()
	frames.coalescing = Coalescing{RxFrames: 64, TxFrames: 16, AdaptiveTx: true}
	runScenarios(t, "nic_coalescing", []scenario{
		{name: "veth", base: "tuned", opts: withNIC(veth), status: Skip, found: "eth1 (veth): coalescing not supported by driver"},
		{name: "read error", base: "tuned", opts: withNIC(broken), status: Warn, found: "input/output error"},
		{name: "frame counts", base: "tuned", opts: withNIC(frames), status: Warn, found: "adaptive-tx on, rx-frames 64, tx-frames 16",
			fix: "sudo ethtool -C eth1 adaptive-tx off rx-frames 1 tx-frames 1"},
		{name: "no interface", base: "tuned", opts: noInterface, status: Skip, found: "no interface configured"},
		{name: "missing interface", base: "tuned", opts: func(o *Options) { o.Interface = "eth9" }, status: Skip, found: "see nic_link"},
	})
}

func TestNICOffloads(t *testing.T) {
	fixedOn := tunedNIC()
	fixedOn.features = Features{"tx-vlan-hw-insert": {Active: true, Fixed: true}, "rx-lro": {Active: true, Fixed: true}}
	someTSO := tunedNIC()
	someTSO.features = Features{"tx-tcp6-segmentation": {Active: true}, "tx-tcp-segmentation": {Active: true, Fixed: true}}
	unsupported := tunedNIC()
	unsupported.errs = map[string]error{"Features": ErrNotSupported}
	runScenarios(t, "nic_offloads", []scenario{
		{name: "on but fixed", base: "tuned", opts: withNIC(fixedOn), status: Pass, found: "(lro txvlan on, fixed by the driver)"},
		{name: "one of the tso features", base: "tuned", opts: withNIC(someTSO), status: Warn, found: "eth1 (igb): tso on", fix: "sudo ethtool -K eth1 tso off"},
		{name: "unsupported", base: "tuned", opts: withNIC(unsupported), status: Skip, found: "not supported by driver"},
	})
}

func TestNICRings(t *testing.T) {
	tiny := tunedNIC()
	tiny.rings = Rings{RxPending: 512, TxPending: 512, RxMax: 512, TxMax: 64}
	unsupported := tunedNIC()
	unsupported.errs = map[string]error{"Rings": ErrNotSupported}
	runScenarios(t, "nic_rings", []scenario{
		{name: "target capped by the hardware", base: "tuned", opts: withNIC(tiny), status: Warn, found: "rx 512, tx 512", fix: "sudo ethtool -G eth1 rx 128 tx 64"},
		{name: "unsupported", base: "tuned", opts: withNIC(unsupported), status: Skip, found: "ring sizes not supported by driver"},
	})
}

func TestNICXDP(t *testing.T) {
	with := func(x fixtureXDP) func(*Options) { return func(o *Options) { o.XDP = x } }
	zc := fixtureXDP{f: XDPFeatures{Redirect: true, ZeroCopy: true}}
	queues := []edit{write("sys/class/net/eth1/queues/rx-0/rps_cpus", "0\n"), write("sys/class/net/eth1/queues/rx-1/rps_cpus", "0\n"),
		write("sys/class/net/eth1/queues/tx-0/xps_cpus", "0\n")}
	runScenarios(t, "nic_xdp", []scenario{
		{name: "zero-copy, one queue", base: "tuned", opts: with(zc), edits: queues[:1], status: Pass, found: "eth1 (igb): native XDP with zero-copy, 1 receive queue(s): bus.link auto uses xdp"},
		{name: "zero-copy, two queues", base: "tuned", opts: with(zc), edits: queues, status: Warn,
			found: "but 2 receive queues", fix: "sudo ethtool -L eth1 combined 1"},
		{name: "copy mode", base: "tuned", opts: with(fixtureXDP{f: XDPFeatures{Redirect: true}}), status: Pass, found: "copy mode only (no zero-copy): xdp costs what mmap costs; bus.link auto uses mmap"},
		{name: "generic only", base: "tuned", opts: with(fixtureXDP{}), status: Pass, found: "no native XDP in the driver"},
		{name: "old kernel", base: "tuned", opts: with(fixtureXDP{err: fmt.Errorf("eth1: %w", ErrNotSupported)}), status: Pass, found: "does not report XDP features"},
		{name: "netlink error", base: "tuned", opts: with(fixtureXDP{err: errors.New("permission denied")}), status: Warn, found: "cannot read the XDP features of eth1: permission denied"},
		{name: "no interface", base: "tuned", opts: noInterface, status: Skip, found: "no interface configured"},
	})
}

func TestNICNetworkManager(t *testing.T) {
	runScenarios(t, "nic_networkmanager", []scenario{
		{name: "not running", base: "stock", edits: []edit{remove("run/NetworkManager")}, status: Skip, found: "not running"},
		{name: "no state for the interface", base: "stock", edits: []edit{remove("run/NetworkManager/devices/3")}, status: Warn, found: "keeps no state for eth1 (ifindex 3)"},
		{name: "managed unknown", base: "stock", edits: []edit{write("run/NetworkManager/devices/3", "[device]\nnm-owned=false\n")}, status: Warn, found: "does not say"},
		{name: "no ifindex", base: "stock", edits: []edit{remove("sys/class/net/eth1/ifindex")}, status: Warn, found: "cannot read the ifindex"},
	})
}
