package test

import (
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/cycle/process"
)

// pdPayload is the JSON scheme's process-data payload.
type pdPayload struct {
	TS     int64          `json:"ts"`
	Seq    uint64         `json:"seq"`
	Cycle  uint64         `json:"cycle"`
	Values map[string]any `json:"values"`
}

func decodePD(t *testing.T, m mqtttest.Message) pdPayload {
	t.Helper()
	var pd pdPayload
	if err := json.Unmarshal(m.Payload, &pd); err != nil {
		t.Fatalf("%s: %v: %s", m.Topic, err, m.Payload)
	}
	return pd
}

// killOrphanCycle stops the cycle process (and with it the simulator) an
// agent killed with SIGKILL left running on the segment at shmPath.
func killOrphanCycle(t *testing.T, shmPath string) {
	t.Helper()
	info, err := process.ReadBusInfo(process.BusInfoPath(shmPath))
	if err == nil && info.CyclePID > 0 {
		_ = syscall.Kill(info.CyclePID, syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(info.CyclePID, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		_ = syscall.Kill(info.CyclePID, syscall.SIGKILL)
	}
	for _, p := range []string{shmPath, process.BusInfoPath(shmPath), shmPath + ".cycle.json", maintenance.SocketPath(shmPath), maintenance.SocketDir(shmPath)} {
		_ = os.Remove(p)
	}
}

// stopAgent stops an agent with SIGTERM and waits for it.
func stopAgent(t *testing.T, a *agentProc) {
	t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		<-done
		t.Errorf("the agent did not stop in time:\n%s", a.log())
	}
}
