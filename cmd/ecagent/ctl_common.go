package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/ethercat/esc"
)

// ctlFlags are the flags of the maintenance commands: which segment, and
// how to print.
type ctlFlags struct {
	seg  segmentFlags
	sel  slaveSelector
	json *bool
	// bringUp makes a segment opened here go through the agent's
	// bring-up (PDO configuration, image mapping) before the requests.
	bringUp bool
	// preop takes the slaves of a segment opened here to PREOP, where
	// their mailboxes run (under the agent they are in OP).
	preop bool
	// at is where the requests went, once open found out.
	at *reached
}

// reached is the segment a command reached.
type reached struct {
	// agent is set when the requests go through a running agent.
	agent bool
	// simulated is set when the segment is the built-in simulator's
	// (--sim, or an agent that runs it).
	simulated bool
}

func addCtlFlags(fs *pflag.FlagSet) ctlFlags {
	return ctlFlags{
		sel:  addSlaveSelector(fs),
		seg:  addSegmentFlags(fs),
		json: fs.Bool("json", false, "print the result as JSON"),
		at:   &reached{},
	}
}

// ctlGroups are the help's groups of the common flags.
func ctlGroups(own ...string) []flagGroup {
	return []flagGroup{
		{title: "Flags", flags: append(append([]string{"position", "alias"}, own...), "json")},
		{title: "Segment (the running agent's, else --iface or --sim)", flags: segmentFlagNames},
	}
}

// ctlNotes is the paragraph every maintenance command's help ends with.
const ctlNotes = "It goes through the running agent, found as the agent finds its segment " +
	"(--cycle.shm, ECAGENT_CYCLE_SHM, --config, else " + contract.DefaultSHM + "); --iface opens an " +
	"interface no agent drives, --sim the simulator (docs/toolbox.md)."

// slaveSelector is IgH's way of naming a slave: -p/--position N (the ring
// position), or -a/--alias ALIAS[:OFFSET] (the slave with that station
// alias, or the OFFSET-th after it; -p with -a is the offset).
type slaveSelector struct {
	position *int
	alias    *string
	// resolved is the ring position the selector named, once resolve ran
	// (-1 when none was given).
	resolved *int
}

// selectedSlave in a Request's Slave stands for the slave of the
// selector, which resolve fills in.
const selectedSlave = -2

func addSlaveSelector(fs *pflag.FlagSet) slaveSelector {
	return slaveSelector{
		position: fs.IntP("position", "p", -1, "the slave at ring `N` (0 first); with -a, the offset"),
		alias:    fs.StringP("alias", "a", "", "the slave with station alias `A[:OFF]`, or OFF after it"),
		resolved: new(int),
	}
}

// given reports whether -p or -a names a slave.
func (s slaveSelector) given() bool { return *s.position >= 0 || *s.alias != "" }

// takeSlave returns the slave the command line names: the selector's, or
// else args[at], a ring position (SLAVE, the older form), which it takes
// out of args.
func (c ctlFlags) takeSlave(args []string, at int) (int, []string, error) {
	if c.sel.given() {
		return selectedSlave, args, nil
	}
	if at >= len(args) {
		return 0, nil, usageError{errors.New("name the slave: -p N (ring position) or -a ALIAS[:OFFSET]")}
	}
	n, err := parseSlave(args[at])
	if err != nil {
		return 0, nil, err
	}
	return n, append(append([]string(nil), args[:at]...), args[at+1:]...), nil
}

// oneSlave parses the command line of a command that names one slave and
// nothing else (-p N, -a ALIAS[:OFFSET] or the older SLAVE) and returns
// the slave, as takeSlave does.
func (c ctlFlags) oneSlave(fs *pflag.FlagSet, args []string) (int, error) {
	pos, err := parseArgs(fs, args, 0, 1, "-p N")
	if err != nil {
		return 0, err
	}
	slave, _, err := c.takeSlave(pos, 0)
	return slave, err
}

// resolve puts the selector's ring position into the requests that stand
// for it, asking the segment for its slaves when -a names one by alias.
func (c ctlFlags) resolve(ctx context.Context, cmd string, s *session, reqs []maintenance.Request) error {
	*c.sel.resolved = -1
	if !c.sel.given() {
		return nil
	}
	pos := *c.sel.position
	if *c.sel.alias != "" {
		a, off, hasOff := strings.Cut(*c.sel.alias, ":")
		alias, err := strconv.ParseUint(a, 0, 16)
		if err != nil {
			return usageError{fmt.Errorf("-a %q: want ALIAS[:OFFSET], ALIAS 0 (the first slave) to 65535", *c.sel.alias)}
		}
		offset := max(pos, 0)
		if hasOff {
			o, err := strconv.ParseUint(off, 10, 16)
			if err != nil {
				return usageError{fmt.Errorf("-a %q: OFFSET %q is not a number", *c.sel.alias, off)}
			}
			offset = int(o)
		}
		raw, err := s.call(ctx, maintenance.Request{Op: maintenance.OpSlaves}, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		var list maintenance.SlavesResult
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("%s: decode result: %w", cmd, err)
		}
		pos = -1
		for i, sl := range list.Slaves {
			// Alias 0 counts from the first slave, as IgH's tool does.
			if alias == 0 || sl.Alias == uint16(alias) {
				pos = i + offset
				break
			}
		}
		switch {
		case pos < 0:
			return fmt.Errorf("%s: no slave has station alias %d", cmd, alias)
		case pos >= len(list.Slaves):
			return fmt.Errorf("%s: alias %d offset %d is past the last slave (%d slaves)", cmd, alias, offset, len(list.Slaves))
		}
	}
	*c.sel.resolved = pos
	for i := range reqs {
		if reqs[i].Slave == selectedSlave {
			reqs[i].Slave = pos
		}
	}
	return nil
}

// wholeSegment refuses -p and -a for a command about the whole segment.
func (c ctlFlags) wholeSegment(cmd string) error {
	if c.sel.given() {
		return usageError{fmt.Errorf("%s shows the whole segment: -p and -a name no slave here", cmd)}
	}
	return nil
}

// selected reports whether position is one the selector lets through:
// every one without -p or -a.
func (c ctlFlags) selected(position int) bool {
	return *c.sel.resolved < 0 || position == *c.sel.resolved
}

// session is an open way to the segment: a running agent's maintenance
// socket, or a segment opened here with the same Handler.
type session struct {
	call  func(ctx context.Context, req maintenance.Request, progress func(done, total int)) (json.RawMessage, error)
	close func()
}

// open reaches the segment the flags name (see segmentFlags.open) and
// records where in c.at.
func (c ctlFlags) open(ctx context.Context, e *env, cmd string) (*session, error) {
	t, err := c.seg.open(ctx, e)
	if err != nil {
		return nil, wrapUnlessUsage(cmd, err)
	}
	*c.at = reached{agent: t.client != nil, simulated: t.simulated}
	if t.client != nil {
		cl := t.client
		return &session{
			call: func(ctx context.Context, req maintenance.Request, progress func(done, total int)) (json.RawMessage, error) {
				if progress != nil {
					return cl.CallProgress(ctx, req, progress)
				}
				return cl.Call(ctx, req)
			},
			close: func() { _ = cl.Close() },
		}, nil
	}
	m, _, closeBus, err := t.scan(ctx, e, 0)
	if err != nil {
		return nil, wrapUnlessUsage(cmd, err)
	}
	if c.bringUp {
		if err := m.BringUp(ctx); err != nil {
			closeBus()
			return nil, fmt.Errorf("%s: bring-up: %w", cmd, err)
		}
	}
	if c.preop && !c.bringUp {
		if err := m.RequestState(ctx, esc.StatePreOp); err != nil {
			closeBus()
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
	}
	h := maintenance.NewHandler(m, t.iface, nil)
	return &session{
		call: func(ctx context.Context, req maintenance.Request, progress func(done, total int)) (json.RawMessage, error) {
			if progress != nil {
				ctx = maintenance.WithProgress(ctx, progress)
			}
			return h.Call(ctx, req, os.Getuid())
		},
		close: closeBus,
	}, nil
}

// call runs req on the segment the flags name and decodes its result into
// res: through a running agent's control socket when one answers for
// that segment, else on a master brought up here with the same handler.
func (c ctlFlags) call(ctx context.Context, e *env, cmd string, reqs []maintenance.Request, res ...any) error {
	return c.callEach(ctx, e, cmd, reqs, res, nil)
}

// callEach is call with after, when not nil, called after each request
// with its index.
func (c ctlFlags) callEach(ctx context.Context, e *env, cmd string, reqs []maintenance.Request, res []any, after func(int)) error {
	if len(reqs) != len(res) {
		panic("ctlFlags.call: one result per request")
	}
	if after == nil {
		after = func(int) {}
	}
	s, err := c.open(ctx, e, cmd)
	if err != nil {
		return err
	}
	defer s.close()
	if err := c.resolve(ctx, cmd, s, reqs); err != nil {
		return err
	}
	return callAll(cmd, reqs, res, after, func(req maintenance.Request) (json.RawMessage, error) { return s.call(ctx, req, nil) })
}

// callAll makes each request with call, decodes its answer into res and
// calls after with its index; it stops at the first error.
func callAll(cmd string, reqs []maintenance.Request, res []any, after func(int), call func(maintenance.Request) (json.RawMessage, error)) error {
	for i, req := range reqs {
		raw, err := call(req)
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		if err := json.Unmarshal(raw, res[i]); err != nil {
			return fmt.Errorf("%s: decode result: %w", cmd, err)
		}
		after(i)
	}
	return nil
}

// helloTimeout bounds the wait for a running agent's first answer.
const helloTimeout = 10 * time.Second

// print writes res as JSON with --json, else with text. On a simulated
// segment the JSON object gets "simulated": true and the text a first
// line saying so: no output passes a simulator off as a bus.
func (c ctlFlags) print(w io.Writer, res any, text func(io.Writer)) error {
	if *c.json {
		b, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		if c.at.simulated && len(b) > 1 && b[0] == '{' {
			sep := ","
			if b[1] == '}' {
				sep = ""
			}
			b = append([]byte(`{"simulated":true`+sep), b[1:]...)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		out.WriteByte('\n')
		_, err = w.Write(out.Bytes())
		return err
	}
	if text == nil {
		return nil
	}
	c.simulatedHeader(w)
	text(w)
	return nil
}

// simulatedLine heads the text output of a simulated segment.
const simulatedLine = "# simulated segment (the built-in simulator): no real slaves"

// simulatedHeader writes the line that says the segment is simulated, as a
// comment of the shells, YAML and Graphviz ("# …"), when it is.
func (c ctlFlags) simulatedHeader(w io.Writer) {
	if c.at.simulated {
		fmt.Fprintln(w, simulatedLine)
	}
}

// parseSlave parses a SLAVE argument: a ring position.
func parseSlave(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, usageError{fmt.Errorf("slave %q: want a ring position (0, 1, …)", s)}
	}
	return n, nil
}

// parseNumber parses a decimal or 0x-prefixed hex number of at most bits bits.
func parseNumber(what, s string, bits int) (uint64, error) {
	v, err := strconv.ParseUint(s, 0, bits)
	if err != nil {
		return 0, usageError{fmt.Errorf("%s %q: want a number (decimal or 0x hex) of at most %d bits", what, s, bits)}
	}
	return v, nil
}

// needWrite refuses a change without --write.
func needWrite(cmd string, write bool) error {
	if !write {
		return usageError{errors.New(cmd + " changes the slave: add --write to confirm")}
	}
	return nil
}

// yesNo prints a bool as the tables do.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// args parses the flags and returns the positional arguments, checking
// their count.
func parseArgs(fs *pflag.FlagSet, args []string, min, max int, usage string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if n := fs.NArg(); n < min || n > max {
		return nil, usageError{fmt.Errorf("want %s, got %q", usage, strings.Join(fs.Args(), " "))}
	}
	return fs.Args(), nil
}

// readTwice sends req, and again interval later when interval > 0 (on
// one connection, the wait the client's), decoding the answers into first
// and second; it returns the time between the two reads. It is how crc and
// master show the growth of their counters.
func (c ctlFlags) readTwice(ctx context.Context, e *env, cmd string, req maintenance.Request, interval time.Duration, first, second any) (time.Duration, error) {
	reqs, res := []maintenance.Request{req}, []any{first}
	if interval > 0 {
		reqs, res = append(reqs, req), append(res, second)
	}
	var took time.Duration
	err := c.callEach(ctx, e, cmd, reqs, res, func(i int) {
		if i == 0 && interval > 0 {
			start := time.Now()
			select {
			case <-time.After(interval):
			case <-ctx.Done():
			}
			took = time.Since(start)
		}
	})
	return took, err
}
