package test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileConfigFiles runs `ecagent run --config` on files that held
// the agent for minutes or were accepted: 2 million top-level keys (63 MB,
// 591 s at 100 % CPU before), 80 000 keys within 1 MiB (about 20 s of
// yaml.v3's quadratic duplicate check), a 100 MB site, a directory. Each
// is refused within seconds with an error naming the bound.
func TestHostileConfigFiles(t *testing.T) {
	dir := t.TempDir()
	keys := func(name string, n int) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for i := range n {
			fmt.Fprintf(w, "key%07d: value%07d\n", i, i)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	site := filepath.Join(dir, "site.yaml")
	f, err := os.Create(site)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("site: ")
	_, _ = f.Write([]byte(strings.Repeat("x", 100<<20)))
	_ = f.Close()

	for _, c := range []struct {
		name, path, want string
	}{
		{"2 M keys", keys("many.yaml", 2_000_000), "a configuration file may have at most 1048576 bytes"},
		{"40 000 keys", keys("some.yaml", 40_000), "the top level is a mapping of 40000 keys: at most 256 are allowed"},
		{"a 100 MB site", site, "a configuration file may have at most 1048576 bytes"},
		{"a directory", dir, "is a directory: want a YAML file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, code := runWithin(t, 10*time.Second, "run", "--config", c.path, "--metrics.listen", "")
			if code != 2 || !strings.Contains(out, c.want) {
				t.Errorf("exit %d, want 2 and %q:\n%.500s", code, c.want, out)
			}
		})
	}
}
