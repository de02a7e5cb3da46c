package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

// fromBus is what `ecagent config from-bus` reads from the segment.
type fromBus struct {
	Hello  maintenance.HelloResult  `json:"segment"`
	Slaves maintenance.SlavesResult `json:"slaves"`
	PDOs   maintenance.PDOsResult   `json:"pdos"`
}

// configFromBusCommand is `ecagent config from-bus`.
func configFromBusCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "config from-bus", help{
		usage: "[--iface IF | --cycle.shm PATH] [--json]",
		about: "Print a configuration snippet (YAML) for the segment as it is: bus.interface, or the " +
			"simulated devices (bus.devices), bus.expectedslaves and, for each slave whose PDO " +
			"assignment comes from its CoE objects or the configuration, bus.pdo with its PDOs and " +
			"mapped entries.",
		groups: ctlGroups(),
		notes: "Check the result with 'ecagent config check FILE' and keep the PDOs you want to pin. " +
			"On a segment opened here the command brings the bus up as the agent would. " + ctlNotes,
		examples: []string{"ecagent config from-bus --iface eth1 > bus.yaml && ecagent config check bus.yaml"},
	})
	c := addCtlFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	if err := c.wholeSegment("config from-bus"); err != nil {
		return err
	}
	c.bringUp = true
	var fb fromBus
	reqs := []maintenance.Request{{Op: maintenance.OpHello}, {Op: maintenance.OpSlaves}, {Op: maintenance.OpPDOs}}
	if err := c.call(ctx, e, "config from-bus", reqs, &fb.Hello, &fb.Slaves, &fb.PDOs); err != nil {
		return err
	}
	return c.print(e.stdout, &fb, func(w io.Writer) { writeBusYAML(w, fb) })
}

// writeBusYAML writes the bus section of a configuration file.
func writeBusYAML(w io.Writer, fb fromBus) {
	fmt.Fprintf(w, "# from the segment by 'ecagent config from-bus': %d slaves\n", len(fb.Slaves.Slaves))
	fmt.Fprintln(w, "bus:")
	if fb.Hello.Interface != "" {
		fmt.Fprintf(w, "  interface: %s\n", fb.Hello.Interface)
	} else {
		names := make([]string, len(fb.Slaves.Slaves))
		for i, s := range fb.Slaves.Slaves {
			names[i] = s.OrderCode
		}
		fmt.Fprintf(w, "  devices: [%s]\n", strings.Join(names, ", "))
	}
	fmt.Fprintf(w, "  expectedslaves: %d\n", len(fb.Slaves.Slaves))
	var pdo []maintenance.SlavePDOs
	for _, s := range fb.PDOs.Slaves {
		if s.Source == "coe" || s.Source == "config" {
			pdo = append(pdo, s)
		}
	}
	if len(pdo) == 0 {
		return
	}
	fmt.Fprintln(w, "  pdo:")
	for _, s := range pdo {
		fmt.Fprintf(w, "    - slave: %d  # %s\n", s.Position, s.Name)
		writePDOList(w, "rxpdos", s.RxPDOs)
		writePDOList(w, "txpdos", s.TxPDOs)
	}
}

// writePDOList writes rxpdos or txpdos of one bus.pdo item.
func writePDOList(w io.Writer, key string, pdos []maintenance.PDOInfo) {
	if len(pdos) == 0 {
		return
	}
	fmt.Fprintf(w, "      %s:\n", key)
	for _, p := range pdos {
		entries := make([]string, len(p.Entries))
		for i, en := range p.Entries {
			entries[i] = fmt.Sprintf(`"0x%04x:%02x/%d"`, en.Index, en.SubIndex, en.Bits)
		}
		fmt.Fprintf(w, "        - index: 0x%04x\n          entries: [%s]\n", p.Index, strings.Join(entries, ", "))
	}
}
