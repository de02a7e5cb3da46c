package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/master/sim"
)

var update = flag.Bool("update", false, "rewrite "+configDocPath+" from the code")

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// TestConfigDoc keeps docs/configuration.md equal to the schema the
// loader validates with.
func TestConfigDoc(t *testing.T) {
	var got bytes.Buffer
	if err := writeConfigDoc(&got, config.Describe(sim.Models())); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", configDocPath)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("%s is out of date: run go test ./cmd/ecagent -run TestConfigDoc -update (%v)", configDocPath, err)
	}
}
