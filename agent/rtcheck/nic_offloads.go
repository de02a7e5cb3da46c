package rtcheck

import (
	"errors"
	"fmt"
	"strings"
)

func nicOffloadsCheck() check {
	return check{id: "nic_offloads", title: "NIC offloads off", run: checkNICOffloads}
}

// offload is an ethtool -K switch and the kernel features it turns.
type offload struct {
	name     string
	features []string
}

// offloads lists the switches the check wants off: segmentation and
// receive aggregation batch frames, and VLAN offloads rewrite them.
func offloads() []offload {
	return []offload{
		{"sg", []string{"tx-scatter-gather"}},
		{"tso", []string{"tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation", "tx-tcp6-segmentation"}},
		{"gso", []string{"tx-generic-segmentation"}},
		{"gro", []string{"rx-gro"}},
		{"lro", []string{"rx-lro"}},
		{"rxvlan", []string{"rx-vlan-hw-parse"}},
		{"txvlan", []string{"tx-vlan-hw-insert"}},
	}
}

// checkNICOffloads passes when sg, tso, gso, gro, lro, rxvlan and txvlan
// are off, or on only where the driver fixes them (which no command
// changes; the report names them).
func checkNICOffloads(h *host) verdict {
	if v, stop := h.nicProblem(); stop {
		return v
	}
	features, err := h.nic.Features(h.iface)
	if errors.Is(err, ErrNotSupported) {
		return verdict{status: Skip, found: fmt.Sprintf("%s: offload features not supported by driver", h.nicLabel())}
	}
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot read offload features: %v", err)}
	}
	var on, fixed, settings []string
	for _, o := range offloads() {
		changeable, stuck := false, false
		for _, name := range o.features {
			f, ok := features[name]
			if !ok || !f.Active {
				continue
			}
			if f.Fixed {
				stuck = true
			} else {
				changeable = true
			}
		}
		switch {
		case changeable:
			on = append(on, o.name)
			settings = append(settings, o.name+" off")
		case stuck:
			fixed = append(fixed, o.name)
		}
	}
	note := ""
	if len(fixed) > 0 {
		note = fmt.Sprintf(" (%s on, fixed by the driver)", strings.Join(fixed, " "))
	}
	if len(on) == 0 {
		return verdict{status: Pass, found: fmt.Sprintf("%s: sg, tso, gso, gro, lro, rxvlan and txvlan off%s", h.nicLabel(), note)}
	}
	return verdict{
		status: Warn,
		found:  fmt.Sprintf("%s: %s on%s", h.nicLabel(), strings.Join(on, ", "), note),
		fix:    fmt.Sprintf("sudo ethtool -K %s %s", h.iface, strings.Join(settings, " ")),
	}
}
