package test

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
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
