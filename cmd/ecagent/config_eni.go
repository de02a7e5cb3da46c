package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/eniconfig"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/sim"
)

// configFromENICommand is `ecagent config from-eni FILE`: the configuration
// an ENI gives, as bus.eni would apply it.
func configFromENICommand(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "config from-eni", help{
		usage: "FILE [--json]",
		about: "Print the configuration an ENI (ETG.2100 EtherCAT network information, exported by TwinCAT " +
			"or EC-Engineer) gives: the slaves the segment must hold with their startup commands (bus.slaves), " +
			"distributed clocks (bus.dc), cycle.period, and the process-image variables' names for MQTT " +
			"(mqtt.slaves, mqtt.signals). What the file holds that ecagent does its own way or not at all " +
			"is listed as comments (on stderr with --json).",
		notes: "bus.eni: FILE in the configuration applies the same at every start; this command shows what it " +
			"takes. The output is a configuration file: check it with 'ecagent config check'. docs/eni-esi.md " +
			"says what is honoured and what is explained.",
		examples: []string{
			"ecagent config from-eni line3.xml > line3.yaml && ecagent config check line3.yaml",
			"ecagent config from-eni line3.xml --json | jq '.bus.slaves[].name'",
		},
	})
	asJSON := fs.Bool("json", false, "print the configuration as JSON, the notes on stderr")
	rest, err := parseArgs(fs, args, 1, 1, "one ENI FILE")
	if err != nil {
		return err
	}
	_, r, err := eniconfig.Read(rest[0])
	if err != nil {
		return fmt.Errorf("config from-eni: %w", err)
	}
	doc := eniDocument(r)
	if *asJSON {
		for _, n := range r.Notes {
			fmt.Fprintln(e.stderr, "not taken:", n)
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return writeENIYAML(e.stdout, rest[0], doc, r.Notes)
}

// The configuration from-eni prints, in the keys and forms the
// configuration file takes (agent/config): durations as text.
type (
	eniDoc struct {
		Bus   eniBus    `json:"bus" yaml:"bus"`
		Cycle *eniCycle `json:"cycle,omitempty" yaml:"cycle,omitempty"`
		MQTT  *eniMQTT  `json:"mqtt,omitempty" yaml:"mqtt,omitempty"`
	}
	eniBus struct {
		DC     *eniDC     `json:"dc,omitempty" yaml:"dc,omitempty"`
		Slaves []eniSlave `json:"slaves" yaml:"slaves"`
	}
	eniDC struct {
		Enabled    bool   `json:"enabled" yaml:"enabled"`
		Sync0Shift string `json:"sync0shift" yaml:"sync0shift"`
		Sync1      string `json:"sync1" yaml:"sync1"`
	}
	eniCycle struct {
		Period string `json:"period" yaml:"period"`
	}
	eniMQTT struct {
		Slaves  []string `json:"slaves,omitempty" yaml:"slaves,omitempty"`
		Signals []string `json:"signals,omitempty" yaml:"signals,omitempty"`
	}
	eniSlave struct {
		Slave          int          `json:"slave" yaml:"slave"`
		Name           string       `json:"name" yaml:"name"`
		Identity       string       `json:"identity" yaml:"identity"`
		RevisionPolicy string       `json:"revisionpolicy" yaml:"revisionpolicy"`
		Alias          uint16       `json:"alias,omitempty" yaml:"alias,omitempty"`
		PreviousPort   string       `json:"previousport,omitempty" yaml:"previousport,omitempty"`
		OutputBits     int          `json:"outputbits" yaml:"outputbits"`
		InputBits      int          `json:"inputbits" yaml:"inputbits"`
		SDOs           []eniSDO     `json:"sdos,omitempty" yaml:"sdos,omitempty"`
		InitCmds       []eniInitCmd `json:"initcmds,omitempty" yaml:"initcmds,omitempty"`
	}
	eniSDO struct {
		Transition string `json:"transition" yaml:"transition"`
		Object     string `json:"object" yaml:"object"`
		Data       string `json:"data" yaml:"data"`
		Complete   bool   `json:"complete,omitempty" yaml:"complete,omitempty"`
		Timeout    string `json:"timeout,omitempty" yaml:"timeout,omitempty"`
		Comment    string `json:"comment,omitempty" yaml:"comment,omitempty"`
	}
	eniInitCmd struct {
		Transition   string `json:"transition" yaml:"transition"`
		Cmd          string `json:"cmd" yaml:"cmd"`
		Ado          string `json:"ado" yaml:"ado"`
		Data         string `json:"data" yaml:"data"`
		WKC          int    `json:"wkc,omitempty" yaml:"wkc,omitempty"`
		Retries      int    `json:"retries,omitempty" yaml:"retries,omitempty"`
		Timeout      string `json:"timeout,omitempty" yaml:"timeout,omitempty"`
		Validate     string `json:"validate,omitempty" yaml:"validate,omitempty"`
		ValidateMask string `json:"validatemask,omitempty" yaml:"validatemask,omitempty"`
		Comment      string `json:"comment,omitempty" yaml:"comment,omitempty"`
	}
)

// eniDocument is the configuration r gives.
func eniDocument(r eniconfig.Result) eniDoc {
	dur := func(d time.Duration) string {
		if d == 0 {
			return ""
		}
		return d.String()
	}
	var doc eniDoc
	for _, s := range r.Slaves {
		es := eniSlave{Slave: s.Slave, Name: s.Name, Identity: s.Identity, RevisionPolicy: s.RevisionPolicy,
			Alias: s.Alias, PreviousPort: s.PreviousPort, OutputBits: s.OutputBits, InputBits: s.InputBits}
		for _, c := range s.SDOs {
			es.SDOs = append(es.SDOs, eniSDO{Transition: c.Transition, Object: c.Object, Data: c.Data, Complete: c.Complete,
				Timeout: dur(time.Duration(c.Timeout)), Comment: c.Comment})
		}
		for _, c := range s.InitCmds {
			es.InitCmds = append(es.InitCmds, eniInitCmd{Transition: c.Transition, Cmd: c.Cmd, Ado: fmt.Sprintf("0x%04x", c.Ado),
				Data: c.Data, WKC: c.WKC, Retries: c.Retries, Timeout: dur(time.Duration(c.Timeout)), Validate: c.Validate,
				ValidateMask: c.ValidateMask, Comment: c.Comment})
		}
		doc.Bus.Slaves = append(doc.Bus.Slaves, es)
	}
	if r.DCEnabled {
		doc.Bus.DC = &eniDC{Enabled: true, Sync0Shift: r.DC.Sync0Shift.String(), Sync1: r.DC.Sync1.String()}
	}
	if r.Period > 0 {
		doc.Cycle = &eniCycle{Period: r.Period.String()}
	}
	if len(r.MQTTSlaves)+len(r.MQTTSignals) > 0 {
		doc.MQTT = &eniMQTT{Slaves: r.MQTTSlaves, Signals: r.MQTTSignals}
	}
	return doc
}

// writeENIYAML writes doc as a configuration file, the notes as comments
// at its head.
func writeENIYAML(w io.Writer, file string, doc eniDoc, notes []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# from %s by 'ecagent config from-eni' (or set bus.eni: %s)\n", file, file)
	b.WriteString("# bus.interface is not in an ENI: set it (or run against the simulated segment)\n")
	if len(notes) > 0 {
		b.WriteString("#\n# not taken from the ENI:\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "#  - %s\n", n)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	enc := yamlv3.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("config from-eni: %w", err)
	}
	return enc.Close()
}

// applyENI is the agent's bus.eni: it applies the ENI to the
// configuration being loaded (config.Sources.ENI).
func applyENI(cfg *config.Config) error {
	err := eniconfig.Apply(cfg)
	if err == nil && cfg.Simulated() && slices.Equal(cfg.Bus.Devices, config.ReferenceDevices()) {
		// No segment named and the simulated one at its default: the
		// simulator runs the ENI's devices when it has a model of each.
		if devices := simulatedDevices(cfg.Bus.Slaves); devices != nil {
			cfg.Bus.Devices = devices
		}
	}
	var parse interface{ Unwrap() []error }
	if errors.As(err, &parse) {
		// Every problem of the file on a line of its own.
		lines := make([]string, 0, len(parse.Unwrap()))
		for _, e := range parse.Unwrap() {
			lines = append(lines, e.Error())
		}
		return errors.New(strings.Join(lines, "\n  "))
	}
	return err
}

// logENINotes logs, at start, what the ENI bus.eni names holds that is
// not taken (the same notes as ecagent config from-eni).
func logENINotes(cfg config.Config, log *slog.Logger) {
	if cfg.Bus.ENI == "" {
		return
	}
	_, r, err := eniconfig.Read(cfg.Bus.ENI)
	if err != nil {
		return // the load has read it: it changed since
	}
	log.Info("running from an ENI", "file", cfg.Bus.ENI, "slaves", len(r.Slaves), "named_variables", len(r.Variables))
	if cfg.Simulated() && slices.Equal(cfg.Bus.Devices, simulatedDevices(cfg.Bus.Slaves)) {
		log.Info("ENI: the simulated segment is made of its devices (bus.interface empty, bus.devices at its default)",
			"devices", strings.Join(cfg.Bus.Devices, ","))
	}
	for _, n := range r.Notes {
		log.Info("ENI: not taken", "what", n)
	}
}

// simulatedDevices returns the simulator's models of the configured
// slaves, by identity (vendor, product code and revision); nil when the
// simulator has no model of one of them.
func simulatedDevices(slaves []contract.Slave) []string {
	if len(slaves) == 0 {
		return nil
	}
	byIdentity := map[[3]uint32]string{}
	for _, name := range sim.Models() {
		devs, err := sim.ParseDevices([]string{name})
		if err != nil || len(devs) != 1 {
			continue
		}
		id := devs[0].Identity()
		key := [3]uint32{id.VendorID, id.ProductCode, id.RevisionNumber}
		if _, seen := byIdentity[key]; !seen {
			byIdentity[key] = name
		}
	}
	out := make([]string, 0, len(slaves))
	for _, s := range slaves {
		v, p, r, err := contract.ParseIdentity(s.Identity)
		name, ok := byIdentity[[3]uint32{v, p, r}]
		if err != nil || !ok {
			return nil
		}
		out = append(out, name)
	}
	return out
}
