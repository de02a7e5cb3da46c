package rtcheck

import (
	"fmt"
	"strconv"
	"strings"
)

func nicNetworkManagerCheck() check {
	return check{id: "nic_networkmanager", title: "EtherCAT interface not managed by NetworkManager", run: checkNICNetworkManager}
}

// checkNICNetworkManager tells from NetworkManager's runtime state files
// whether it manages the interface. While NetworkManager runs it keeps
// /run/NetworkManager/devices/IFINDEX, a key file whose [device] group says
// managed=true or managed=false; no /run/NetworkManager means it is not
// running (skip). A managed interface gets DHCP, IPv6 router solicitations
// and link resets that disturb the segment (warn); no state file or no
// managed key leaves it unknown (warn).
func checkNICNetworkManager(h *host) verdict {
	if v, stop := h.nicProblem(); stop {
		return v
	}
	if !exists(h.runPath("NetworkManager")) {
		return verdict{status: Skip, found: "NetworkManager is not running (no /run/NetworkManager)"}
	}
	fix := fmt.Sprintf(`sudo nmcli device set %[1]s managed no && printf '[device-ecagent]\nmatch-device=interface-name:%[1]s\nmanaged=0\n' | sudo tee /etc/NetworkManager/conf.d/90-ecagent.conf && sudo systemctl reload NetworkManager`, h.iface)
	ifindex, err := readInt(h.netPath("ifindex"))
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot read the ifindex of %s: %v", h.iface, err)}
	}
	stateFile := h.runPath("NetworkManager", "devices", strconv.FormatInt(ifindex, 10))
	text, err := readFile(stateFile)
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("NetworkManager runs but keeps no state for %s (ifindex %d): check with nmcli device status", h.iface, ifindex), fix: fix}
	}
	managed, ok := parseKeyFileBool(text, "device", "managed")
	switch {
	case !ok:
		return verdict{status: Warn, found: fmt.Sprintf("NetworkManager's state for %s does not say whether it manages it", h.iface), fix: fix}
	case managed:
		return verdict{status: Warn, found: fmt.Sprintf("NetworkManager manages %s: it may run DHCP, IPv6 and link resets on the EtherCAT port", h.iface), fix: fix}
	}
	return verdict{status: Pass, found: fmt.Sprintf("NetworkManager runs but leaves %s unmanaged", h.iface)}
}

// parseKeyFileBool finds key in [group] of a GLib key file and parses it as
// a boolean (true/false, 1/0); ok is false when absent or not a boolean.
func parseKeyFileBool(text, group, key string) (value, ok bool) {
	inGroup := false
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			inGroup = line[1:len(line)-1] == group
			continue
		}
		k, v, found := strings.Cut(line, "=")
		if !inGroup || !found || strings.TrimSpace(k) != key {
			continue
		}
		switch strings.TrimSpace(v) {
		case "true", "1":
			return true, true
		case "false", "0":
			return false, true
		}
		return false, false
	}
	return false, false
}
