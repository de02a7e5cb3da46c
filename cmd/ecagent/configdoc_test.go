package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/sim"
)

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// TestConfigDoc keeps docs/configuration.md equal to the schema the
// loader validates with.
func TestConfigDoc(t *testing.T) {
	var got bytes.Buffer
	if err := writeConfigDoc(&got, config.Describe(sim.Models())); err != nil {
		t.Fatal(err)
	}
	testsupport.Golden(t, filepath.Join("..", "..", configDocPath), got.Bytes())
}
