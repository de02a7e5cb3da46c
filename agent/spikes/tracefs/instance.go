package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultRoot is where tracefs is mounted on current systems.
const DefaultRoot = "/sys/kernel/tracing"

// ErrUnavailable is wrapped when tracefs is not mounted at the root, or
// the kernel has no ring buffer instances.
var ErrUnavailable = errors.New("tracefs: not available")

// Config says which instance to keep and what it records.
type Config struct {
	// Root is the tracefs mount (DefaultRoot when empty).
	Root string
	// Name is the instance's directory under instances/.
	Name string
	// CPU is the one CPU recorded.
	CPU int
	// BufferKB is the size of the CPU's ring in KiB; it overwrites its
	// oldest events when full.
	BufferKB int
	// Events are the events to enable, "system/name"; those the kernel
	// does not have are left out (Instance.Missing).
	Events []string
	// Filters are event filters (events/SYSTEM/NAME/filter) by event.
	Filters map[string]string
}

// Instance is an open tracefs instance recording one CPU.
type Instance struct {
	dir     string
	created bool
	layout  PageLayout
	formats []Format
	missing []string
	enabled []string
	// pipe is trace_pipe_raw, read with read(2) on its descriptor: an
	// *os.File would wait in the runtime's poller instead of returning
	// EAGAIN.
	pipe int
	page []byte
}

// Open creates (or takes over) the instance, sets it up, enables the
// events and starts recording. An instance that existed before is taken
// over and left in place by Close; one Open created, Close removes. A
// permission error wraps fs.ErrPermission.
func Open(cfg Config) (*Instance, error) {
	root := cfg.Root
	if root == "" {
		root = DefaultRoot
	}
	if _, err := os.Stat(filepath.Join(root, "instances")); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("tracefs %s: %w", root, err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, root, err)
	}
	in := &Instance{dir: filepath.Join(root, "instances", cfg.Name), pipe: -1}
	switch err := mkdirWithoutComms(root, in.dir); {
	case err == nil:
		in.created = true
	case errors.Is(err, fs.ErrExist):
	default:
		return nil, fmt.Errorf("tracefs: creating instance %s: %w", in.dir, err)
	}
	if err := in.setup(root, cfg); err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

func (in *Instance) setup(root string, cfg Config) error {
	hp, err := os.ReadFile(filepath.Join(in.dir, "events", "header_page"))
	if err != nil {
		return fmt.Errorf("tracefs: %w", err)
	}
	if in.layout, err = ParseHeaderPage(string(hp)); err != nil {
		return err
	}
	if err := in.write("tracing_on", "0"); err != nil {
		return err
	}
	if err := in.write("events/enable", "0"); err != nil {
		return err
	}
	if err := in.write("trace_clock", "mono"); err != nil {
		return err
	}
	if err := in.write("options/overwrite", "1"); err != nil {
		return err
	}
	if err := in.write("tracing_cpumask", cpuMask(cfg.CPU)); err != nil {
		return err
	}
	if cfg.BufferKB > 0 {
		if err := in.write("per_cpu/cpu"+strconv.Itoa(cfg.CPU)+"/buffer_size_kb", strconv.Itoa(cfg.BufferKB)); err != nil {
			return err
		}
	}
	pageSize := os.Getpagesize()
	if b, err := os.ReadFile(filepath.Join(in.dir, "buffer_subbuf_size_kb")); err == nil {
		if kb, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && kb > 0 {
			pageSize = kb * 1024
		}
	}
	in.page = make([]byte, pageSize)
	for _, ev := range cfg.Events {
		sys, name, _ := strings.Cut(ev, "/")
		b, err := os.ReadFile(filepath.Join(in.dir, "events", sys, name, "format"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				in.missing = append(in.missing, ev)
				continue
			}
			return fmt.Errorf("tracefs: %w", err)
		}
		f, err := ParseFormat(sys, name, string(b))
		if err != nil {
			return err
		}
		in.formats = append(in.formats, f)
		if flt := cfg.Filters[ev]; flt != "" {
			if err := in.write("events/"+ev+"/filter", flt); err != nil {
				return err
			}
		}
		if err := in.write("events/"+ev+"/enable", "1"); err != nil {
			return err
		}
		in.enabled = append(in.enabled, ev)
	}
	p := filepath.Join(in.dir, "per_cpu", "cpu"+strconv.Itoa(cfg.CPU), "trace_pipe_raw")
	in.pipe, err = unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("tracefs: opening %s: %w", p, err)
	}
	return in.write("tracing_on", "1")
}

// mkdirWithoutComms creates the instance directory dir so that it does
// not feed the kernel's cache of task names (saved_cmdlines). Enabling a
// sched event in an instance whose record-cmd flag is set hooks a probe
// into every context switch and wake-up of the CPU that copies both
// tasks' names under a lock; the events carry the names the collector
// needs, so the probe is pure cost, and it fell on the cycle: about 3 %
// of its CPU per cycle at 1 ms (docs/performance-log.md, 2026-12-07
// 15:10). The flag is one of tracefs's top-level options: an instance
// cannot change it and copies the top level's when it is created. So the
// top level's option is cleared for the mkdir and set back right after,
// under an exclusive flock on the tracefs root that other ecagents
// creating an instance take too (so that none sees the cleared option as
// the one to restore). Where the lock is not had within lockWait, or the
// option cannot be read or changed, the instance is created as it comes.
func mkdirWithoutComms(root, dir string) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.Mkdir(dir, 0o750)
	}
	defer unix.Close(fd)
	if !flockWithin(fd, lockWait) {
		return os.Mkdir(dir, 0o750)
	}
	opt := filepath.Join(root, "options", "record-cmd")
	b, err := os.ReadFile(opt)
	cleared := err == nil && strings.TrimSpace(string(b)) == "1" && os.WriteFile(opt, []byte("0"), 0) == nil
	err = os.Mkdir(dir, 0o750)
	if cleared {
		if rerr := os.WriteFile(opt, []byte("1"), 0); rerr != nil {
			err = errors.Join(err, fmt.Errorf("tracefs: setting %s back to 1: %w", opt, rerr))
		}
	}
	return err
}

// lockWait bounds the wait for another ecagent's instance creation: a
// few milliseconds normally; one stopped in the middle does not hold
// this one's start.
const lockWait = 2 * time.Second

// flockWithin takes an exclusive flock on fd, trying for up to wait.
func flockWithin(fd int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		switch err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); {
		case err == nil:
			return true
		case err == unix.EINTR:
		case err != unix.EWOULDBLOCK || time.Now().After(deadline):
			return false
		default:
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// cpuMask is the tracing_cpumask of one CPU: hexadecimal words of 32
// bits, comma-separated, most significant first.
func cpuMask(cpu int) string {
	words := make([]string, cpu/32+1)
	for i := range words {
		words[i] = "00000000"
	}
	words[len(words)-1-cpu/32] = fmt.Sprintf("%08x", uint32(1)<<(cpu%32))
	return strings.Join(words, ",")
}

func (in *Instance) write(file, value string) error {
	if err := os.WriteFile(filepath.Join(in.dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("tracefs: setting %s to %q: %w", file, value, err)
	}
	return nil
}

// SetFilter replaces the filter of an enabled event ("system/name"); ""
// clears it.
func (in *Instance) SetFilter(event, filter string) error {
	if filter == "" {
		filter = "0"
	}
	return in.write("events/"+event+"/filter", filter)
}

// Formats returns the record layouts of the enabled events.
func (in *Instance) Formats() []Format { return in.formats }

// Missing returns the events asked for that the kernel does not have.
func (in *Instance) Missing() []string { return in.missing }

// Dir is the instance's directory.
func (in *Instance) Dir() string { return in.dir }

// Read reads every page the ring holds now, without waiting, and calls fn
// for each record (see PageLayout.Records). A page the ring wrote after
// overwriting events not yet read is announced first: gap (when not nil)
// is called with the page's time stamp, so the reader knows that events
// before it, after the last record it had, are missing. Read reports the
// pages read.
func (in *Instance) Read(fn func(ts uint64, rec []byte), gap func(ts uint64)) (pages int, err error) {
	for {
		n, err := unix.Read(in.pipe, in.page)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return pages, nil
		}
		if err != nil {
			return pages, fmt.Errorf("tracefs: reading trace_pipe_raw of %s: %w", in.dir, err)
		}
		if n <= 0 {
			return pages, nil
		}
		pages++
		if ts, missed := in.layout.Missed(in.page[:n]); missed && gap != nil {
			gap(ts)
		}
		if err := in.layout.Records(in.page[:n], fn); err != nil {
			return pages, err
		}
	}
}

// Close stops recording and leaves the tracefs as it was found: the
// events disabled and an instance Open created removed.
func (in *Instance) Close() error {
	var errs []error
	if in.pipe >= 0 {
		errs = append(errs, unix.Close(in.pipe))
		in.pipe = -1
	}
	_ = in.write("tracing_on", "0")
	for _, ev := range in.enabled {
		_ = in.write("events/"+ev+"/enable", "0")
		_ = in.write("events/"+ev+"/filter", "0")
	}
	in.enabled = nil
	if in.created {
		if err := os.Remove(in.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("tracefs: removing instance %s: %w", in.dir, err))
		}
		in.created = false
	}
	return errors.Join(errs...)
}
