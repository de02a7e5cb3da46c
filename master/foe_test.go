package master_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/foe"
	"github.com/ecagent/ecagent/master"
)

// firmware returns n bytes of a deterministic pattern.
func firmware(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

// bootBench scans an EK1100 and a simulated AKD and takes the AKD to BOOT.
func bootBench(t *testing.T) (*bench, *master.Slave) {
	t.Helper()
	b := newBench(t, []string{"EK1100", "AKD"}, master.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.m.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	s := b.m.Slaves()[1]
	if err := b.m.EnterBoot(ctx, s); err != nil {
		t.Fatalf("EnterBoot: %v", err)
	}
	if st := b.devs[1].State(); st != esc.StateBootstrap {
		t.Fatalf("AKD in %v after EnterBoot, want BOOT", st)
	}
	return b, s
}

func TestFoEWriteReadInBoot(t *testing.T) {
	b, s := bootBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The AKD's bootstrap mailbox is 1 KiB: 1012 data bytes a packet. The
	// second file fills its packets exactly and ends in an empty one.
	for _, tc := range []struct {
		name string
		data []byte
	}{{"AKD.i00", firmware(3000, 0x5A)}, {"exact.bin", firmware(2*1012, 3)}, {"empty", nil}} {
		var calls, last int
		err := b.m.FoEWrite(ctx, s, tc.name, 0, tc.data, func(done, total int) {
			calls++
			if done < last || total != len(tc.data) {
				t.Errorf("%s: progress %d/%d after %d", tc.name, done, total, last)
			}
			last = done
		})
		if err != nil {
			t.Fatalf("FoEWrite %s: %v", tc.name, err)
		}
		if want := len(tc.data)/1012 + 1; calls != want || last != len(tc.data) {
			t.Errorf("%s: %d progress calls ending at %d, want %d ending at %d", tc.name, calls, last, want, len(tc.data))
		}
		if stored, _ := b.devs[1].File(tc.name); !bytes.Equal(stored, tc.data) {
			t.Errorf("%s: the drive stored %d bytes, want the %d written", tc.name, len(stored), len(tc.data))
		}
		got, err := b.m.FoERead(ctx, s, tc.name, 0)
		if err != nil {
			t.Fatalf("FoERead %s: %v", tc.name, err)
		}
		if !bytes.Equal(got, tc.data) {
			t.Errorf("%s: read back %d bytes, not the %d written", tc.name, len(got), len(tc.data))
		}
	}
	_, err := b.m.FoERead(ctx, s, "missing", 0)
	if fe, ok := errors.AsType[*foe.Error](err); !ok || fe.Code != foe.ErrNotFound {
		t.Errorf("read of a missing file: %v, want FoE error not found", err)
	}
}

func TestFoEInterruptedAndRetried(t *testing.T) {
	b, s := bootBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old, fw := firmware(1500, 1), firmware(5000, 2)
	if err := b.m.FoEWrite(ctx, s, "AKD.i00", 0, old, nil); err != nil {
		t.Fatal(err)
	}

	// The master stops after the second packet.
	stop, stopNow := context.WithCancel(ctx)
	err := b.m.FoEWrite(stop, s, "AKD.i00", 0, fw, func(done, _ int) {
		if done >= 2*1012 {
			stopNow()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted write: %v, want context.Canceled", err)
	}
	if got, _ := b.devs[1].File("AKD.i00"); !bytes.Equal(got, old) {
		t.Errorf("after the interrupted write the drive holds %d bytes, want the old %d", len(got), len(old))
	}

	// The drive refuses the third packet (flash full), then answers busy
	// twice (erasing): the failed write reports the drive's error, the
	// next one waits out the busy answers.
	if err := b.devs[1].FoEErrorAt(3, uint32(foe.ErrDiskFull)); err != nil {
		t.Fatal(err)
	}
	err = b.m.FoEWrite(ctx, s, "AKD.i00", 0, fw, nil)
	if fe, ok := errors.AsType[*foe.Error](err); !ok || fe.Code != foe.ErrDiskFull {
		t.Fatalf("write the drive refuses: %v, want FoE error disk full", err)
	}
	if err := b.devs[1].FoEBusy(2); err != nil {
		t.Fatal(err)
	}
	if err := b.m.FoEWrite(ctx, s, "AKD.i00", 0, fw, nil); err != nil {
		t.Fatalf("retry: %v", err)
	}
	got, err := b.m.FoERead(ctx, s, "AKD.i00", 0)
	if err != nil || !bytes.Equal(got, fw) {
		t.Fatalf("read back after the retry: %d bytes, %v; want the %d written", len(got), err, len(fw))
	}

	// Out of BOOT the boot loader does not run: "bootstrap only".
	if err := b.m.RequestSlaveState(ctx, s, esc.StatePreOp); err != nil {
		t.Fatal(err)
	}
	err = b.m.FoEWrite(ctx, s, "AKD.i00", 0, old, nil)
	if fe, ok := errors.AsType[*foe.Error](err); !ok || fe.Code != foe.ErrBootstrapOnly {
		t.Errorf("write in PREOP: %v, want FoE error bootstrap only", err)
	}
	if got, _ := b.devs[1].File("AKD.i00"); !bytes.Equal(got, fw) {
		t.Error("the refused write in PREOP changed the stored file")
	}
}

func TestFoENotSupported(t *testing.T) {
	b := newBench(t, []string{"EK1100", "EL2004"}, master.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.m.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.m.FoERead(ctx, b.m.Slaves()[1], "x", 0); !errors.Is(err, master.ErrNoFoE) {
		t.Errorf("FoE on an EL2004: %v, want ErrNoFoE", err)
	}
	if err := b.m.EnterBoot(ctx, b.m.Slaves()[1]); !errors.Is(err, master.ErrNoBootstrap) {
		t.Errorf("EnterBoot on an EL2004: %v, want ErrNoBootstrap", err)
	}
}

// TestEnterBootChecksBeforeLeavingState refuses BOOT to an EL4132 (a
// mailbox, no bootstrap mailbox in its SII) while it stays in PREOP: the
// SII says so before the slave's state is touched.
func TestEnterBootChecksBeforeLeavingState(t *testing.T) {
	b := newBench(t, []string{"EK1100", "EL4132"}, master.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.m.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.m.RequestState(ctx, esc.StatePreOp); err != nil {
		t.Fatal(err)
	}
	if err := b.m.EnterBoot(ctx, b.m.Slaves()[1]); !errors.Is(err, master.ErrNoBootstrap) {
		t.Errorf("EnterBoot on an EL4132: %v, want ErrNoBootstrap", err)
	}
	if st := b.devs[1].State(); st != esc.StatePreOp {
		t.Errorf("the EL4132 is in %v after the refusal, want PREOP: it was touched before the check", st)
	}
}
