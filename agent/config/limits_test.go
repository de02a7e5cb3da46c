package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin loads src and fails the test if that takes longer than
// within (the load goes on in the background; the test does not wait for
// a loader that spins).
func loadWithin(t *testing.T, src Sources, within time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := Load(src); done <- err }()
	select {
	case err := <-done:
		t.Logf("loaded in %v", time.Since(start).Round(time.Millisecond))
		return err
	case <-time.After(within):
		t.Fatalf("Load still runs after %v", within)
		return nil
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ecagent.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadManyKeysIsQuick loads files of many top-level keys, within the
// size bound, that yaml.v3 alone decodes in time quadratic in the keys
// (20 000 keys took 1.3 s, 80 000 take about 20 s): they are refused in
// well under a second, naming the bound.
func TestLoadManyKeysIsQuick(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 80_000 {
		fmt.Fprintf(&b, "k%05d: 1\n", i)
	}
	err := loadWithin(t, Sources{File: writeFile(t, b.String())}, 5*time.Second)
	var fe *FileError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "the top level is a mapping of 80000 keys: at most 256 are allowed") {
		t.Errorf("80 000 keys: %v", err)
	}

	// One key repeated to the bound: yaml.v3 reports every pair (32 640
	// lines); the first is enough.
	b.Reset()
	for range MaxMappingKeys {
		b.WriteString("site: a\n")
	}
	err = loadWithin(t, Sources{File: writeFile(t, b.String())}, 3*time.Second)
	if err == nil || !strings.HasSuffix(err.Error(), `: line 2: mapping key "site" already defined at line 1`) {
		t.Errorf("a repeated key: %.300v", err)
	}
}

// TestLoadManyUnknownKeysIsQuick loads 64 000 unknown keys within every
// bound (256 sections of 250): looking for the closest known key of each
// took 6.5 s and printed 64 000 lines; the first 20 are reported, the rest
// counted.
func TestLoadManyUnknownKeysIsQuick(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 256 {
		fmt.Fprintf(&b, "mqtt%03d:\n", i)
		for j := range 250 {
			fmt.Fprintf(&b, "  qso%03d: 1\n", j)
		}
	}
	// The bound on time is loose (a loaded CI host): the count of lines
	// is what tells the two apart.
	err := loadWithin(t, Sources{File: writeFile(t, b.String())}, 10*time.Second)
	if err == nil {
		t.Fatal("64 000 unknown keys loaded")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxUnknownKeys+1 || !strings.HasSuffix(lines[len(lines)-1],
		`config: unknown key "mqtt000.qso020" (`+lines[0][strings.Index(lines[0], "(")+1:strings.LastIndex(lines[0], ":")]+
			`:22): the first of 63980 more unknown keys, not listed`) {
		t.Errorf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
}

// TestLoadRefusesLargeInputs refuses a file above MaxFileSize without
// reading it (a 100 MB `site`), a directory, and values, lists, keys and
// nesting beyond their bounds, from the file and the environment.
func TestLoadRefusesLargeInputs(t *testing.T) {
	t.Parallel()
	huge := writeFile(t, "site: ")
	if err := os.Truncate(huge, 100<<20); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", MaxValueLength+1)
	for _, c := range []struct {
		name string
		src  Sources
		want string
	}{
		{"a 100 MB file", Sources{File: huge},
			"config: file " + huge + ": more than 104857600 bytes: a configuration file may have at most 1048576 bytes (1 MiB)"},
		{"a directory", Sources{File: t.TempDir()}, "is a directory: want a YAML file"},
		{"a long site", Sources{File: writeFile(t, "site: "+long+"\n")},
			`config: site = "` + long[:32] + `…" (`},
		{"a long site from the environment", Sources{Environ: []string{"ECAGENT_SITE=" + long}},
			`config: site = "` + long[:32] + `…" (ECAGENT_SITE): is 4097 bytes long: at most 4096 are allowed`},
		{"a long list item", Sources{File: writeFile(t, "bus:\n  devices: [EK1100, "+long+"]\n")},
			`config: bus.devices[1] = "`},
		{"a long list", Sources{File: writeFile(t, "bus:\n  devices: ["+strings.Repeat("EK1100, ", MaxListItems)+"EK1100]\n")},
			"line 2: bus.devices is a list of 4097 items: at most 4096 are allowed"},
		{"a long key", Sources{File: writeFile(t, "mqtt:\n  "+strings.Repeat("k", MaxKeyLength+1)+": 1\n")},
			"line 2: a key of 129 bytes in mqtt: at most 128 are allowed"},
		{"deep nesting", Sources{File: writeFile(t, "site: "+strings.Repeat("[", MaxDepth+2)+strings.Repeat("]", MaxDepth+2)+"\n")},
			"is nested more than 16 levels deep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := loadWithin(t, c.src, time.Second)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// TestLoadContextIsInterrupted loads from a FIFO nobody writes (a load
// that does not end by itself) and cancels: LoadContext returns at once
// with the cause.
func TestLoadContextIsInterrupted(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "config.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		// Let the background load finish: open the writing end and close it.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_ = w.Close()
		}
	})
	stop := errors.New("interrupt signal received")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { _, err := LoadContext(ctx, Sources{File: fifo}); done <- err }()
	cancel(stop)
	select {
	case err := <-done:
		if !errors.Is(err, stop) || !strings.Contains(err.Error(), "config: loading interrupted") {
			t.Errorf("LoadContext: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LoadContext did not return after the cancellation")
	}
	if _, err := LoadContext(context.Background(), Sources{File: writeFile(t, "site: a\n")}); err != nil {
		t.Errorf("LoadContext of a good file: %v", err)
	}
}
