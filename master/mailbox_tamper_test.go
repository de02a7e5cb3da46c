package master_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/coe"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/sim"
	"github.com/ecagent/ecagent/master/wire"
)

// tamperLink passes frames through, except that it hands the data of the
// next answered read of a send mailbox (FPRD of 0x1080) to tamper once.
type tamperLink struct {
	link.Link
	mu     sync.Mutex
	tamper func(data []byte)
}

func (l *tamperLink) arm(f func(data []byte)) {
	l.mu.Lock()
	l.tamper = f
	l.mu.Unlock()
}

func (l *tamperLink) Recv(buf []byte, deadline time.Time) (int, error) {
	n, err := l.Link.Recv(buf, deadline)
	if err != nil {
		return n, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tamper == nil {
		return n, nil
	}
	var f wire.Frame
	if f.Decode(buf[:n]) != nil {
		return n, nil
	}
	it := f.Datagrams()
	var d wire.Datagram
	for it.Next(&d) {
		if d.Command == wire.FPRD && d.ADO() == 0x1080 && d.WKC == 1 && len(d.Data) == 0x80 {
			l.tamper(d.Data)
			l.tamper = nil
		}
	}
	return n, nil
}

// syncBuffer is a bytes.Buffer safe for the logger's use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSDOUnexpectedAnswers replaces the slave's answer with other mailbox
// messages and checks that the master reports each one and that the
// mailbox works again afterwards.
func TestSDOUnexpectedAnswers(t *testing.T) {
	devs, err := sim.ParseDevices([]string{"EK1100", "EL4132"})
	if err != nil {
		t.Fatal(err)
	}
	seg := sim.NewSegment(devs)
	a, b := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = seg.Serve(ctx, b); close(done) }()
	tl := &tamperLink{Link: a}
	var logs syncBuffer
	m, err := master.New(tl, &master.Config{Timeout: time.Second, CycleTimeout: time.Second, SIITimeout: time.Second,
		StateTimeout: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(); cancel(); _ = b.Close(); <-done })
	if err := m.BringUp(ctx); err != nil {
		t.Fatal(err)
	}
	el4132 := m.Slaves()[1]

	put := func(msg []byte) func([]byte) {
		return func(data []byte) { clear(data); copy(data, msg) }
	}
	emergency := []byte{10, 0, 0, 0, 0, 0x33, 0x00, 0x10, 0x10, 0x82, 0x11, 1, 2, 3, 4, 5}
	otherObject := make([]byte, 16)
	other := coe.SDO{Specifier: coe.ResponseInitiateUpload, Index: 0x1009, Expedited: true, SizeIndicated: true, Data: []byte{1}}
	if _, err := coe.EncodeMessage(otherObject, 1, false, &other); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		tamper func([]byte)
		check  func(error) bool
		log    string
	}{
		{"mailbox error reply", put([]byte{4, 0, 0, 0, 0, 0x10, 1, 0, 4, 0}),
			func(err error) bool {
				var me *coe.MailboxError
				return errors.As(err, &me) && me.Code == 4
			}, ""},
		{"emergency instead of the answer", put(emergency),
			func(err error) bool { return errors.Is(err, master.ErrMailboxTimeout) }, `error_code=0x8210`},
		{"answer for another object", put(otherObject),
			func(err error) bool { return errors.Is(err, master.ErrUnexpectedResponse) }, ""},
		{"malformed answer", put([]byte{0xFF, 0x7F, 0, 0, 0, 0x13}),
			func(err error) bool { return errors.Is(err, coe.ErrShort) }, ""},
		{"SDO information instead of the answer", put([]byte{2, 0, 0, 0, 0, 0x13, 0x00, 0x80}),
			func(err error) bool { return errors.Is(err, master.ErrMailboxTimeout) }, "ignoring a CoE message"},
	}
	for _, c := range cases {
		tl.arm(c.tamper)
		_, err := m.SDOUpload(ctx, el4132, 0x1018, 1)
		if !c.check(err) {
			t.Errorf("%s: error %v", c.name, err)
		}
		if c.log != "" && !bytes.Contains([]byte(logs.String()), []byte(c.log)) {
			t.Errorf("%s: log does not contain %q:\n%s", c.name, c.log, logs.String())
		}
		if got, err := m.SDOUpload(ctx, el4132, 0x1018, 1); err != nil || !bytes.Equal(got, []byte{2, 0, 0, 0}) {
			t.Errorf("%s: next upload = % x, %v", c.name, got, err)
		}
	}
}
