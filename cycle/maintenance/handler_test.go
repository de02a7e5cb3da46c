package maintenance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport/simbus"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
	"github.com/ecagent/ecagent/sim"
)

// segment is a simulated segment of devices and a scanned master on it.
type segment struct {
	seg *sim.Segment
	m   *master.Master
	h   *Handler
	ev  *events
}

// events collects what a Handler reports.
type events struct {
	mu  sync.Mutex
	evs []shm.Event
}

func (e *events) Report(ev shm.Event) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return true
}

func newSegment(t *testing.T, devices ...string) *segment {
	t.Helper()
	_, seg, end := simbus.Serve(t, devices)
	// Generous timeouts: the tests share two cores with others.
	m, err := master.New(end, &master.Config{Timeout: time.Second, SIITimeout: time.Second, Logger: slogDiscard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if _, err := m.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	return &segment{seg: seg, m: m, h: NewHandler(m, "", ev), ev: ev}
}

// do runs req through Call and decodes its result into res.
func (s *segment) do(t *testing.T, req Request, res any) error {
	t.Helper()
	raw, err := s.h.Call(context.Background(), req, 1234)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, res); err != nil {
		t.Fatal(err)
	}
	return nil
}

// TestSIIReadRealImages dumps every real SII image loaded into the
// simulator and gets the same bytes back.
func TestSIIReadRealImages(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/real-hw/sii/*.bin")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no SII images: %v", err)
	}
	s := newSegment(t, paths...)
	for i, p := range paths {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var res SIIResult
		if err := s.do(t, Request{Op: OpSIIRead, Slave: i}, &res); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !bytes.Equal(res.Data, want) {
			t.Errorf("%s: read %d bytes, differing from the image's %d", p, len(res.Data), len(want))
		}
	}
}

// TestAliasSurvivesPowerCycle writes an alias, cuts the slave's power and
// brings it back: the ESC loads the alias from the EEPROM again.
func TestAliasSurvivesPowerCycle(t *testing.T) {
	s := newSegment(t, "EK1100", "EL2004", "EL1014")
	if err := s.do(t, Request{Op: OpAlias, Slave: 1, Alias: 77}, &AliasResult{}); err == nil {
		t.Fatal("alias without Write was carried out")
	}
	var res AliasResult
	if err := s.do(t, Request{Op: OpAlias, Slave: 1, Alias: 77, Write: true}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Alias != 77 {
		t.Fatalf("alias after reload %d, want 77", res.Alias)
	}
	f := s.seg.Faults()
	if err := f.Disappear(1); err != nil {
		t.Fatal(err)
	}
	if err := f.Return(1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.m.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.m.Slaves()[1].Alias; got != 77 {
		t.Errorf("alias after a power cycle %d, want 77", got)
	}
	var img SIIResult
	if err := s.do(t, Request{Op: OpSIIRead, Slave: 1}, &img); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckImage(img.Data); err != nil {
		t.Errorf("image after the alias write: %v", err)
	}
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	if len(s.ev.evs) != 1 || s.ev.evs[0].Kind != shm.EventMaintenance || s.ev.evs[0].Value != 1234 ||
		s.ev.evs[0].Slave != 1 || s.ev.evs[0].TextString() != "alias 77" {
		t.Errorf("events %+v, want one maintenance event of uid 1234", s.ev.evs)
	}
}

// TestSIIWrite writes an image back (nothing changes), refuses another
// device's image unless forced and a corrupt one always.
func TestSIIWrite(t *testing.T) {
	s := newSegment(t, "EK1100", "EL2004", "EL1014")
	var own SIIResult
	if err := s.do(t, Request{Op: OpSIIRead, Slave: 1}, &own); err != nil {
		t.Fatal(err)
	}
	var other SIIResult
	if err := s.do(t, Request{Op: OpSIIRead, Slave: 2}, &other); err != nil {
		t.Fatal(err)
	}
	var res SIIResult
	if err := s.do(t, Request{Op: OpSIIWrite, Slave: 1, Data: own.Data, Write: true}, &res); err != nil || res.Words != 0 {
		t.Errorf("writing its own image back: %d words changed, %v", res.Words, err)
	}
	if err := s.do(t, Request{Op: OpSIIWrite, Slave: 1, Data: other.Data, Write: true}, &res); err == nil {
		t.Error("another device's image was written without Force")
	}
	bad := append([]byte(nil), own.Data...)
	bad[checksumAt]++
	if err := s.do(t, Request{Op: OpSIIWrite, Slave: 1, Data: bad, Write: true, Force: true}, &res); err == nil {
		t.Error("an image with a wrong checksum was written")
	}
	changed := append([]byte(nil), own.Data...)
	changed[0x7F0] ^= 0xFF // a byte beyond the categories: changes nothing the device uses
	if err := s.do(t, Request{Op: OpSIIWrite, Slave: 1, Data: changed, Write: true}, &res); err != nil || res.Words != 1 {
		t.Fatalf("one word changed: %d words written, %v", res.Words, err)
	}
	var back SIIResult
	if err := s.do(t, Request{Op: OpSIIRead, Slave: 1}, &back); err != nil || !bytes.Equal(back.Data, changed) {
		t.Errorf("read back after the write differs (%v)", err)
	}
}

// TestServerOverSocket serves a handler on a Unix socket: a read, a write
// refused without Write, the peer's uid in the event of a write.
func TestServerOverSocket(t *testing.T) {
	s := newSegment(t, "EK1100", "EL2004")
	shm, ctx, cl, stop := s.serveAndDial(t)
	if fi, err := os.Stat(SocketPath(shm)); err != nil || fi.Mode().Perm() != SocketMode {
		t.Fatalf("socket %v, %v", fi, err)
	}
	if fi, err := os.Lstat(SocketDir(shm)); err != nil || !fi.IsDir() || fi.Mode().Perm() != DirMode {
		t.Fatalf("socket directory %v, %v", fi, err)
	}
	raw, err := cl.Call(ctx, Request{Op: OpRegRead, Slave: 1, Addr: 0x0010, Len: 2})
	var reg RegResult
	if err != nil || json.Unmarshal(raw, &reg) != nil || !bytes.Equal(reg.Data, []byte{0x02, 0x10}) {
		t.Errorf("station address of slave 1: %s, %v", raw, err)
	}
	_, err = cl.Call(ctx, Request{Op: OpRegWrite, Slave: 1, Addr: 0x0f80, Data: []byte{1}})
	if _, ok := err.(*RemoteError); !ok {
		t.Errorf("write without Write: %v, want a refusal", err)
	}
	if _, err := cl.Call(ctx, Request{Op: OpRegWrite, Slave: 1, Addr: 0x0f80, Data: []byte{1}, Write: true}); err != nil {
		t.Error(err)
	}
	s.ev.mu.Lock()
	if len(s.ev.evs) != 1 || s.ev.evs[0].Value != uint64(os.Getuid()) {
		t.Errorf("events %+v, want one of uid %d", s.ev.evs, os.Getuid())
	}
	s.ev.mu.Unlock()
	if _, err := Listen(shm, s.h, slogDiscard()); err == nil {
		t.Error("a second server took the socket of a live one")
	}
	stop()
	if _, err := os.Lstat(SocketDir(shm)); !os.IsNotExist(err) {
		t.Errorf("socket or its directory left behind: %v", err)
	}
}

// serveAndDial serves s's handler on the socket of a fresh segment file
// and dials it. It returns the segment file, the context to call with,
// the client and a function that stops the server and waits for it;
// everything stops when the test ends.
func (s *segment) serveAndDial(t *testing.T) (shm string, ctx context.Context, cl *Client, stop func()) {
	t.Helper()
	shm = segmentFile(t)
	srv, err := Listen(shm, s.h, slogDiscard())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	served := srv.Start(ctx)
	stop = sync.OnceFunc(func() { cancel(); <-served })
	t.Cleanup(stop)
	if cl, err = Dial(ctx, shm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return shm, ctx, cl, stop
}

func slogDiscard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestRefusalOverSocket: a slave's refusal of a state comes back as an
// error that unwraps to the master's *ALStateError, as in-process.
func TestRefusalOverSocket(t *testing.T) {
	s := newSegment(t, "EK1100", "EL4132")
	// A slave whose application keeps refusing OP (0x001B, sync manager
	// watchdog), as one that is faulty until repaired.
	if err := s.seg.Faults().HoldALError(1, 0x001B); err != nil {
		t.Fatal(err)
	}
	_, ctx, cl, _ := s.serveAndDial(t)
	_, err := cl.Call(ctx, Request{Op: OpStates, Slave: 1, State: "OP", Write: true})
	var refused *master.ALStateError
	if !errors.As(err, &refused) || refused.Position != 1 || refused.Code != 0x001B {
		t.Errorf("OP of an EL4132 holding an AL error: %v (%+v), want its refusal with code 0x001B", err, refused)
	}
}
