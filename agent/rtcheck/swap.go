package rtcheck

import (
	"fmt"
	"strconv"
	"strings"
)

func swapCheck() check {
	return check{id: "swap", title: "No active swap", run: checkSwap}
}

// swapArea is one line of /proc/swaps.
type swapArea struct {
	name       string
	kind       string // partition, file
	sizeKiB    int64
	usedKiB    int64
	isRAMBased bool // zram: compressed RAM, no disk I/O
}

// parseSwaps parses /proc/swaps: a header, then one line per active area
// with its name, type, size and use in KiB, and priority.
func parseSwaps(text string) ([]swapArea, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Filename") {
		return nil, fmt.Errorf("swaps: no header")
	}
	var areas []swapArea
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			return nil, fmt.Errorf("swaps: short line %q", line)
		}
		size, err1 := strconv.ParseInt(f[2], 10, 64)
		used, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("swaps: bad sizes in %q", line)
		}
		areas = append(areas, swapArea{name: f[0], kind: f[1], sizeKiB: size, usedKiB: used,
			isRAMBased: strings.HasPrefix(f[0], "/dev/zram")})
	}
	return areas, nil
}

// checkSwap warns while any swap area is active: the cycle process locks
// its memory, but the rest of the host paging to disk competes for the
// memory bus and the I/O path.
func checkSwap(h *host) verdict {
	text, err := readFile(h.procPath("swaps"))
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot read /proc/swaps: %v", err)}
	}
	areas, err := parseSwaps(text)
	if err != nil {
		return verdict{status: Warn, found: err.Error()}
	}
	if len(areas) == 0 {
		return verdict{status: Pass, found: "no active swap"}
	}
	parts := make([]string, len(areas))
	for i, a := range areas {
		parts[i] = fmt.Sprintf("%s (%s, %s, %s used)", a.name, a.kind, kibString(a.sizeKiB), kibString(a.usedKiB))
		if a.isRAMBased {
			parts[i] += " zram"
		}
	}
	found := fmt.Sprintf("%d active swap area(s): %s", len(areas), bounded(parts, maxListed))
	if s, err := readTrimmed(h.procPath("sys", "vm", "swappiness")); err == nil {
		found += "; vm.swappiness " + s
	}
	return verdict{
		status: Warn,
		found:  found,
		fix:    `sudo swapoff -a && sudo sed -i -E '/^[^#]\S*\s+\S+\s+swap\s/s/^/#/' /etc/fstab`,
	}
}

// kibString formats a size in KiB with a binary unit.
func kibString(kib int64) string {
	switch {
	case kib >= 1<<20:
		return fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
	case kib >= 1<<10:
		return fmt.Sprintf("%.1f MiB", float64(kib)/(1<<10))
	}
	return fmt.Sprintf("%d KiB", kib)
}
