package rtcheck

import (
	"errors"
	"fmt"
	"strings"
)

func nicCoalescingCheck() check {
	return check{id: "nic_coalescing", title: "NIC interrupt coalescing off", run: checkNICCoalescing}
}

// checkNICCoalescing passes when the NIC interrupts at once for every
// frame: rx-usecs and tx-usecs 0, at most one frame per interrupt and no
// adaptive coalescing. A driver without coalescing (veth, many virtual
// NICs) is skipped.
func checkNICCoalescing(h *host) verdict {
	if v, stop := h.nicProblem(); stop {
		return v
	}
	c, err := h.nic.Coalescing(h.iface)
	if errors.Is(err, ErrNotSupported) {
		return verdict{status: Skip, found: fmt.Sprintf("%s: coalescing not supported by driver", h.nicLabel())}
	}
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot read coalescing: %v", err)}
	}
	var delays, settings []string
	if c.AdaptiveRx {
		delays, settings = append(delays, "adaptive-rx on"), append(settings, "adaptive-rx off")
	}
	if c.AdaptiveTx {
		delays, settings = append(delays, "adaptive-tx on"), append(settings, "adaptive-tx off")
	}
	if c.RxUsecs != 0 {
		delays, settings = append(delays, fmt.Sprintf("rx-usecs %d", c.RxUsecs)), append(settings, "rx-usecs 0")
	}
	if c.TxUsecs != 0 {
		delays, settings = append(delays, fmt.Sprintf("tx-usecs %d", c.TxUsecs)), append(settings, "tx-usecs 0")
	}
	if c.RxFrames > 1 {
		delays, settings = append(delays, fmt.Sprintf("rx-frames %d", c.RxFrames)), append(settings, "rx-frames 1")
	}
	if c.TxFrames > 1 {
		delays, settings = append(delays, fmt.Sprintf("tx-frames %d", c.TxFrames)), append(settings, "tx-frames 1")
	}
	if len(delays) == 0 {
		return verdict{status: Pass, found: fmt.Sprintf("%s: rx-usecs 0, tx-usecs 0, no adaptive coalescing", h.nicLabel())}
	}
	return verdict{
		status: Warn,
		found:  fmt.Sprintf("%s: %s: frames wait for the interrupt", h.nicLabel(), strings.Join(delays, ", ")),
		fix:    fmt.Sprintf("sudo ethtool -C %s %s", h.iface, strings.Join(settings, " ")),
	}
}
