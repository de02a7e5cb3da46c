package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/sim"
)

// segmentFlags say which segment a maintenance command works on: the
// running agent's (found through the agent's own configuration), else an
// interface opened here (--iface, refused when an agent drives it), else
// the built-in simulated segment (--sim), never one of those unasked.
type segmentFlags struct {
	config       *string
	shm          *string
	iface        *string
	sim          *bool
	devices      *[]string
	timeout      *time.Duration
	level        *string
	secondMaster *bool
	fs           *pflag.FlagSet
}

// segmentFlagNames are the flags of addSegmentFlags the help shows, in
// its order (--timeout and --log.level are accepted too).
var segmentFlagNames = []string{"config", "cycle.shm", "iface", "sim", "devices", "second-master"}

func addSegmentFlags(fs *pflag.FlagSet) segmentFlags {
	def := config.Default()
	return segmentFlags{
		fs:           fs,
		config:       fs.String(config.FlagConfigFile, "", "the agent's configuration `FILE`: its cycle.shm finds the agent"),
		shm:          fs.String("cycle.shm", "", "the running agent's shared memory `PATH` (default: the configuration's)"),
		iface:        fs.String("iface", "", "network `IF` to open here when no agent answers"),
		sim:          fs.Bool("sim", false, "use the built-in simulated segment (--devices)"),
		devices:      fs.StringSlice("devices", def.Bus.Devices, "the devices of --sim: models, SII images or ESI devices (FILE.xml[:DEVICE][@REVISION])"),
		secondMaster: fs.Bool("second-master", false, "open --iface even though an agent drives it (disturbs it)"),
		timeout:      fs.Duration("timeout", time.Duration(def.Bus.Timeout), "how long one frame waits for its answer"),
		level:        fs.String("log.level", "warn", "log level: debug, info, warn or error"),
	}
}

// target is the segment open found: a running agent's socket (client), or
// an interface or the simulator to open here.
type target struct {
	client    *maintenance.Client
	iface     string
	simulated bool
	// claim holds the interface for a segment opened here.
	claim *maintenance.Claim
	b     segmentFlags
}

// inUseError is the refusal to open an interface another master drives;
// it exits with exitInUse.
type inUseError struct{ err error }

func (e inUseError) Error() string { return e.err.Error() }
func (e inUseError) Unwrap() error { return e.err }

// agentSHM returns the shared-memory path of the running agent as its
// configuration gives it, and where that came from.
func (b segmentFlags) agentSHM(ctx context.Context, e *env) (path, source string, err error) {
	if *b.shm != "" {
		return *b.shm, "--cycle.shm", nil
	}
	cfg, err := loadConfig(ctx, config.Sources{File: *b.config, Environ: e.environ, Models: sim.Models()})
	if err != nil {
		return "", "", err
	}
	file := *b.config
	for _, kv := range e.environ {
		if v, ok := strings.CutPrefix(kv, "ECAGENT_CYCLE_SHM="); ok && v != "" {
			return cfg.Cycle.SHM, "ECAGENT_CYCLE_SHM", nil
		}
		if v, ok := strings.CutPrefix(kv, "ECAGENT_CONFIG="); ok && file == "" {
			file = v
		}
	}
	if file != "" {
		return cfg.Cycle.SHM, "cycle.shm of " + file, nil
	}
	return cfg.Cycle.SHM, "the default", nil
}

// open finds the segment: the agent's when its maintenance socket answers
// (and, with --iface, drives that interface), else --iface opened here
// unless another master claims it, else --sim. Neither is a usage error.
func (b segmentFlags) open(ctx context.Context, e *env) (*target, error) {
	if *b.sim && *b.iface != "" {
		return nil, usageError{errors.New("--sim and --iface exclude each other: one segment at a time")}
	}
	if !*b.sim && b.fs.Changed("devices") {
		return nil, usageError{errors.New("--devices names the simulated devices of --sim: add --sim")}
	}
	if *b.sim {
		return &target{simulated: true, b: b}, nil
	}
	shmPath, source, err := b.agentSHM(ctx, e)
	if err != nil {
		return nil, err
	}
	cl, hello, err := dialAgent(ctx, shmPath)
	if err != nil {
		return nil, err
	}
	if cl != nil {
		if *b.iface == "" || hello.Interface == *b.iface {
			t := &target{client: cl, iface: hello.Interface, b: b}
			if hello.Interface == "" {
				t.simulated = true
			}
			return t, nil
		}
		_ = cl.Close() // an agent on another interface
	}
	if *b.iface == "" {
		return nil, usageError{fmt.Errorf("no agent answers at %s (cycle.shm %s, from %s), and neither --iface nor --sim "+
			"was given: name the agent's segment (--cycle.shm, --config or ECAGENT_CYCLE_SHM), open an interface no agent "+
			"drives with --iface, or use the built-in simulated segment with --sim",
			maintenance.SocketPath(shmPath), shmPath, source)}
	}
	t := &target{iface: *b.iface, b: b}
	if *b.secondMaster {
		return t, nil
	}
	claim, err := maintenance.ClaimInterface(ctx, *b.iface, "")
	var claimed *maintenance.ClaimedError
	switch {
	case errors.As(err, &claimed) && claimed.Holder.SHM != "":
		return nil, inUseError{fmt.Errorf("%w; no agent answers at cycle.shm %s (from %s): reach it with --cycle.shm %s, "+
			"or add --second-master to open the interface beside it, which disturbs its cycle",
			err, shmPath, source, claimed.Holder.SHM)}
	case claimed != nil:
		return nil, inUseError{fmt.Errorf("%w; wait for it to end, or add --second-master to open the interface anyway", err)}
	case err != nil:
		return nil, err
	}
	claim.Serve(ctx)
	t.claim = claim
	return t, nil
}

// dialAgent connects to the maintenance socket of the segment shmPath and
// says hello. cl is nil when no agent serves it; an agent that is there
// but does not answer, or a socket the client does not trust (another
// user's, see maintenance.Dial), is an error: opening the segment beside
// it would disturb it, and a forged socket's answers would be lies.
func dialAgent(ctx context.Context, shmPath string) (*maintenance.Client, maintenance.HelloResult, error) {
	var hello maintenance.HelloResult
	cl, err := maintenance.Dial(ctx, shmPath)
	if errors.Is(err, maintenance.ErrNotServed) {
		return nil, hello, nil
	}
	if err != nil {
		return nil, hello, fmt.Errorf("the maintenance socket of %s: %w", shmPath, err)
	}
	hctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	raw, err := cl.Call(hctx, maintenance.Request{Op: maintenance.OpHello})
	if err == nil {
		err = json.Unmarshal(raw, &hello)
	}
	if err != nil {
		_ = cl.Close()
		return nil, hello, fmt.Errorf("the agent's control socket %s does not answer: %w", maintenance.SocketPath(shmPath), err)
	}
	return cl, hello, nil
}

// scan opens the segment of t here, scans it (failing unless it has
// expected slaves, when expected > 0) and returns the master and the
// slaves; close releases the segment and the interface's claim.
func (t *target) scan(ctx context.Context, e *env, expected int) (m *master.Master, slaves []*master.Slave, close func(), err error) {
	b := t.b
	releaseClaim := func() {
		if t.claim != nil {
			_ = t.claim.Close()
		}
	}
	cfg := config.Default()
	cfg.Bus.Interface, cfg.Bus.Devices, cfg.Bus.ExpectedSlaves, cfg.Bus.Timeout = t.iface, *b.devices, expected, contract.Duration(*b.timeout)
	cfg.Log.Level = *b.level
	if err := cfg.ValidateWithModels(sim.Models()); err != nil {
		releaseClaim()
		return nil, nil, nil, usageError{err}
	}
	log := newLogger(e.stderr, cfg.Log.SlogLevel(), "text")
	seg, err := openSegment(cfg, log)
	if err != nil {
		releaseClaim()
		return nil, nil, nil, err
	}
	mc := process.MasterConfig(cfg.CycleConfig(), log)
	// A slow segment (--timeout raised) is slow for the EEPROM polls too.
	mc.SIITimeout = max(master.DefaultSIITimeout, 10*time.Duration(cfg.Bus.Timeout))
	m, err = master.New(seg.Link, mc)
	if err != nil {
		seg.Close()
		releaseClaim()
		return nil, nil, nil, err
	}
	if slaves, err = m.Scan(ctx); err != nil {
		_ = m.Close()
		seg.Close()
		releaseClaim()
		return nil, nil, nil, err
	}
	return m, slaves, func() { _ = m.Close(); seg.Close(); releaseClaim() }, nil
}

// wrapUnlessUsage prefixes err with the command's name, leaving usage
// errors (exit code 2) as they are.
func wrapUnlessUsage(cmd string, err error) error {
	if _, ok := err.(usageError); ok {
		return err
	}
	return fmt.Errorf("%s: %w", cmd, err)
}
