package rtcheck

import (
	"errors"
	"fmt"
	"strings"
)

// Ring sizes: above maxRing descriptors a ring can queue a backlog of
// frames ahead of the cycle's; the fix asks for wantRing.
const (
	maxRing  = 256
	wantRing = 128
)

func nicRingsCheck() check {
	return check{id: "nic_rings", title: "Small NIC rings", run: checkNICRings}
}

// checkNICRings passes when the RX and TX rings hold at most 256
// descriptors; drivers that do not report rings are skipped.
func checkNICRings(h *host) verdict {
	if v, stop := h.nicProblem(); stop {
		return v
	}
	r, err := h.nic.Rings(h.iface)
	if errors.Is(err, ErrNotSupported) {
		return verdict{status: Skip, found: fmt.Sprintf("%s: ring sizes not supported by driver", h.nicLabel())}
	}
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot read ring sizes: %v", err)}
	}
	found := fmt.Sprintf("%s: rx %d, tx %d descriptors (max %d, %d)", h.nicLabel(), r.RxPending, r.TxPending, r.RxMax, r.TxMax)
	var settings []string
	if r.RxPending > maxRing {
		settings = append(settings, fmt.Sprintf("rx %d", ringTarget(r.RxMax)))
	}
	if r.TxPending > maxRing {
		settings = append(settings, fmt.Sprintf("tx %d", ringTarget(r.TxMax)))
	}
	if len(settings) == 0 {
		return verdict{status: Pass, found: found}
	}
	return verdict{
		status: Warn,
		found:  fmt.Sprintf("%s: more than %d queues frames ahead of the cycle's", found, maxRing),
		fix:    fmt.Sprintf("sudo ethtool -G %s %s", h.iface, strings.Join(settings, " ")),
	}
}

// ringTarget is wantRing, or the hardware's maximum if that is smaller.
func ringTarget(hwMax uint32) uint32 {
	if hwMax > 0 && hwMax < wantRing {
		return hwMax
	}
	return wantRing
}
