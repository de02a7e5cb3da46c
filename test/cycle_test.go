package test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/sim"
)

// cycles is how many cyclic exchanges each wire test checks one by one.
const cycles = 10_000

func TestReferenceSetOverVeth(t *testing.T) {
	w, _, seg := referenceOnWire(t, "ref")
	pcap, stopCapture := capture(t, w.MasterEnd)
	m := masterInOP(t, w)
	runCycles(t, m, seg)
	stopCapture()
	frames, datagrams := checkDissector(t, pcap)
	// Every cyclic frame went out and came back, and bring-up frames too.
	if frames < 2*cycles {
		t.Errorf("tshark decoded %d EtherCAT frames (%d datagrams), want at least %d", frames, datagrams, 2*cycles)
	}
	t.Logf("tshark decoded %d frames, %d datagrams, none malformed", frames, datagrams)
}

func TestRealSIIImagesOverVeth(t *testing.T) {
	w := newWire(t, "sii")
	var specs []string
	for _, f := range []string{"ek1100.bin", "el2004.bin", "el2828.bin", "el2889.bin"} {
		specs = append(specs, filepath.Join(realSII, f))
	}
	devs, err := sim.ParseDevices(specs)
	if err != nil {
		t.Fatal(err)
	}
	seg := simOnWire(t, w, devs)
	m := masterInOP(t, w)
	wantOut := []int{0, 4, 8, 16}
	for i, s := range m.Slaves() {
		if s.OutputBits != wantOut[i] {
			t.Errorf("slave %d (%s): %d output bits, want %d", i, s.Name, s.OutputBits, wantOut[i])
		}
	}
	runCycles(t, m, seg)
}

// masterInOP opens the master's end of w and brings the segment to OP
// within a minute.
func masterInOP(t *testing.T, w wire) *master.Master {
	t.Helper()
	m := masterOnWire(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.BringUp(ctx); err != nil {
		t.Fatalf("bring-up: %v", err)
	}
	checkAllOp(t, m)
	return m
}

func checkAllOp(t *testing.T, m *master.Master) {
	t.Helper()
	for _, s := range m.Slaves() {
		if s.Status().State.String() != "OP" || s.Status().Error {
			t.Errorf("slave %d (%s) is %v after bring-up", s.Position, s.Name, s.Status())
		}
	}
}

// runCycles exchanges `cycles` frames back to back and checks each one:
// the working counter, that every output pattern the master writes is what
// the simulated terminals hold, and that inputs the terminals present reach
// the master's process image.
func runCycles(t *testing.T, m *master.Master, seg *sim.Segment) {
	t.Helper()
	img := m.Image()
	slaves := m.Slaves()
	devs := seg.Devices()
	want := m.Cyclic().ExpectedWKC()
	if want == 0 {
		t.Fatal("expected working counter is 0: nothing mapped")
	}
	bad := 0
	for c := 0; c < cycles; c++ {
		// A different output pattern every cycle, all slaves, all bits.
		for _, s := range slaves {
			for b := 0; b < s.OutputBits; b++ {
				if err := img.SetOutputBit(s, b, (c+b+s.Position)%3 == 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A different input pattern every 100 cycles.
		if c%100 == 0 {
			for i, s := range slaves {
				if s.InputBits > 0 {
					in := make([]byte, (s.InputBits+7)/8)
					for k := range in {
						in[k] = byte(c/100 + i + k)
					}
					devs[i].SetInputs(in)
				}
			}
		}
		res := m.ExchangeUntil(time.Now().Add(100 * time.Millisecond))
		if res.WKC != want || res.Lost != 0 || !res.OK() {
			bad++
			if bad <= 5 {
				t.Errorf("cycle %d: wkc %d/%d, lost %d, err %v", c, res.WKC, want, res.Lost, res.Err)
			}
			continue
		}
		if c%100 == 99 || c == cycles-1 {
			checkImage(t, c, m, seg)
		}
	}
	st := m.Stats()
	if bad > 0 || st.LostFrames != 0 || st.WKCErrors != 0 {
		t.Errorf("%d bad cycles of %d; master counts %d lost frames, %d WKC errors", bad, cycles, st.LostFrames, st.WKCErrors)
	}
}

// checkImage compares the master's process image with the simulated devices.
func checkImage(t *testing.T, cycle int, m *master.Master, seg *sim.Segment) {
	t.Helper()
	img := m.Image()
	for i, s := range m.Slaves() {
		d := seg.Devices()[i]
		if s.OutputBits > 0 {
			got := d.Outputs()
			for b := 0; b < s.OutputBits; b++ {
				want, _ := img.OutputBit(s, b)
				if have := got[b/8]&(1<<(b%8)) != 0; have != want {
					t.Fatalf("cycle %d: slave %d (%s) output bit %d is %v in the terminal, %v in the master", cycle, i, s.Name, b, have, want)
				}
			}
		}
		if s.InputBits > 0 {
			in := d.Inputs()
			for b := 0; b < s.InputBits; b++ {
				got, _ := img.InputBit(s, b)
				if want := in[b/8]&(1<<(b%8)) != 0; got != want {
					t.Fatalf("cycle %d: slave %d (%s) input bit %d is %v in the master, %v in the terminal", cycle, i, s.Name, b, got, want)
				}
			}
		}
	}
}
