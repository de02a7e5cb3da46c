package test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/sim"
)

const realSII = "../testdata/real-hw/sii"

// referenceSet is the acontis reference segment the agent runs by default.
var referenceSet = []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}

// simOnWire serves a simulated segment of devs on the wire's far end,
// inside its namespace, until the test ends.
func simOnWire(t *testing.T, w wire, devs []*sim.Device) *sim.Segment {
	t.Helper()
	return simOnWireWith(t, w, devs)
}

// referenceOnWire serves the simulated reference segment on a new veth
// pair named after tag, and returns the pair, the devices (whose inputs
// and outputs the test sets and reads) and the segment.
func referenceOnWire(t *testing.T, tag string) (wire, []*sim.Device, *sim.Segment) {
	t.Helper()
	w := newWire(t, tag)
	devs, err := sim.ParseDevices(referenceSet)
	if err != nil {
		t.Fatal(err)
	}
	return w, devs, simOnWire(t, w, devs)
}

// masterOnWire opens the master's end; qdisc bypass is off so that tshark
// on the same interface sees the master's own frames too.
func masterOnWire(t *testing.T, w wire) *master.Master {
	t.Helper()
	cfg := link.DefaultConfig()
	cfg.QdiscBypass = false
	l, err := link.Open(w.MasterEnd, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := master.New(l, &master.Config{Timeout: 50 * time.Millisecond, SIITimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(); _ = l.Close() })
	return m
}

// capture records the master end with tshark until stop is called, and
// returns the capture file's path.
func capture(t *testing.T, iface string) (path string, stop func()) {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("needs tshark (Debian package tshark) to check frames with Wireshark's dissector")
	}
	path = filepath.Join(t.TempDir(), "wire.pcapng")
	if dir := os.Getenv("ECAGENT_KEEP_CAPTURE"); dir != "" {
		path = filepath.Join(dir, t.Name()+".pcapng")
	}
	cmd := exec.Command("tshark", "-i", iface, "-f", "ether proto 0x88a4", "-w", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "Capturing on") {
				close(ready)
				signalled = true
			}
		}
		if !signalled {
			close(ready)
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("tshark did not start capturing within 30 s")
	}
	time.Sleep(200 * time.Millisecond) // the capture filter is in place once it says so; leave a margin
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		time.Sleep(300 * time.Millisecond) // let the last frames reach the file
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	return path, stop
}

// checkDissector runs Wireshark's dissector over the capture and fails on
// any malformed packet or expert warning/error; it returns how many
// EtherCAT frames and datagrams it decoded.
func checkDissector(t *testing.T, path string) (frames, datagrams int) {
	t.Helper()
	// stdout only: tshark warns on stderr about running as root.
	out, err := exec.Command("tshark", "-r", path, "-Y", "_ws.malformed || _ws.expert.severity >= 0x00600000",
		"-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	if bad := strings.TrimSpace(string(out)); bad != "" {
		lines := strings.Split(bad, "\n")
		t.Errorf("tshark flags %d frames as malformed or with expert warnings/errors, e.g.:\n%s",
			len(lines), strings.Join(lines[:min(10, len(lines))], "\n"))
	}
	out, err = exec.Command("tshark", "-r", path, "-Y", "ecat", "-T", "fields", "-e", "ecat.cmd").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		frames++
		datagrams += len(strings.Split(line, ","))
	}
	return frames, datagrams
}
