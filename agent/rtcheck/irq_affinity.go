package rtcheck

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// maxListed bounds how many offenders a report names.
const maxListed = 8

func irqAffinityCheck() check {
	return check{id: "irq_affinity", title: "Interrupts kept off the cycle core, NIC interrupts on it", run: checkIRQAffinity}
}

// checkIRQAffinity reads the affinity of every interrupt in use
// (/proc/interrupts, then /proc/irq/N/smp_affinity_list or smp_affinity).
// It fails when any interrupt other than the EtherCAT NIC's may run on the
// cycle core, and warns when the NIC's interrupts are not pinned to exactly
// that core or when /proc/irq/default_smp_affinity would let new interrupts
// onto it.
func checkIRQAffinity(h *host) verdict {
	if v, stop := h.coreProblem(); stop {
		return v
	}
	irqs, err := h.interrupts()
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot list interrupts: %v", err)}
	}
	nic := map[int]bool{}
	if h.iface != "" {
		nic = h.nicIRQs(irqs)
	}
	var foreign, nicAway []string
	var foreignIRQs, nicIRQs []int
	for _, irq := range irqs {
		aff, err := h.irqAffinity(irq.irq)
		if err != nil {
			continue // gone since /proc/interrupts was read, or not configurable
		}
		label := strconv.Itoa(irq.irq)
		if n := irq.name(); n != "" {
			label += " " + n
		}
		label += " (" + aff.String() + ")"
		if nic[irq.irq] {
			nicIRQs = append(nicIRQs, irq.irq)
			if !aff.only(h.core) {
				nicAway = append(nicAway, label)
			}
			continue
		}
		if aff.has(h.core) {
			foreign = append(foreign, label)
			foreignIRQs = append(foreignIRQs, irq.irq)
		}
	}
	defaultOnCore := false
	if s, err := readTrimmed(h.procPath("irq", "default_smp_affinity")); err == nil {
		if mask, err := parseCPUMask(s); err == nil {
			defaultOnCore = mask.has(h.core)
		}
	}

	var problems, fixes []string
	status := Pass // raised with max: Pass < Warn < Fail numerically
	if len(foreign) > 0 {
		status = Fail
		problems = append(problems, fmt.Sprintf("%d IRQs may run on cycle core %d: %s", len(foreign), h.core, bounded(foreign, maxListed)))
		fixes = append(fixes, fmt.Sprintf("for i in %s; do echo %s | sudo tee /proc/irq/$i/smp_affinity_list; done", joinInts(foreignIRQs), h.housekeeping()))
	}
	if len(nicAway) > 0 {
		status = max(status, Warn)
		problems = append(problems, fmt.Sprintf("%s IRQs not pinned to cycle core %d: %s", h.iface, h.core, bounded(nicAway, maxListed)))
		fixes = append(fixes, fmt.Sprintf("for i in %s; do echo %d | sudo tee /proc/irq/$i/smp_affinity_list; done", joinInts(nicIRQs), h.core))
	}
	if defaultOnCore {
		status = max(status, Warn)
		problems = append(problems, fmt.Sprintf("/proc/irq/default_smp_affinity lets new IRQs onto cycle core %d", h.core))
		fixes = append(fixes, fmt.Sprintf("echo %s | sudo tee /proc/irq/default_smp_affinity", formatCPUMask(h.housekeeping())))
	}
	if status == Pass {
		found := fmt.Sprintf("none of %d IRQs may run on cycle core %d", len(irqs)-len(nicIRQs), h.core)
		switch {
		case h.iface == "":
		case len(nicIRQs) == 0:
			found += fmt.Sprintf("; no IRQs found for %s (a virtual interface has none)", h.iface)
		default:
			found += fmt.Sprintf("; %s IRQs %s are pinned to it", h.iface, joinInts(nicIRQs))
		}
		return verdict{status: Pass, found: found}
	}
	fix := strings.Join(fixes, "; ")
	if len(foreign) > 0 {
		fix += fmt.Sprintf("  # if irqbalance runs: IRQBALANCE_BANNED_CPULIST=%d in /etc/default/irqbalance", h.core)
	}
	return verdict{status: status, found: strings.Join(problems, "; "), fix: fix}
}

// interrupts lists the interrupts in use from /proc/interrupts, falling
// back to the numbered directories of /proc/irq.
func (h *host) interrupts() ([]interrupt, error) {
	text, err := readFile(h.procPath("interrupts"))
	if err == nil {
		return parseInterrupts(text)
	}
	entries, dirErr := os.ReadDir(h.procPath("irq"))
	if dirErr != nil {
		return nil, err
	}
	var irqs []interrupt
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			irqs = append(irqs, interrupt{irq: n})
		}
	}
	slices.SortFunc(irqs, func(a, b interrupt) int { return a.irq - b.irq })
	return irqs, nil
}

// irqAffinity reads where an interrupt may run.
func (h *host) irqAffinity(irq int) (cpuSet, error) {
	dir := strconv.Itoa(irq)
	if s, err := readFile(h.procPath("irq", dir, "smp_affinity_list")); err == nil {
		return parseCPUList(s, -1)
	}
	s, err := readFile(h.procPath("irq", dir, "smp_affinity"))
	if err != nil {
		return cpuSet{}, err
	}
	return parseCPUMask(s)
}

// nicIRQs finds the interrupts of the configured interface: its device's
// MSI vectors (/sys/class/net/IF/device/msi_irqs; for a virtio NIC those of
// the PCI function above the virtio device), else its legacy line
// (device/irq), plus every interrupt whose name mentions the interface.
func (h *host) nicIRQs(irqs []interrupt) map[int]bool {
	nic := map[int]bool{}
	vectors := readIRQDir(h.netPath("device", "msi_irqs"))
	if len(vectors) == 0 {
		if modalias, _ := readTrimmed(h.netPath("device", "modalias")); strings.HasPrefix(modalias, "virtio:") {
			// Not filepath.Join: ".." must climb from the symlink's
			// target, the virtio device, to its PCI function.
			vectors = readIRQDir(h.netPath("device") + "/../msi_irqs")
		}
	}
	if len(vectors) == 0 {
		if n, err := readInt(h.netPath("device", "irq")); err == nil && n > 0 {
			vectors = append(vectors, int(n))
		}
	}
	inUse := map[int]bool{}
	for _, irq := range irqs {
		inUse[irq.irq] = true
		if irq.names(h.iface) {
			nic[irq.irq] = true
		}
	}
	for _, v := range vectors {
		if inUse[v] {
			nic[v] = true
		}
	}
	return nic
}

// readIRQDir returns the IRQ numbers named by the entries of a directory
// such as msi_irqs.
func readIRQDir(dir string) []int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var irqs []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			irqs = append(irqs, n)
		}
	}
	return irqs
}

// housekeeping is every online CPU but the cycle core: where other
// interrupts belong.
func (h *host) housekeeping() cpuSet {
	online, ok := h.onlineCPUs()
	if !ok {
		dirs, _ := h.cpuDirs()
		online = cpuSetOf(dirs)
	}
	hk := online.without(h.core)
	if hk.empty() {
		hk = cpuOf(0)
	}
	return hk
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}
