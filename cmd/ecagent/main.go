// Command ecagent runs an EtherCAT master's real-time cycle on an edge host,
// measures every cycle and makes it visible. With no configuration,
// `ecagent run` brings up a built-in simulated segment, so one command shows
// everything on a laptop.
//
// Subcommands:
//
//	run      bring the bus to OP and cycle (the agent)
//	scan     list the slaves of a segment, like `ethercat slaves`
//	sim      serve a simulated segment on a network interface
//	bench    run the cycle for N cycles and report jitter, latency and load
//	rtcheck  check this host's real-time tuning and say how to fix it
//	spikes   list the running agent's late cycles, each with what delayed it
//	config   print the configuration schema (config schema), check a file (config check)
//	sdo      read or write a CoE object of a slave (SDO upload/download)
//	slaves, reg, states, crc, sii, alias, foe, master, graph, pdos, domains, data
//	         the maintenance toolbox of IgH's ethercat tool (docs/toolbox.md),
//	         through a running agent's cycle process or on the segment itself
//	version  print the version and build information
//
// Exit codes: 0 success, 1 runtime failure (link, bus, I/O), 2 usage or
// configuration error, 3 the segment is not as configured (slave count,
// a slave refusing a state), 4 the interface is driven by another master
// (a maintenance command refused to open it beside the agent), 130
// interrupted before the work was done.
// `ecagent run` does not exit for its bus: a segment absent, silent or
// not as configured is tried again without end (docs/operations.md). It
// has no end of its own: SIGINT (Ctrl-C) stops it with 130,
// SIGTERM, how systemd and Kubernetes stop a service, with 0 (a clean
// stop, not a failure of the unit).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle/process"
)

// Exit codes (package contract); documented in the package comment and
// the README.
const (
	exitOK          = contract.ExitOK
	exitFailure     = contract.ExitFailure
	exitUsage       = contract.ExitUsage
	exitBusMismatch = contract.ExitBusMismatch
	exitInUse       = contract.ExitInUse
	exitInterrupted = contract.ExitInterrupted
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a subcommand gets from main: its streams and a way to make
// loggers, so tests can run commands in-process.
type env struct {
	stdout, stderr io.Writer
	environ        []string
	// flagSets, when set, is called with every flag set a command makes,
	// so that tests can compare a command's --help with its flags.
	flagSets func(*pflag.FlagSet)
}

func commands() []command {
	return []command{
		{name: "run", summary: "bring the bus to OP and run the cycle (the agent)", run: runCommand},
		{name: "scan", summary: "the slave table, with --sdo the object dictionaries", run: scanCommand},
		{name: "sdo", summary: "read or write a CoE object (SDO) of a slave", run: sdoCommand},
		{name: "sdos", summary: "list a slave's CoE object dictionary (SDO information)", run: sdosCommand},
		{name: "slaves", summary: "the slaves with live state and identity (ethercat slaves)", run: slavesCommand},
		{name: "reg", summary: "read or write ESC registers of a slave by address", run: regCommand},
		{name: "states", summary: "request an AL state of one slave or all (needs --write)", run: statesCommand},
		{name: "diag", summary: "one slave's AL code, ports, counters, watchdogs, SMs, FMMUs", run: diagCommand},
		{name: "xml", summary: "an ESI-shaped description of a slave from its SII and dictionary", run: xmlCommand},
		{name: "rescan", summary: "count the slaves answering now against the known ones", run: rescanCommand},
		{name: "eoe", summary: "list the slaves with Ethernet over EtherCAT (EoE)", run: eoeCommand},
		{name: "crc", summary: "the port error counters (0x0300-0x0313), growth per second", run: crcCommand},
		{name: "sii", summary: "dump a slave's SII EEPROM, or write one (needs --write)", run: siiCommand},
		{name: "alias", summary: "set a slave's station alias in its SII (needs --write)", run: aliasCommand},
		{name: "foe", summary: "write (--write) or read a file over FoE in BOOT (firmware)", run: foeCommand},
		{name: "graph", summary: "print the segment's topology as a Graphviz DOT graph", run: graphCommand},
		{name: "master", summary: "the master's counters: frames, losses, retries, with rates", run: masterCommand},
		{name: "pdos", summary: "PDO assignment and mapping per SyncManager, image offsets", run: pdosCommand},
		{name: "domains", summary: "the process image layout: each slave's outputs and inputs", run: domainsCommand},
		{name: "data", summary: "the process image as a hex dump, outputs then inputs", run: dataCommand},
		{name: "sim", summary: "serve a simulated EtherCAT segment on a network interface", run: simCommand},
		{name: "bench", summary: "run the cycle for N cycles and report jitter, latency and load", run: benchCommand},
		{name: "rtcheck", summary: "check this host's real-time tuning and say how to fix it", run: rtcheckCommand},
		{name: "spikes", summary: "the running agent's late cycles and what delayed them", run: spikesCommand},
		{name: "config", summary: "the configuration schema, a file's check, from-bus/-eni", run: configCommand},
		{name: "completion", summary: "print a bash or zsh completion script", run: completionCommand},
		{name: "version", summary: "print the version and build information", run: versionCommand},
	}
}

func main() { os.Exit(mainCode(os.Args[1:])) }

// mainCode runs the command line args as main does and returns the exit
// code; the tests' stand-in binary runs it too. `ecagent cycle` (not in
// the help) is the cycle process itself, for an agent that finds no
// ecagent-cycle (agent.FindCycleProgram): it runs before anything of the
// agent, with no signal handling but its own.
func mainCode(args []string) int {
	if len(args) > 0 && args[0] == agent.CycleMode {
		return process.Main("ecagent "+agent.CycleMode, args[1:], os.Stdout, os.Stderr)
	}
	ctx, stop := signalContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, environ: os.Environ()}, args)
	stop()
	return code
}

// stopSignal is the cause (context.Cause) of the cancellation of main's
// context: the signal that asked the command to stop.
type stopSignal struct{ sig os.Signal }

func (s stopSignal) Error() string { return s.sig.String() + " signal received" }

// signalContext returns a copy of parent that the first of sigs cancels,
// with that signal as a stopSignal cause, so that a command can tell an
// interrupt from a termination. Until stop, later signals are ignored
// rather than killing the process.
func signalContext(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(stopSignal{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// loadConfig loads the configuration, returning as soon as the command is
// interrupted (Ctrl-C during the load of a huge file exits 130 at once);
// a bad configuration is a usage error.
func loadConfig(ctx context.Context, src config.Sources) (config.Config, error) {
	if src.ENI == nil {
		src.ENI = applyENI
	}
	cfg, err := config.LoadContext(ctx, src)
	switch {
	case err == nil:
		return cfg, nil
	case interruptedBy(ctx, os.Interrupt):
		return cfg, errInterrupted
	case ctx.Err() != nil:
		return cfg, err
	}
	return cfg, usageError{err}
}

// interruptedBy reports whether ctx was cancelled by signal sig.
func interruptedBy(ctx context.Context, sig os.Signal) bool {
	var s stopSignal
	return errors.As(context.Cause(ctx), &s) && s.sig == sig
}

// errInterrupted is returned by a command that stopped cleanly on SIGINT;
// it exits with exitInterrupted and prints nothing.
var errInterrupted = errors.New("interrupted")

// igHAliases are the command names of IgH's ethercat tool, each with the
// command line it stands for here.
func igHAliases() map[string][]string {
	return map[string][]string{
		"upload":    {"sdo", "read"},
		"download":  {"sdo", "write"},
		"reg_read":  {"reg", "read"},
		"reg_write": {"reg", "write"},
		"sii_read":  {"sii", "read"},
		"sii_write": {"sii", "write"},
		"foe_read":  {"foe", "read"},
		"foe_write": {"foe", "write"},
	}
}

// dispatch runs the subcommand named by args[0] and maps its error to an
// exit code.
func dispatch(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(e.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" {
		args = []string{"version"}
	}
	if args[0] == "help" {
		if len(args) == 1 {
			usage(e.stdout)
			return exitOK
		}
		// help CMD [SUB]: the command's own --help.
		args = append(append([]string(nil), args[1:]...), "--help")
	}
	if alias, ok := igHAliases()[args[0]]; ok {
		args = append(append([]string(nil), alias...), args[1:]...)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return exitCode(ctx, e, c.run(ctx, e, args[1:]))
		}
	}
	fmt.Fprintf(e.stderr, "ecagent: unknown command %q", args[0])
	if s := suggest(args[0]); s != "" {
		fmt.Fprintf(e.stderr, "; did you mean %q?", s)
	}
	fmt.Fprint(e.stderr, "\n\n")
	usage(e.stderr)
	return exitUsage
}

// suggest returns the command or IgH name nearest to name (edit distance
// at most 2, or a prefix), or "".
func suggest(name string) string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	for a := range igHAliases() {
		names = append(names, a)
	}
	sort.Strings(names)
	best, bestD := "", 3
	for _, n := range names {
		d := config.EditDistance(strings.ToLower(name), n)
		if l := strings.ToLower(name); (strings.HasPrefix(n, l) && len(l) >= 2) || (strings.HasPrefix(l, n) && len(n) >= 3) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: ecagent COMMAND [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "IgH names: upload, download, reg_read, reg_write, sii_read, sii_write, foe_read,")
	fmt.Fprintln(w, "foe_write. 'ecagent help COMMAND' shows a command's flags, 'ecagent config")
	fmt.Fprintln(w, "schema' every configuration key, 'ecagent completion bash|zsh' a completion script.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error,")
	fmt.Fprintln(w, "3 segment not as configured, 4 interface driven by another master,")
	fmt.Fprintln(w, "130 interrupted (run: SIGINT; SIGTERM stops it with 0).")
}

// usageError marks errors in the command line or configuration.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func exitCode(ctx context.Context, e *env, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	if err == errInterrupted {
		return exitInterrupted
	}
	fmt.Fprintf(e.stderr, "ecagent: %v\n", err)
	var ue usageError
	var inUse inUseError
	var bringUp *agent.BringUpError
	var prog *agent.CycleProgramError
	switch {
	case errors.As(err, &ue), errors.As(err, &prog) && prog.Program != "": // cycle.program names no program
		return exitUsage
	case errors.As(err, &inUse), errors.As(err, new(*agent.SegmentInUseError)):
		return exitInUse
	case process.IsBusMismatch(err), errors.As(err, &bringUp) && bringUp.Reason == busstate.BringUpNotAsConfigured,
		errors.As(err, new(*rescanMismatch)):
		return exitBusMismatch
	case ctx.Err() != nil:
		return exitInterrupted
	}
	return exitFailure
}

// parseFlags parses args, turning flag errors into usage errors.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// newLogger builds the slog logger for a command.
func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
