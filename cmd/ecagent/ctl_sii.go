package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

func siiCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "sii", help{
		usage: "read -p N [-o FILE] | write -p N FILE --write [--force]",
		about: "Dump a slave's whole SII EEPROM byte for byte (as many bytes as its header declares), or " +
			"write an image into it, like `ethercat sii_read` and `sii_write`.",
		groups: ctlGroups("output", "write", "force"),
		notes: "read writes the raw image to FILE, or to standard output without -o. write checks the " +
			"image first (whole words, configuration-area checksum, categories that parse) and refuses " +
			"an image of another vendor or product code than the slave's unless --force; it writes only " +
			"the words that differ, waiting for the EEPROM's write cycle, then makes the ESC reload its " +
			"configuration. A write is logged as a maintenance event with your uid. " + ctlNotes,
		examples: []string{
			"ecagent sii read -p 2 -o el2004.bin",
			"ecagent sii_write -p 2 el2004.bin --write",
		},
	})
	out := fs.StringP("output", "o", "", "read: write the image to `FILE` instead of standard output")
	write := fs.Bool("write", false, "confirm a write")
	force := fs.Bool("force", false, "write an image of another device (vendor or product code)")
	c := addCtlFlags(fs)
	pos, err := parseArgs(fs, args, 1, 3, "read -p N or write -p N FILE")
	if err != nil {
		return err
	}
	slave, pos, err := c.takeSlave(pos, 1)
	if err != nil {
		return err
	}
	switch {
	case pos[0] == "read" && len(pos) == 1:
		var res maintenance.SIIResult
		if err := c.call(ctx, e, "sii read", []maintenance.Request{{Op: maintenance.OpSIIRead, Slave: slave}}, &res); err != nil {
			return err
		}
		if *c.json {
			return c.print(e.stdout, &res, nil)
		}
		if c.at.simulated { // the image itself goes out unchanged
			fmt.Fprintln(e.stderr, simulatedLine)
		}
		if *out == "" {
			_, err := e.stdout.Write(res.Data)
			return err
		}
		if err := os.WriteFile(*out, res.Data, 0o644); err != nil {
			return fmt.Errorf("sii read: %w", err)
		}
		fmt.Fprintf(e.stderr, "slave %d: %d bytes written to %s\n", res.Slave, len(res.Data), *out)
		return nil
	case pos[0] == "write" && len(pos) == 2:
		if err := needWrite("sii write", *write); err != nil {
			return err
		}
		img, err := os.ReadFile(pos[1])
		if err != nil {
			return usageError{fmt.Errorf("sii write: %w", err)}
		}
		if _, err := maintenance.CheckImage(img); err != nil {
			return usageError{fmt.Errorf("sii write: %s: %w", pos[1], err)}
		}
		req := maintenance.Request{Op: maintenance.OpSIIWrite, Slave: slave, Data: img, Force: *force, Write: true}
		var res maintenance.SIIResult
		if err := c.call(ctx, e, "sii write", []maintenance.Request{req}, &res); err != nil {
			return err
		}
		return c.print(e.stdout, &res, func(w io.Writer) {
			fmt.Fprintf(w, "slave %d: SII written (%d words changed) and reloaded\n", res.Slave, res.Words)
		})
	}
	return usageError{errors.New("sii: want read -p N or write -p N FILE")}
}

func aliasCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "alias", help{
		usage: "-p N ALIAS --write",
		about: "Set a slave's configured station alias: SII word 4 and the configuration-area checksum " +
			"are written, then the ESC reloads them into register 0x0012, like `ethercat alias`.",
		groups: ctlGroups("write"),
		notes: "The alias stays in the EEPROM across power cycles. ALIAS is 0 to 65535 (decimal or 0x " +
			"hex); 0 clears it. Logged as a maintenance event with your uid. " + ctlNotes,
		examples: []string{
			"ecagent alias -p 3 100 --write",
			"ecagent alias -p 3 0 --write   # clear it",
		},
	})
	write := fs.Bool("write", false, "confirm the write")
	c := addCtlFlags(fs)
	pos, err := parseArgs(fs, args, 1, 2, "-p N ALIAS")
	if err != nil {
		return err
	}
	slave, pos, err := c.takeSlave(pos, 0)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want -p N ALIAS, got %q", strings.Join(fs.Args(), " "))}
	}
	alias, err := parseNumber("alias", pos[0], 16)
	if err != nil {
		return err
	}
	if err := needWrite("alias", *write); err != nil {
		return err
	}
	var res maintenance.AliasResult
	req := maintenance.Request{Op: maintenance.OpAlias, Slave: slave, Alias: uint16(alias), Write: true}
	if err := c.call(ctx, e, "alias", []maintenance.Request{req}, &res); err != nil {
		return err
	}
	return c.print(e.stdout, &res, func(w io.Writer) {
		fmt.Fprintf(w, "slave %d: station alias %d\n", res.Slave, res.Alias)
	})
}
