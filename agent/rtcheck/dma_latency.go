package rtcheck

import (
	"errors"
	"fmt"
)

func dmaLatencyCheck() check {
	return check{id: "dma_latency", title: "/dev/cpu_dma_latency usable", run: checkDMALatency}
}

// checkDMALatency passes when /dev/cpu_dma_latency exists and this process
// may open it for writing: ecagent holds it at 0 while running, which keeps
// every CPU out of idle states it would be slow to leave. It only looks at
// the node and its permission (opening it would register a request).
func checkDMALatency(h *host) verdict {
	path := h.devPath("cpu_dma_latency")
	shown := h.display(path)
	if !exists(path) {
		return verdict{status: Warn, found: shown + " does not exist (kernel without PM QoS, or /dev not populated in this container)",
			fix: "# in a container: docker run --device /dev/cpu_dma_latency ...; on a host, use a kernel with CONFIG_CPU_IDLE"}
	}
	if err := canWrite(path); err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("%s exists but this process may not write it (%v): ecagent cannot hold it at 0", shown, unwrapAll(err)),
			fix: `echo 'KERNEL=="cpu_dma_latency", GROUP="ecagent", MODE="0660"' | sudo tee /etc/udev/rules.d/60-ecagent-cpu-dma-latency.rules && sudo udevadm control --reload && sudo udevadm trigger --sysname-match=cpu_dma_latency  # then run ecagent in group ecagent`}
	}
	return verdict{status: Pass, found: shown + " exists and is writable by this process"}
}

// unwrapAll returns the innermost error, e.g. "permission denied" without
// the operation and path around it.
func unwrapAll(err error) error {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err
		}
		err = inner
	}
}
