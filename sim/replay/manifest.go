package replay

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Entry is one capture of a manifest with the devices it was made with.
type Entry struct {
	Capture string   // path of the capture
	Devices []string // device specs for sim.ParseDevices, SII paths resolved
}

// ReadManifest reads a manifest: one capture per line, its file name and
// the devices in ring order (comma separated, as `ecagent sim --devices`
// takes them); blank lines and lines starting with # are skipped. Paths,
// of captures and of SII images (*.bin), are relative to the manifest.
func ReadManifest(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("replay: manifest: %w", err)
	}
	dir := filepath.Dir(path)
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("replay: %s:%d: want CAPTURE DEVICES, got %q", path, n, line)
		}
		e := Entry{Capture: filepath.Join(dir, f[0])}
		for _, d := range strings.Split(f[1], ",") {
			if strings.HasSuffix(d, ".bin") && !filepath.IsAbs(d) {
				d = filepath.Join(dir, d)
			}
			e.Devices = append(e.Devices, d)
		}
		out = append(out, e)
	}
	return out, nil
}
