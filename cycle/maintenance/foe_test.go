package maintenance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/foe"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// pattern returns n bytes of a deterministic pattern.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13) ^ 0x3C
	}
	return b
}

// TestFoEWriteFailsThenRetries writes a file to a simulated AKD whose
// boot loader refuses the second packet (disk full): the error carries
// the FoE code, the slave is back in INIT, and the retry is stored whole.
func TestFoEWriteFailsThenRetries(t *testing.T) {
	s := newSegment(t, "EK1100", "AKD")
	data := pattern(3000)
	write := Request{Op: OpFoEWrite, Slave: 1, Name: "fw.bin", Data: data, Write: true}
	if err := s.do(t, Request{Op: OpFoEWrite, Slave: 1, Name: "fw.bin", Data: data}, &FoEResult{}); err == nil {
		t.Fatal("FoE write without Write was carried out")
	}
	if err := s.seg.Devices()[1].FoEErrorAt(2, uint32(foe.ErrDiskFull)); err != nil {
		t.Fatal(err)
	}
	err := s.do(t, write, &FoEResult{})
	if code, meaning, ok := FoECode(err); !ok || code != uint32(foe.ErrDiskFull) || meaning == "" {
		t.Fatalf("write with a refused packet: %v, want FoE error %#x", err, foe.ErrDiskFull)
	}
	if st := s.m.Slaves()[1].State().String(); st != "INIT" {
		t.Errorf("after the failed write the slave is in %s, want INIT", st)
	}
	var calls []int
	ctx := WithProgress(context.Background(), func(done, total int) { calls = append(calls, done) })
	raw, err := s.h.Call(ctx, write, 1234)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	var res FoEResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Bytes != 3000 || res.State != "INIT" || len(calls) != 3 || calls[2] != 3000 {
		t.Errorf("retry: %+v, progress %v", res, calls)
	}
	var rd FoEResult
	if err := s.do(t, Request{Op: OpFoERead, Slave: 1, Name: "fw.bin"}, &rd); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rd.Data, data) {
		t.Errorf("read back %d bytes differing from the %d written", len(rd.Data), len(data))
	}
	if n := len(s.ev.evs); n != 3 {
		t.Errorf("%d maintenance events, want 3 (two writes, a read)", n)
	}
}

// TestFoEOverSocket writes and reads through the control socket with
// progress lines, and gets an FoE error back with its code.
func TestFoEOverSocket(t *testing.T) {
	s := newSegment(t, "EK1100", "AKD")
	_, ctx, cl, _ := s.serveAndDial(t)
	data := pattern(5000)
	var last Progress
	n := 0
	if _, err := cl.CallProgress(ctx, Request{Op: OpFoEWrite, Slave: 1, Name: "a", Data: data, Write: true},
		func(d, tot int) { n, last = n+1, Progress{d, tot} }); err != nil {
		t.Fatal(err)
	}
	if n != 5 || last != (Progress{5000, 5000}) {
		t.Errorf("%d progress lines ending at %+v, want 5 ending at 5000/5000", n, last)
	}
	raw, err := cl.CallProgress(ctx, Request{Op: OpFoERead, Slave: 1, Name: "a"}, nil)
	var res FoEResult
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err != nil || !bytes.Equal(res.Data, data) {
		t.Fatalf("read back: %v, %d bytes", err, len(res.Data))
	}
	_, err = cl.CallProgress(ctx, Request{Op: OpFoERead, Slave: 1, Name: "missing"}, nil)
	if code, _, ok := FoECode(err); !ok || code != uint32(foe.ErrNotFound) {
		t.Errorf("read of a missing file: %v, want FoE error not found", err)
	}
}

// TestFoEUnderCycleHoldsTheSlave: the handler of a running cycle
// (WithImage) writes the file like any other and gives the slave back
// to recovery afterwards.
func TestFoEUnderCycleHoldsTheSlave(t *testing.T) {
	s := newSegment(t, "EK1100", "AKD")
	s.h.WithImage(func([]byte) (uint64, bool) { return 0, false })
	var res FoEResult
	if err := s.do(t, Request{Op: OpFoEWrite, Slave: 1, Name: "a", Data: pattern(3000), Write: true}, &res); err != nil {
		t.Fatalf("FoE write under a cycle: %v", err)
	}
	if res.Bytes != 3000 || s.m.Slaves()[1].Held() {
		t.Errorf("wrote %d bytes, slave still held: %v", res.Bytes, s.m.Slaves()[1].Held())
	}
}

// TestFoERefusedBeforeLeavingState: FoE with an EL4132 (a mailbox, no
// bootstrap mailbox) is refused from its SII while the slave stays in
// PREOP, and reports no maintenance event; BOOT requested with states
// likewise.
func TestFoERefusedBeforeLeavingState(t *testing.T) {
	s := newSegment(t, "EK1100", "EL4132")
	if err := s.m.RequestState(context.Background(), esc.StatePreOp); err != nil {
		t.Fatal(err)
	}
	for _, req := range []Request{
		{Op: OpFoERead, Slave: 1, Name: "fw.bin"},
		{Op: OpFoEWrite, Slave: 1, Name: "fw.bin", Data: pattern(10), Write: true},
		{Op: OpStates, Slave: 1, State: "BOOT", Write: true},
	} {
		err := s.do(t, req, &FoEResult{})
		if !errors.Is(err, master.ErrNoBootstrap) {
			t.Errorf("%s on an EL4132: %v, want ErrNoBootstrap", req.Op, err)
		}
		if st := s.seg.Devices()[1].State(); st != esc.StatePreOp {
			t.Errorf("%s: the EL4132 is in %v, want PREOP: its state was touched before the check", req.Op, st)
		}
	}
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	if len(s.ev.evs) != 0 {
		t.Errorf("refused requests reported events: %+v", s.ev.evs)
	}
}

// TestStatesReportsMaintenanceState: a state request is reported as a
// maintenance-state event with the state requested, before it is made.
func TestStatesReportsMaintenanceState(t *testing.T) {
	s := newSegment(t, "EK1100", "EL2004")
	if err := s.do(t, Request{Op: OpStates, Slave: 1, State: "PREOP", Write: true}, &StatesResult{}); err != nil {
		t.Fatal(err)
	}
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	if len(s.ev.evs) != 1 || s.ev.evs[0].Kind != shm.EventMaintenanceState || s.ev.evs[0].Slave != 1 ||
		esc.DecodeALStatus([]byte{byte(s.ev.evs[0].ALState), byte(s.ev.evs[0].ALState >> 8)}).State != esc.StatePreOp ||
		s.ev.evs[0].TextString() != "states PREOP" {
		t.Errorf("events %+v, want one maintenance-state event to PREOP", s.ev.evs)
	}
}
