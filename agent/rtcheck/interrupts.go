package rtcheck

import (
	"fmt"
	"strconv"
	"strings"
)

// interrupt is one numbered line of /proc/interrupts.
type interrupt struct {
	irq  int
	desc string // what follows the counts: chip, hardware IRQ, trigger, action names
}

// name is the last word of the description: the (last) action's name, e.g.
// "eth1-TxRx-0".
func (i interrupt) name() string {
	f := strings.Fields(i.desc)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// names reports whether the description names the network interface iface,
// as drivers do in their action names: "eth1", "eth1-TxRx-0", "eth1:rx".
func (i interrupt) names(iface string) bool {
	for word := range strings.FieldsFuncSeq(i.desc, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' }) {
		if word == iface || strings.HasPrefix(word, iface+"-") || strings.HasPrefix(word, iface+":") || strings.HasPrefix(word, iface+"@") {
			return true
		}
	}
	return false
}

// parseInterrupts parses /proc/interrupts: a header of CPU columns, then one
// line per interrupt. Only numbered interrupts (the ones /proc/irq/N
// configures) are returned; per-CPU ones such as LOC: are left out.
func parseInterrupts(text string) ([]interrupt, error) {
	lines := strings.Split(text, "\n")
	if len(lines) == 0 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "CPU") {
		return nil, fmt.Errorf("interrupts: no CPU header")
	}
	ncpu := len(strings.Fields(lines[0]))
	var irqs []interrupt
	for _, line := range lines[1:] {
		label, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		irq, err := strconv.Atoi(strings.TrimSpace(label))
		if err != nil {
			continue
		}
		fields := strings.Fields(rest)
		n := 0
		for n < len(fields) && n < ncpu && isDigits(fields[n]) {
			n++
		}
		if n != ncpu && n != len(fields) {
			return nil, fmt.Errorf("interrupts: IRQ %d has %d counts for %d CPUs", irq, n, ncpu)
		}
		irqs = append(irqs, interrupt{irq: irq, desc: strings.Join(fields[n:], " ")})
	}
	return irqs, nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// formatCPUMask formats a set in the hexadecimal mask format that
// /proc/irq/default_smp_affinity takes: 32-bit words, most significant
// first, separated by commas.
func formatCPUMask(s cpuSet) string {
	last := s.last()
	if last < 0 {
		return "0"
	}
	words := make([]uint32, last/32+1)
	for _, c := range s.list() {
		words[c/32] |= 1 << (c % 32)
	}
	var b strings.Builder
	for i := len(words) - 1; i >= 0; i-- {
		if i == len(words)-1 {
			fmt.Fprintf(&b, "%x", words[i])
		} else {
			fmt.Fprintf(&b, ",%08x", words[i])
		}
	}
	return b.String()
}
