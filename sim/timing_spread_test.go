package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// The times of issue 37, measured on the real devices: each drawn time
// lies in the real spread, the draws spread, and one seed gives the same
// times every run.

// pollStep is how finely the timing tests look, in ns.
const pollStep = 5_000

// seededSeg is a segment of one device model at 0x1001 with the seed,
// on a clock the test moves.
func seededSeg(tb testing.TB, model string, seed uint64) (*Segment, *int64) {
	tb.Helper()
	return clockedSeg(tb, []string{model}, WithSeed(seed))
}

// until polls every pollStep from *now until done reports true and
// returns the time it took, failing after limit ns.
func until(tb testing.TB, now *int64, limit int64, done func() bool) int64 {
	tb.Helper()
	start := *now
	for *now-start <= limit {
		if done() {
			return *now - start
		}
		*now += pollStep
	}
	tb.Fatalf("not done within %d ns", limit)
	return 0
}

// stateChangeTime is how long the device takes from a PREOP request to
// AL status PREOP.
func stateChangeTime(tb testing.TB, model string, seed uint64) int64 {
	seg, now := seededSeg(tb, model, seed)
	siiMailboxSMs(tb, seg, 0x1001)
	*now = 10_000_000
	one(tb, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x02)))
	return until(tb, now, 50_000_000, func() bool { return alStatus(tb, seg, 0x1001) == 0x02 })
}

// mailboxTime is how long the device takes from an SDO upload request
// (0x1018:01) to its answer filling the send mailbox.
func mailboxTime(tb testing.TB, model string, seed uint64) int64 {
	seg, now := seededSeg(tb, model, seed)
	mb := siiMailboxSMs(tb, seg, 0x1001)
	one(tb, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x02)))
	*now = 100_000_000
	if st := alStatus(tb, seg, 0x1001); st != 0x02 {
		tb.Fatalf("%s: AL status %#04x, want PREOP", model, st)
	}
	msg := make([]byte, mb.ReceiveSize)
	binary.LittleEndian.PutUint16(msg, 10)
	msg[5] = mbxTypeCoE // counter 0: a master that does not count, each request served
	binary.LittleEndian.PutUint16(msg[6:], coeSDORequest<<12)
	copy(msg[8:], []byte{0x40, 0x18, 0x10, 0x01})
	one(tb, seg, phys(wire.FPWR, 0x1001, mb.ReceiveOffset, msg))
	return until(tb, now, 50_000_000, func() bool {
		return one(tb, seg, phys(wire.FPRD, 0x1001, 0x080D, []byte{0})).Data[0]&smStatusFull != 0
	})
}

// siiReadTime is how long an EEPROM read keeps 0x0502 busy.
func siiReadTime(tb testing.TB, model string, seed uint64) int64 {
	seg, now := seededSeg(tb, model, seed)
	*now = 1_000_000
	siiCommand(tb, seg, 0x1001, 0x0100, 0)
	return until(tb, now, 5_000_000, func() bool { return siiStatus(tb, seg, 0x1001)&0x8000 == 0 })
}

// TestTimesLieInTheRealSpread: for many seeds, every drawn time lies in
// the spread the real devices showed (issue 37), to the poll step, and
// the draws are not all the same.
func TestTimesLieInTheRealSpread(t *testing.T) {
	const ms = 1_000_000
	for _, c := range []struct {
		what    string
		model   string
		measure func(testing.TB, string, uint64) int64
		lo, hi  int64
	}{
		{"SII read busy", "EL1004", siiReadTime, 681_000, 695_000},
		{"SII read busy", "EK1100", siiReadTime, 681_000, 695_000},
		{"mailbox answer", "EK1914", mailboxTime, 550_000, 6_900_000},
		{"mailbox answer", "EL3004", mailboxTime, 440_000, 850_000},
		{"mailbox answer", "AKD", mailboxTime, 1_410_000, 2_940_000},
		{"mailbox answer", "LAN9252", mailboxTime, 36_600_000, 39_500_000},
		{"AL INIT→PREOP", "EK1914", stateChangeTime, 0, 1_480_000},
		{"AL INIT→PREOP", "EL3004", stateChangeTime, 0, 300_000},
		{"AL INIT→PREOP", "AKD", stateChangeTime, 0, 6_200_000},
		{"AL INIT→PREOP", "LAN9252", stateChangeTime, 11_700_000, 18_500_000},
	} {
		seen := map[int64]bool{}
		for seed := range uint64(12) {
			got := c.measure(t, c.model, seed)
			if got < c.lo || got > c.hi+pollStep {
				t.Errorf("%s %s, seed %d: %.3f ms, want %.3f–%.3f ms", c.model, c.what, seed,
					float64(got)/ms, float64(c.lo)/ms, float64(c.hi)/ms)
			}
			seen[got] = true
		}
		if len(seen) < 2 {
			t.Errorf("%s %s: the same time for 12 seeds, want a spread", c.model, c.what)
		}
	}
}

// TestSameSeedSameTimes: one seed gives the same times on every run.
func TestSameSeedSameTimes(t *testing.T) {
	for _, seed := range []uint64{1, 7, 1 << 40} {
		a := []int64{mailboxTime(t, "EK1914", seed), stateChangeTime(t, "AKD", seed), siiReadTime(t, "EL3004", seed)}
		b := []int64{mailboxTime(t, "EK1914", seed), stateChangeTime(t, "AKD", seed), siiReadTime(t, "EL3004", seed)}
		if a[0] != b[0] || a[1] != b[1] || a[2] != b[2] {
			t.Errorf("seed %d: %v, then %v", seed, a, b)
		}
	}
}
