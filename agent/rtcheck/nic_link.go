package rtcheck

import (
	"fmt"
	"strings"
)

// Link figures EtherCAT needs: 100BASE-TX full duplex, and room for a
// full-size frame.
const (
	minLinkSpeed = 100  // Mbit/s
	minMTU       = 1500 // bytes
)

func nicLinkCheck() check {
	return check{id: "nic_link", title: "EtherCAT link up at 100 Mbit/s full duplex", run: checkNICLink}
}

// checkNICLink reads /sys/class/net/IF: it fails when the interface is
// missing, has no carrier, runs below 100 Mbit/s or at half duplex, and
// warns when speed or duplex are not reported or the MTU is below 1500.
func checkNICLink(h *host) verdict {
	if h.iface == "" {
		return verdict{status: Skip, found: "no interface configured (simulated segment)"}
	}
	if !exists(h.netPath()) {
		return verdict{status: Fail, found: fmt.Sprintf("interface %s does not exist", h.iface), fix: "ip -br link  # pick an existing interface for bus.interface"}
	}
	operstate, _ := readTrimmed(h.netPath("operstate"))
	carrier, _ := readTrimmed(h.netPath("carrier")) // EINVAL while the interface is down
	if carrier != "1" {
		return verdict{status: Fail, found: fmt.Sprintf("%s has no link (operstate %s)", h.iface, orUnknown(operstate)),
			fix: fmt.Sprintf("sudo ip link set dev %s up  # and check the cable to the first EtherCAT slave", h.iface)}
	}
	var problems []string
	fix := ""
	negotiate := fmt.Sprintf("sudo ethtool -s %s speed 100 duplex full autoneg on  # and check the cable to the first slave's IN port", h.iface)
	status := Pass // raised with max: Pass < Warn < Fail numerically
	speedText := "speed unknown"
	if speed, err := readInt(h.netPath("speed")); err == nil && speed > 0 {
		speedText = fmt.Sprintf("%d Mbit/s", speed)
		if speed < minLinkSpeed {
			status = Fail
			problems = append(problems, fmt.Sprintf("%s is below the %d Mbit/s EtherCAT runs at", speedText, minLinkSpeed))
			fix = negotiate
		}
	} else {
		status = max(status, Warn)
		problems = append(problems, "the driver reports no link speed")
	}
	duplex, _ := readTrimmed(h.netPath("duplex"))
	switch duplex {
	case "full":
	case "half":
		status = Fail
		problems = append(problems, "half duplex: EtherCAT frames need full duplex")
		fix = negotiate
	default:
		status = max(status, Warn)
		problems = append(problems, "the driver reports duplex "+orUnknown(duplex))
	}
	mtu, err := readInt(h.netPath("mtu"))
	if err == nil && mtu < minMTU {
		status = max(status, Warn)
		problems = append(problems, fmt.Sprintf("MTU %d is below %d: full-size EtherCAT frames are refused", mtu, minMTU))
		mtuFix := fmt.Sprintf("sudo ip link set dev %s mtu %d", h.iface, minMTU)
		if fix == "" {
			fix = mtuFix
		} else {
			fix = mtuFix + " && " + fix
		}
	}
	summary := fmt.Sprintf("%s up, %s, duplex %s, MTU %d", h.iface, speedText, orUnknown(duplex), mtu)
	if status == Pass {
		return verdict{status: Pass, found: summary}
	}
	return verdict{status: status, found: summary + ": " + strings.Join(problems, "; "), fix: fix}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
