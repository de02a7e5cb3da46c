package rtcheck

import (
	"fmt"
	"io"
	"strings"
)

// Report writes results as an aligned table, one line per check with its
// status, ID and what it found, and under every Warn or Fail the command
// that fixes it; a summary line closes it.
//
//	STATUS  CHECK       FOUND
//	FAIL    preempt_rt  6.1.0-18-amd64 is not a PREEMPT_RT kernel (#1 SMP PREEMPT_DYNAMIC)
//	                    fix: sudo apt install linux-image-rt-amd64 && sudo reboot
func Report(w io.Writer, results []Result) error {
	idWidth := len("CHECK")
	for _, r := range results {
		idWidth = max(idWidth, len(r.ID))
	}
	const statusWidth = len("STATUS")
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s  %-*s  %s\n", statusWidth, "STATUS", idWidth, "CHECK", "FOUND")
	counts := map[Status]int{}
	for _, r := range results {
		counts[r.Status]++
		fmt.Fprintf(&b, "%-*s  %-*s  %s\n", statusWidth, strings.ToUpper(r.Status.String()), idWidth, r.ID, r.Found)
		if r.Fix != "" && (r.Status == Warn || r.Status == Fail) {
			fmt.Fprintf(&b, "%*s  fix: %s\n", statusWidth+2+idWidth, "", r.Fix)
		}
	}
	fmt.Fprintf(&b, "%d checks: %d pass, %d warn, %d fail, %d skip\n", len(results), counts[Pass], counts[Warn], counts[Fail], counts[Skip])
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("rtcheck report: %w", err)
	}
	return nil
}
