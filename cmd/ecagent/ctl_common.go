package main

import (
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
)

// ctlFlags are the flags of the maintenance commands (slaves, reg, states,
// crc, sii, alias, master): where the segment is, and how to print.
type ctlFlags struct {
	bus  busFlags
	shm  *string
	json *bool
	// bringUp makes a segment opened here go through the agent's
	// bring-up (PDO configuration, image mapping) before the requests.
	bringUp bool
}

func addCtlFlags(fs *pflag.FlagSet) ctlFlags {
	return ctlFlags{
		bus:  addBusFlags(fs),
		shm:  fs.String("cycle.shm", contract.DefaultSHM, "shared-memory `path` of a running agent; its socket is PATH.d/ctl"),
		json: fs.Bool("json", false, "print the result as JSON"),
	}
}

// ctlGroups are the help's groups of the common flags.
func ctlGroups(own ...string) []flagGroup {
	return []flagGroup{
		{title: "Flags", flags: append(own, "json")},
		{title: "Segment (a running agent's socket first, else opened here)",
			flags: []string{"cycle.shm", "iface", "devices", "timeout", "log.level"}},
	}
}

// ctlNotes is the paragraph every maintenance command's help ends with.
const ctlNotes = "When an agent runs on the segment (its socket PATH.d/ctl of --cycle.shm answers) the request " +
	"goes to its cycle process, which carries it in its frames; else the command opens --iface (or " +
	"the built-in simulated segment) itself. SLAVE is the ring position (0 first)."

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
	cl, ok, err := c.agent(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if ok {
		defer cl.Close()
		return callAll(cmd, reqs, res, after, func(req maintenance.Request) (json.RawMessage, error) { return cl.Call(ctx, req) })
	}
	m, _, closeBus, err := c.bus.scanBus(ctx, e, 0)
	if err != nil {
		return wrapUnlessUsage(cmd, err)
	}
	defer closeBus()
	if c.bringUp {
		if err := m.BringUp(ctx); err != nil {
			return fmt.Errorf("%s: bring-up: %w", cmd, err)
		}
	}
	h := maintenance.NewHandler(m, *c.bus.iface, nil)
	return callAll(cmd, reqs, res, after, func(req maintenance.Request) (json.RawMessage, error) { return h.Call(ctx, req, os.Getuid()) })
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

// agent connects to the control socket of a running agent on the segment
// of the flags. ok is false when no agent serves it (no socket, or one
// nobody listens on) or the agent serves another interface: the command
// may then open the segment itself. An agent that is there but does not
// answer is an error: opening its segment beside it would disturb it. So
// is a socket the client does not trust (another user's, see
// maintenance.Dial): its answers would be forged, and the agent it stands in
// for may be running.
func (c ctlFlags) agent(ctx context.Context) (cl *maintenance.Client, ok bool, err error) {
	path := maintenance.SocketPath(*c.shm)
	cl, err = maintenance.Dial(ctx, *c.shm)
	if errors.Is(err, maintenance.ErrNotServed) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("the maintenance socket of %s: %w", *c.shm, err)
	}
	hctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	raw, err := cl.Call(hctx, maintenance.Request{Op: maintenance.OpHello})
	var hello maintenance.HelloResult
	if err == nil {
		err = json.Unmarshal(raw, &hello)
	}
	if err != nil {
		_ = cl.Close()
		return nil, false, fmt.Errorf("the agent's control socket %s does not answer: %w", path, err)
	}
	if hello.Interface != *c.bus.iface {
		_ = cl.Close()
		return nil, false, nil
	}
	return cl, true, nil
}

// helloTimeout bounds the wait for a running agent's first answer.
const helloTimeout = 10 * time.Second

// print writes res as JSON with --json, else with text.
func (c ctlFlags) print(w io.Writer, res any, text func(io.Writer)) error {
	if *c.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		return nil
	}
	text(w)
	return nil
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
