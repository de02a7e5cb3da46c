package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/sim"
	"github.com/ecagent/ecagent/sim/faultcmd"
)

func simCommand(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "verify" {
		return simVerifyCommand(ctx, e, args[1:])
	}
	fs, f := newSimFlags(e)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *f.helpFaults {
		_, err := fmt.Fprintln(e.stdout, simFaultHelp)
		return err
	}
	if *f.iface == "" && *f.linkFD < 0 {
		return usageError{errors.New("sim: --iface is required (the interface to serve the segment on)")}
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*f.level)); err != nil {
		return usageError{fmt.Errorf("sim: --log.level %q: want debug, info, warn or error", *f.level)}
	}
	opts, err := f.options(fs.Changed("sii-busy-frames"), fs.Changed("seed"))
	if err != nil {
		return usageError{err}
	}
	if *f.delay > 0 {
		rd, stopToggle := responseDelay(*f.delay, *f.delayEvery, *f.delayOnSignal)
		defer stopToggle()
		opts = append(opts, sim.WithResponseDelay(rd))
	}
	devs, err := sim.ParseDevices(*f.devices)
	if err != nil {
		return usageError{fmt.Errorf("sim: --devices: %w", err)}
	}
	log := newLogger(e.stderr, lv, "text")
	if fs.Changed("seed") {
		log.Info("device times drawn from their measured spreads", "seed", *f.seed)
	}
	if *f.priority < 0 || *f.priority > 99 {
		return usageError{fmt.Errorf("sim: --priority %d: want 1..99, or 0 for the normal scheduler", *f.priority)}
	}
	defer simRealtime(log, *f.avoidCore, *f.priority)()
	var schedule faultcmd.Schedule
	if *f.faultsFile != "" {
		if schedule, err = readFaultSchedule(*f.faultsFile); err != nil {
			return usageError{err}
		}
	}
	// This process only serves the segment: its wait for frames keeps
	// the Go scheduler's P (link.WaitKeeper).
	seg := sim.NewSegment(devs, append(opts, sim.WithLogger(log), sim.WithWaitKeepsP())...)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	fc := &faultControl{faults: seg.Faults(), iface: *f.iface, log: log}
	var wg sync.WaitGroup
	defer wg.Wait() // after stop: the control goroutines end with ctx
	if *f.control != "" {
		ln, err := listenControl(*f.control)
		if err != nil {
			return fmt.Errorf("sim: --control: %w", err)
		}
		log.Info("fault control listening", "socket", *f.control)
		wg.Go(func() { fc.serve(ctx, ln) })
	}
	if *f.faultsFile != "" {
		wg.Go(func() { fc.runSchedule(ctx, schedule, *f.faultsFile) })
	}
	return serveSim(ctx, seg, *f.iface, *f.linkFD)
}

// simFlags are the flags of ecagent sim.
type simFlags struct {
	iface, pattern, presetState, drift, control, faultsFile, level *string
	devices                                                        *[]string
	linkFD, busy, priority, avoidCore, delayEvery, hopDelay        *int
	presetAddr                                                     *uint16
	seed                                                           *uint64
	delay                                                          *time.Duration
	delayOnSignal, helpFaults                                      *bool
}

// newSimFlags declares the flags of ecagent sim and its help.
func newSimFlags(e *env) (*pflag.FlagSet, *simFlags) {
	fs := newFlagSet(e, "sim", help{
		usage: "--iface IF [--devices LIST] [--control PATH | --faults FILE] [flags]",
		about: "Serve a simulated EtherCAT segment on a network interface, answering every EtherCAT " +
			"frame that arrives on IF as a real segment would; point any master at the other end of a veth pair.",
		groups: []flagGroup{
			{"Segment", []string{"iface", "devices", "inputs", "preset-address", "priority", "drift"}},
			{"Faults", []string{"control", "faults", "help-faults", "delay"}},
		},
		notes: "Built-in models: " + strings.Join(sim.Models(), ", ") + ". --help-faults explains the " +
			"fault commands (drop, delay, disappear POS, alerror, link …) and the schedule file, which " +
			"runs them at times and may end in e.g. 'repeat 10s'. " +
			"Also: --seed, --link-fd, --sii-busy-frames, --avoid-core, --delay-every, --delay-on-signal and " +
			"--log.level (see --help-faults).",
		examples: []string{
			"ip link add veth0 type veth peer name veth1 && ip link set veth1 up",
			"ecagent sim --iface veth1 --control /run/ecsim.sock &",
			"echo 'disappear 2' | socat - UNIX-CONNECT:/run/ecsim.sock",
		},
	})
	return fs, &simFlags{
		iface:  fs.String("iface", "", "network `interface` to serve on (needs CAP_NET_RAW)"),
		linkFD: fs.Int("link-fd", -1, "serve on this inherited socket instead (ecagent run)"),
		devices: fs.StringSlice("devices", config.ReferenceDevices(),
			"ring order: models, SII images (*.bin), ESI FILE.xml[:DEVICE][@REVISION]"),
		pattern:       fs.String("inputs", "counter", "inputs: constant, counter, walk, square:N, sine:N"),
		busy:          fs.Int("sii-busy-frames", 0, "frames an SII EEPROM command stays busy (unset: the chip's time)"),
		presetAddr:    fs.Uint16("preset-address", 0, "start with station addresses from this one on, e.g. 0x03e9"),
		presetState:   fs.String("preset-state", "PREOP", "with --preset-address: INIT or PREOP"),
		priority:      fs.Int("priority", 0, "SCHED_FIFO priority to serve with, 1..99; 0 keeps the normal one"),
		avoidCore:     fs.Int("avoid-core", -1, "keep off this `CPU`, the master's cycle core"),
		delay:         fs.Duration("delay", 0, "hold back answers by this long; 0 disables"),
		delayEvery:    fs.Int("delay-every", 1, "with --delay: delay every Nth answer only"),
		delayOnSignal: fs.Bool("delay-on-signal", false, "with --delay: start without; SIGUSR1 switches delays on and off"),
		drift: fs.String("drift", "", "ppm of clock drift per device, e.g. 100,-100 (`LIST` repeats; max ±"+
			strconv.FormatFloat(faultcmd.MaxDriftPPM, 'g', -1, 64)+")"),
		hopDelay:   fs.Int("hop-delay", 140, "`NS` from one device to the next (over 140: cable delay)"),
		seed:       fs.Uint64("seed", 0, "draw the devices' times from their spreads with seed `N` (unset: typical)"),
		control:    fs.String("control", "", "take fault commands on this Unix socket `PATH`"),
		faultsFile: fs.String("faults", "", "run the fault schedule in `FILE` from the start"),
		helpFaults: fs.Bool("help-faults", false, "explain the fault commands and the schedule file, with examples"),
		level:      fs.String("log.level", "info", "log level: debug, info, warn or error"),
	}
}

// options checks the flags that shape the simulated segment and returns
// its options (the response delay apart); busySet and seedSet say
// whether --sii-busy-frames and --seed were given.
func (f *simFlags) options(busySet, seedSet bool) ([]sim.Option, error) {
	p, err := sim.ParsePattern(*f.pattern)
	if err != nil {
		return nil, fmt.Errorf("sim: --inputs: %w", err)
	}
	if *f.busy < 0 {
		return nil, fmt.Errorf("sim: --sii-busy-frames %d: must be 0 or more", *f.busy)
	}
	opts := []sim.Option{sim.WithInputPattern(p)}
	if busySet {
		// Only when asked: by default the EEPROM takes its chip's time.
		opts = append(opts, sim.WithSIIBusyFrames(*f.busy))
	}
	if *f.drift != "" {
		ppm, err := parseDrift(*f.drift)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sim.WithClockDrift(ppm...))
	}
	if *f.hopDelay < 0 {
		return nil, fmt.Errorf("sim: --hop-delay %d: must be 0 or more", *f.hopDelay)
	}
	opts = append(opts, sim.WithHopDelay(*f.hopDelay))
	if seedSet {
		// Only when asked: by default every time is its typical value.
		opts = append(opts, sim.WithSeed(*f.seed))
	}
	if *f.presetAddr != 0 {
		st, ok := esc.ParseALState(strings.ToUpper(*f.presetState))
		if !ok || (st != esc.StateInit && st != esc.StatePreOp) {
			return nil, fmt.Errorf("sim: --preset-state %q: want INIT or PREOP", *f.presetState)
		}
		opts = append(opts, sim.WithPreset(*f.presetAddr, st))
	}
	if *f.delay < 0 || *f.delayEvery < 1 {
		return nil, fmt.Errorf("sim: --delay %v / --delay-every %d: want a delay ≥ 0 and every ≥ 1", *f.delay, *f.delayEvery)
	}
	return opts, nil
}

// responseDelay holds back every nth answer by d; onSignal starts it off
// and lets SIGUSR1 switch it on and off until stop is called.
func responseDelay(d time.Duration, every int, onSignal bool) (rd *sim.ResponseDelay, stop func()) {
	rd = sim.NewResponseDelay(d, every)
	rd.Set(!onSignal)
	if !onSignal {
		return rd, func() {}
	}
	toggle := make(chan os.Signal, 1)
	signal.Notify(toggle, syscall.SIGUSR1)
	go func() {
		for range toggle {
			rd.Set(!rd.On())
		}
	}()
	return rd, func() { signal.Stop(toggle) }
}

// simRealtime keeps the simulator off the cycle's core (avoidCore ≥ 0)
// and serves with SCHED_FIFO priority (priority > 0); the returned
// function undoes what needs undoing, on the goroutine that serves.
func simRealtime(log *slog.Logger, avoidCore, priority int) (undo func()) {
	if avoidCore >= 0 {
		if err := rt.AvoidCore(avoidCore); err != nil {
			log.Warn("serving on the cycle's core", "err", err)
		}
	}
	switch {
	case priority <= 0:
	case rt.OneCPU():
		// Every thread, not only the one that serves: on a core shared
		// with threads of the normal scheduler a real-time thread can
		// spin for most of a second in the Go runtime (rt.ProcessFIFO).
		// With more CPUs the kernel moves those threads to another one.
		if err := rt.ProcessFIFO(priority); err != nil {
			log.Warn("serving without real-time priority", "err", err)
		}
	default:
		// Serve runs on this goroutine: give its thread the priority,
		// and leave the others to the normal scheduler, so that the
		// simulator's own work (the collector, logging) does not delay
		// real-time threads of other processes.
		runtime.LockOSThread()
		setup := rt.Apply(rt.Options{Priority: priority, Core: -1})
		for _, r := range setup.Refused() {
			log.Warn("serving without real-time priority", "err", r.Err)
		}
		return func() { setup.Close(); runtime.UnlockOSThread() }
	}
	return func() {}
}

// serveSim serves seg on the inherited socket linkFD (≥ 0) or on iface
// until ctx ends.
func serveSim(ctx context.Context, seg *sim.Segment, iface string, linkFD int) error {
	if linkFD >= 0 {
		l, err := link.FileLink(linkFD)
		if err != nil {
			return fmt.Errorf("sim: --link-fd %d: %w", linkFD, err)
		}
		defer l.Close()
		// The peer closing (the cycle process ended) ends the simulator too.
		if err := seg.Serve(ctx, l); err != nil && !errors.Is(err, link.ErrClosed) {
			return fmt.Errorf("sim: %w", err)
		}
		return nil
	}
	if err := seg.RunInterface(ctx, iface); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

// parseDrift parses the --drift list: one drift in ppm per device,
// comma-separated.
func parseDrift(list string) ([]float64, error) {
	fields := strings.Split(list, ",")
	ppm := make([]float64, 0, len(fields))
	for _, f := range fields {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("sim: --drift %q: %q is not a drift in ppm", list, f)
		}
		if math.Abs(v) > faultcmd.MaxDriftPPM {
			return nil, fmt.Errorf("sim: --drift %q: %q is beyond ±%g ppm", list, f, faultcmd.MaxDriftPPM)
		}
		ppm = append(ppm, v)
	}
	return ppm, nil
}

// simFaultHelp is what `ecagent sim --help-faults` prints.
const simFaultHelp = `Fault injection: --control PATH listens on a Unix stream socket; each
connection sends commands, one a line, and gets one line back for each: "ok",
"error: WHY", or for counts the counts as key=value pairs. --faults FILE runs a
schedule from the start of serving: lines "AT COMMAND", AT a duration from the
start; # starts a comment; a line "repeat EVERY" starts the schedule again
every EVERY. Device positions count from 0, the device next to the master.
Commands:
` + faultcmd.Help + `

Examples:
  ecagent sim --iface veth1 --control /run/ecsim.sock &
  echo 'drop next 3' | socat - UNIX-CONNECT:/run/ecsim.sock    # answers: ok
  printf 'disappear 3\ncounts\n' | socat - UNIX-CONNECT:/run/ecsim.sock
  echo 'noisy 2 0 50' | socat - UNIX-CONNECT:/run/ecsim.sock   # 50 CRC errors/s into terminal 2
  echo 'power-cycle' | socat - UNIX-CONNECT:/run/ecsim.sock    # 24 V off and on, EEPROMs kept

  # faults.txt: pull terminal 3 for 2.5 s every 10 s, lose 1 % of frames
  0s   drop percent 1
  5s   disappear 3
  7.5s return 3
  repeat 10s`

// readFaultSchedule reads and parses the --faults file.
func readFaultSchedule(path string) (faultcmd.Schedule, error) {
	f, err := os.Open(path)
	if err != nil {
		return faultcmd.Schedule{}, fmt.Errorf("sim: --faults: %w", err)
	}
	defer f.Close()
	s, err := faultcmd.ParseSchedule(f)
	if err != nil {
		return faultcmd.Schedule{}, fmt.Errorf("sim: --faults %s: %w", path, err)
	}
	return s, nil
}

// listenControl listens on the Unix socket path, replacing a stale socket
// a simulator that died left behind (but no other kind of file).
func listenControl(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another simulator is listening there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	return ln, nil
}

// faultControl carries out fault commands from the control socket and the
// schedule on a segment and its interface.
type faultControl struct {
	faults *sim.Faults
	iface  string // the simulator's interface; "" when serving on --link-fd
	log    *slog.Logger

	mu                 sync.Mutex
	linkDowns, linkUps uint64
}

// do carries out one command line and returns the answer line.
func (c *faultControl) do(line string) string {
	cmd, err := faultcmd.Parse(line)
	if err != nil {
		return "error: " + err.Error()
	}
	out, err := c.apply(cmd)
	switch {
	case err != nil:
		return "error: " + err.Error()
	case out == "":
		return "ok"
	}
	return out
}

// apply carries out a parsed command.
func (c *faultControl) apply(cmd faultcmd.Command) (string, error) {
	switch cmd.Op {
	case faultcmd.LinkDown, faultcmd.LinkUp:
		up := cmd.Op == faultcmd.LinkUp
		if c.iface == "" {
			return "", errors.New("link: no interface to set down or up (serving on --link-fd)")
		}
		if err := setLinkUp(c.iface, up); err != nil {
			return "", fmt.Errorf("link: %w", err)
		}
		c.mu.Lock()
		if up {
			c.linkUps++
		} else {
			c.linkDowns++
		}
		c.mu.Unlock()
		return "", nil
	case faultcmd.ShowCounts:
		out, err := c.faults.Apply(cmd)
		if err != nil {
			return "", err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Sprintf("%s link_downs=%d link_ups=%d", out, c.linkDowns, c.linkUps), nil
	}
	return c.faults.Apply(cmd)
}

// serve answers control connections on ln until ctx is done.
func (c *faultControl) serve(ctx context.Context, ln net.Listener) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				c.log.Error("fault control socket failed", "err", err)
			}
			return
		}
		wg.Go(func() { c.session(ctx, conn) })
	}
}

// session answers the commands of one control connection.
func (c *faultControl) session(ctx context.Context, conn net.Conn) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	sc := bufio.NewScanner(conn)
	w := bufio.NewWriter(conn)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		answer := c.do(line)
		c.log.Info("fault command", "command", line, "answer", answer)
		w.WriteString(answer)
		w.WriteByte('\n')
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// runSchedule runs the schedule's steps at their times from now on, in
// rounds when it repeats, until ctx is done. A step that fails is logged.
func (c *faultControl) runSchedule(ctx context.Context, s faultcmd.Schedule, file string) {
	if len(s.Steps) == 0 {
		return
	}
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for round := 0; ; round++ {
		base := start.Add(time.Duration(round) * s.Repeat)
		for _, st := range s.Steps {
			timer.Reset(time.Until(base.Add(st.At)))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			out, err := c.apply(st.Cmd)
			if err != nil {
				c.log.Warn("fault schedule step failed", "file", file, "line", st.Line, "err", err)
				continue
			}
			c.log.Info("fault schedule step", "file", file, "line", st.Line, "at", st.At, "answer", out)
		}
		if s.Repeat <= 0 {
			return
		}
	}
}
