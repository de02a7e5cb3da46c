package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

func foeCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "foe", help{
		usage: "write -p N FILE --write [--name NAME] | read -p N NAME [-o FILE]",
		about: "Write a file (a drive's firmware) to a slave over FoE, or read one back, like `ethercat " +
			"foe_write` and `foe_read`: the slave goes to BOOT, the file through its bootstrap mailbox, " +
			"and the slave back to INIT.",
		groups: ctlGroups("name", "password", "output", "write"),
		notes: "Progress goes to standard error. An FoE error of the slave's is printed with its code, " +
			"exit 1, the slave back in INIT. The agent's recovery takes the slave back to OP; both " +
			"transfers are maintenance-state events with your uid. A slave whose SII has no bootstrap " +
			"mailbox is refused before it leaves its state. " + ctlNotes,
		examples: []string{
			"ecagent foe write -p 1 AKD-M_01-13-00-003.i00 --write",
			"ecagent foe_read -p 1 AKD-M_01-13-00-003.i00 -o back.i00",
		},
	})
	name := fs.String("name", "", "write: the file's `NAME` on the slave (default: FILE's base name)")
	password := fs.String("password", "0", "FoE password, 32 bits as `HEX` (0: none)")
	out := fs.StringP("output", "o", "", "read: write the file to `FILE` instead of standard output")
	write := fs.Bool("write", false, "confirm a write")
	c := addCtlFlags(fs)
	pos, err := parseArgs(fs, args, 2, 3, "write -p N FILE or read -p N NAME")
	if err != nil {
		return err
	}
	slave, pos, err := c.takeSlave(pos, 1)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{fmt.Errorf("want write -p N FILE or read -p N NAME, got %q", strings.Join(fs.Args(), " "))}
	}
	pw, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(*password), "0x"), 16, 32)
	if err != nil {
		return usageError{fmt.Errorf("foe: password %q: want up to 8 hex digits", *password)}
	}
	switch pos[0] {
	case "write":
		if err := needWrite("foe write", *write); err != nil {
			return err
		}
		data, err := os.ReadFile(pos[1])
		if err != nil {
			return usageError{fmt.Errorf("foe write: %w", err)}
		}
		if *name == "" {
			*name = filepath.Base(pos[1])
		}
		req := maintenance.Request{Op: maintenance.OpFoEWrite, Slave: slave, Name: *name, Password: uint32(pw), Data: data, Write: true}
		res, agent, err := c.foe(ctx, e, "foe write", req, newProgress(e.stderr, "foe write"))
		if err != nil {
			return c.foeFailed(e, req, err)
		}
		return c.print(e.stdout, res, func(w io.Writer) {
			fmt.Fprintf(w, "slave %d: wrote %d bytes as %q in %s; %s\n", res.Slave, res.Bytes, res.Name,
				formatSeconds(res.Seconds), leftBoot(res.State, agent))
		})
	case "read":
		req := maintenance.Request{Op: maintenance.OpFoERead, Slave: slave, Name: pos[1], Password: uint32(pw)}
		return c.foeRead(ctx, e, req, *out)
	}
	return usageError{errors.New("foe: want write SLAVE FILE or read SLAVE NAME")}
}

// foeRead reads a file from a slave and writes it to out, or to standard
// output when out is empty.
func (c ctlFlags) foeRead(ctx context.Context, e *env, req maintenance.Request, out string) error {
	res, agent, err := c.foe(ctx, e, "foe read", req, nil)
	if err != nil {
		return c.foeFailed(e, req, err)
	}
	if out != "" {
		if err := os.WriteFile(out, res.Data, 0o644); err != nil {
			return fmt.Errorf("foe read: %w", err)
		}
	}
	if *c.json {
		if out != "" {
			res.Data = nil
		}
		return c.print(e.stdout, res, nil)
	}
	dest := out
	if out == "" {
		if _, err := e.stdout.Write(res.Data); err != nil {
			return fmt.Errorf("foe read: %w", err)
		}
		dest = "standard output"
	}
	fmt.Fprintf(e.stderr, "slave %d: read %d bytes of %q to %s in %s; %s\n", res.Slave, res.Bytes, res.Name,
		dest, formatSeconds(res.Seconds), leftBoot(res.State, agent))
	return nil
}

// foe runs an FoE request with progress as call does: through a running
// agent, else on a segment opened here. agent reports which.
func (c ctlFlags) foe(ctx context.Context, e *env, cmd string, req maintenance.Request, progress func(done, total int)) (res *maintenance.FoEResult, agent bool, err error) {
	sess, err := c.open(ctx, e, cmd)
	if err != nil {
		return nil, false, err
	}
	defer sess.close()
	agent = c.at.agent
	reqs := []maintenance.Request{req}
	if err := c.resolve(ctx, cmd, sess, reqs); err != nil {
		return nil, agent, err
	}
	raw, err := sess.call(ctx, reqs[0], progress)
	if err != nil {
		return nil, agent, fmt.Errorf("%s: %w", cmd, err)
	}
	res = &maintenance.FoEResult{}
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, agent, fmt.Errorf("%s: decode result: %w", cmd, err)
	}
	return res, agent, nil
}

// foeFailure is the JSON of a failed transfer.
type foeFailure struct {
	Slave int                   `json:"slave"`
	Name  string                `json:"name"`
	Error string                `json:"error"`
	FoE   *maintenance.FoEError `json:"foe,omitempty"`
}

// foeFailed returns err, printing it as JSON first with --json.
func (c ctlFlags) foeFailed(e *env, req maintenance.Request, err error) error {
	if *c.json {
		f := foeFailure{Slave: req.Slave, Name: req.Name, Error: err.Error()}
		if code, meaning, ok := maintenance.FoECode(err); ok {
			f.FoE = &maintenance.FoEError{Code: code, Meaning: meaning}
		}
		if perr := c.print(e.stdout, &f, nil); perr != nil {
			return errors.Join(err, perr)
		}
	}
	return err
}

// leftBoot says where the slave is after a transfer.
func leftBoot(state string, agent bool) string {
	if agent {
		return "the slave left BOOT for " + state + "; the agent takes it back to OP"
	}
	return "the slave left BOOT for " + state
}

// formatSeconds prints a transfer's duration.
func formatSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

// newProgress returns the progress callback of a transfer on w: a line
// every tenth of the file, or one bar redrawn with \r when w is a
// terminal.
func newProgress(w io.Writer, what string) func(done, total int) {
	tty := isTerminal(w)
	last := -1
	return func(done, total int) {
		pct := 100
		if total > 0 {
			pct = done * 100 / total
		}
		if tty {
			const width = 30
			bar := strings.Repeat("#", pct*width/100) + strings.Repeat(".", width-pct*width/100)
			fmt.Fprintf(w, "\r%s [%s] %3d %% %d/%d bytes", what, bar, pct, done, total)
			if done >= total {
				fmt.Fprintln(w)
			}
			return
		}
		if pct/10 == last/10 && done < total {
			return
		}
		last = pct
		fmt.Fprintf(w, "%s: %3d %% %d/%d bytes\n", what, pct, done, total)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
