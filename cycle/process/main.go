package process

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/internal/buildinfo"
)

// helpText is the --help output of the program called name; TestHelpFitsAScreen
// keeps it within 40 lines of 100 columns and naming every flag.
func helpText(name string) string {
	return strings.ReplaceAll(`Usage: NAME (--config FILE | --config-fd N) [--shm PATH] [--link-fd N]
                     [--report-fd N] [--cycles N]

The real-time cycle process of ecagent. 'ecagent run' and 'ecagent bench' start and
supervise it; it can be run by hand against a segment an agent created. It attaches to the
shared-memory segment cycle.shm, brings the bus to OP, writes the bus description
(<cycle.shm>.bus.json) and runs the cycle until SIGTERM or SIGINT, allocating nothing after
bring-up; then it takes the bus to INIT.

Flags:
  --config FILE  the cycle configuration, JSON: the bus.*, cycle.* and log.* keys and the
                 drives of the agent's configuration, durations as text ("1ms"); missing
                 keys take the agent's defaults; at most 1 MiB
  --config-fd N  read the configuration from inherited descriptor N (a pipe), as 'ecagent
                 run' passes it: no file holds it
  --shm PATH     the segment, overriding cycle.shm ('ecagent run' names it here)
  --link-fd N    inherited descriptor of a socket-pair link to a simulated segment;
                 -1 (the default) opens bus.interface
  --report-fd N  inherited descriptor (a pipe) told why bring-up failed, one line of
                 JSON {"reason", "error"}; closed unwritten once the cycle runs
  --cycles N     stop after N cycles; 0 (the default) runs until SIGTERM or SIGINT
  --version      print the version and exit
  --help         print this help and exit

Example, the cycle of a running agent's segment, for 10000 cycles on eth1:
  echo '{"bus": {"interface": "eth1"}, "cycle": {"shm": "/dev/shm/a.shm"}}' >/tmp/a.json
  NAME --config /tmp/a.json --cycles 10000

It logs to stderr (log.level, log.format) and ends with a line saying the cycles run and
the heap allocations and garbage collections during cyclic operation (both 0).
Capabilities: CAP_NET_RAW (raw socket), CAP_NET_ADMIN and CAP_BPF (bus.link xdp), CAP_SYS_NICE
(SCHED_FIFO), CAP_IPC_LOCK (locked memory); it logs what it holds at start and runs without any.
Exit codes: 0 ok, 1 runtime failure (link, bus, I/O), 2 usage or configuration error,
3 the segment is not as configured (slave count, a slave refusing a state).
`, "NAME", name)
}

// Main is the cycle process's command line: ecagent-cycle's main, and the
// hidden `ecagent cycle` (name says which, in messages). It runs args and
// returns the exit code (contract.ExitOK …). It makes no signal context:
// the cycle takes SIGTERM and SIGINT itself, on a channel, since a
// context's cancellation would allocate while the cycle still runs.
func Main(name string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the errors are printed below, the help is helpText
	configFile := fs.String("config", "", "the cycle configuration file (JSON)")
	configFD := fs.Int("config-fd", -1, "inherited descriptor to read the configuration from")
	shmPath := fs.String("shm", "", "the segment, overriding cycle.shm")
	linkFD := fs.Int("link-fd", -1, "inherited descriptor of a socket-pair link; -1 opens bus.interface")
	reportFD := fs.Int("report-fd", -1, "inherited descriptor told why bring-up failed")
	cycles := fs.Uint64("cycles", 0, "stop after this many cycles; 0 runs until SIGTERM")
	version := fs.Bool("version", false, "print the version and exit")
	usage := func(err error) int {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return contract.ExitUsage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, helpText(name))
			return contract.ExitOK
		}
		return usage(err)
	}
	switch {
	case fs.NArg() > 0:
		return usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case *version:
		fmt.Fprintln(stdout, buildinfo.Line(name))
		return contract.ExitOK
	case *configFile == "" && *configFD < 0:
		return usage(errors.New("--config FILE or --config-fd N is required"))
	case *configFile != "" && *configFD >= 0:
		return usage(errors.New("--config and --config-fd exclude each other"))
	case *reportFD >= 0 && *reportFD <= 2:
		return usage(fmt.Errorf("--report-fd %d: want an inherited descriptor, 3 or more", *reportFD))
	}
	var report io.WriteCloser
	if *reportFD >= 0 {
		report = os.NewFile(uintptr(*reportFD), fmt.Sprintf("fd %d", *reportFD))
	}
	cfg, err := loadConfig(*configFile, *configFD)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return contract.ExitUsage
	}
	if *shmPath != "" {
		cfg.Cycle.SHM = *shmPath
	}
	log := cfg.Log.NewLogger(stderr).With("process", "cycle")
	quietRuntime(log)
	logCapabilities(cfg, log)
	rep, err := Run(context.Background(), cfg, Options{LinkFD: *linkFD, Cycles: *cycles, BringUpReport: report}, log)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		if IsBusMismatch(err) {
			return contract.ExitBusMismatch
		}
		return contract.ExitFailure
	}
	log.Info("cycle process stopped", "cycles", rep.Cycles, "mallocs_in_cycle", rep.Mallocs, "gc_in_cycle", rep.NumGC,
		"recovery_episodes", rep.RecoveryEpisodes, "maintenance_requests", rep.MaintenanceRequests)
	return contract.ExitOK
}

// loadConfig reads the configuration from the file path or, when fd is
// not negative, from that inherited descriptor, which it closes.
func loadConfig(path string, fd int) (contract.Config, error) {
	if fd < 0 {
		return contract.Load(path)
	}
	if fd <= 2 {
		return contract.Config{}, fmt.Errorf("--config-fd %d: want an inherited descriptor, 3 or more", fd)
	}
	f := os.NewFile(uintptr(fd), fmt.Sprintf("fd %d", fd))
	defer f.Close()
	return contract.Read(f, f.Name())
}
