package master

import (
	"encoding/binary"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// auxSegment answers the cyclic frames of a test master without
// allocating: LRW and the AL status read as a healthy segment would, the
// drift compensation FRMW with a system time that advances by tick per
// frame, 0x092C reads from diff, and the send mailboxes of the slaves
// (SM1 status byte and the mailbox area) from mbx.
type auxSegment struct {
	far      link.Link
	lrwWKC   uint16
	slaves   uint16 // AL status read working counter
	refTime  uint32 // FRMW address expected
	dcWKC    uint16
	tick     uint64
	wg       sync.WaitGroup
	mu       sync.Mutex
	sysTime  uint64
	diff     map[uint16]uint32 // by station; read only while serving
	mbx      map[uint16]*fakeMailbox
	sent     int // frames answered
	dupFrame bool
}

// fakeMailbox is one slave's send mailbox.
type fakeMailbox struct {
	offset  uint16
	msg     []byte // what a read-out returns (zero padded to the size)
	full    bool
	refill  bool // full again at the status poll after a read-out
	readOut int  // read-outs served
	empty   int  // read-outs of an empty mailbox (working counter 0)
}

func (s *auxSegment) serve() {
	defer s.wg.Done()
	buf := make([]byte, link.MaxFrameSize)
	for {
		n, err := s.far.Recv(buf, time.Time{})
		if err != nil {
			return
		}
		var f wire.Frame
		if f.Decode(buf[:n]) != nil {
			continue
		}
		s.mu.Lock()
		it := f.Datagrams()
		var d wire.Datagram
		for it.Next(&d) {
			s.answer(&d)
		}
		s.sent++
		s.mu.Unlock()
		_ = s.far.Send(buf[:n])
		if s.dupFrame {
			_ = s.far.Send(buf[:n])
		}
	}
}

// answer plays the segment's part in one datagram.
func (s *auxSegment) answer(d *wire.Datagram) {
	le := binary.LittleEndian
	switch d.Command {
	case wire.LRW:
		d.SetWKC(s.lrwWKC)
	case wire.BRD:
		d.Data[0] = uint8(esc.StateOp)
		d.SetWKC(s.slaves)
	case wire.FRMW:
		if d.Address != s.refTime {
			return
		}
		s.sysTime += s.tick
		le.PutUint64(d.Data, s.sysTime)
		d.SetWKC(s.dcWKC)
	case wire.FPRD:
		station, ado := d.ADP(), d.ADO()
		if ado == uint16(esc.RegDCSystemDiff) {
			if v, ok := s.diff[station]; ok {
				le.PutUint32(d.Data, v)
				d.SetWKC(1)
			}
			return
		}
		mb := s.mbx[station]
		switch {
		case mb == nil:
		case ado == regSendMailboxStatus:
			if mb.refill && !mb.full && mb.readOut > 0 {
				mb.full = true
			}
			if mb.full {
				d.Data[0] = smStatusMailboxFull
			}
			d.SetWKC(1)
		case ado == mb.offset:
			if !mb.full {
				mb.empty++
				return
			}
			clear(d.Data)
			copy(d.Data, mb.msg)
			mb.full = false
			mb.readOut++
			d.SetWKC(1)
		}
	}
}

// auxSlaves returns the reference set with mailboxes on the EK1100 (0) and
// the EL4132 (5), and a DC setup whose clocks are at 0, 3 and 5.
func auxSlaves() ([]*Slave, DCSetup) {
	slaves := referenceSet()
	for i, s := range slaves {
		s.Position, s.StationAddress = i, firstStationAddress+uint16(i)
	}
	slaves[0].HasMailbox, slaves[0].Mailbox = true, sii.Mailbox{ReceiveOffset: 0x1800, ReceiveSize: 256, SendOffset: 0x1900, SendSize: 256}
	slaves[5].HasMailbox, slaves[5].Mailbox = true, sii.Mailbox{ReceiveOffset: 0x1000, ReceiveSize: 128, SendOffset: 0x1080, SendSize: 128}
	setup := DCSetup{Reference: slaves[0]}
	for _, p := range []int{0, 3, 5} {
		setup.Clocks = append(setup.Clocks, DCClock{Slave: slaves[p]})
	}
	return slaves, setup
}

// auxBench is a master whose cyclic exchange carries the auxiliary
// datagrams, served by an auxSegment.
type auxBench struct {
	m   *Master
	cy  *Cyclic
	seg *auxSegment
}

// newAuxBench builds the bench; dc says whether the drift compensation is
// on. The segment answers with the working counters of a complete segment.
func newAuxBench(t testing.TB, slaves []*Slave, setup *DCSetup, maxData int) *auxBench {
	t.Helper()
	a, b := link.NewPipe()
	m, err := New(a, &Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout: time.Second, CycleTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l, err := mapProcessData(slaves, maxData)
	if err != nil {
		t.Fatal(err)
	}
	m.slaves = slaves
	m.image = newProcessImage(l.outBytes, l.inBytes)
	m.cyclic = newCyclic(m.bus, &acyclicQueue{}, m.image, l, m.cfg.CycleTimeout, m.cfg.Clock, &m.counters)
	m.cyclic.attach(m)
	seg := &auxSegment{far: b, lrwWKC: m.cyclic.ExpectedWKC(), slaves: uint16(len(slaves)), tick: 1000,
		sysTime: 800_000_000_000_000_000, diff: map[uint16]uint32{}, mbx: map[uint16]*fakeMailbox{}}
	if setup != nil {
		m.cyclic.enableDC(*setup)
		seg.refTime = wire.PhysicalAddress(setup.Reference.StationAddress, uint16(esc.RegDCSystemTime))
		seg.dcWKC = uint16(len(setup.Clocks))
		for _, c := range setup.Clocks {
			seg.diff[c.Slave.StationAddress] = 0
		}
	}
	for _, s := range slaves {
		if s.HasMailbox {
			seg.mbx[s.StationAddress] = &fakeMailbox{offset: s.Mailbox.SendOffset}
		}
	}
	seg.wg.Add(1)
	go seg.serve()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close(); seg.wg.Wait() })
	return &auxBench{m: m, cy: m.cyclic, seg: seg}
}

// put places msg into the send mailbox of the slave with that station.
func (b *auxBench) put(station uint16, msg []byte, refill bool) {
	b.seg.mu.Lock()
	defer b.seg.mu.Unlock()
	mb := b.seg.mbx[station]
	mb.msg, mb.full, mb.refill = msg, true, refill
}

// mailbox returns a copy of the fake mailbox of station.
func (b *auxBench) mailbox(station uint16) fakeMailbox {
	b.seg.mu.Lock()
	defer b.seg.mu.Unlock()
	return *b.seg.mbx[station]
}

// emergencyMessage encodes a mailbox message holding a CoE emergency.
func emergencyMessage(e coe.Emergency) []byte {
	b := make([]byte, coe.MailboxHeaderLen+coe.HeaderLen+coe.EmergencyLen)
	coe.MailboxHeader{Length: coe.HeaderLen + coe.EmergencyLen, Type: coe.TypeCoE, Counter: 3}.Encode(b)
	coe.Header{Service: coe.ServiceEmergency}.Encode(b[coe.MailboxHeaderLen:])
	e.Encode(b[coe.MailboxHeaderLen+coe.HeaderLen:])
	return b
}

// sdoResponseMessage encodes a mailbox message holding an SDO upload
// response, as a late answer to an abandoned request would be.
func sdoResponseMessage() []byte {
	b := make([]byte, coe.MailboxHeaderLen+coe.HeaderLen+coe.SDOHeaderLen)
	coe.MailboxHeader{Length: coe.HeaderLen + coe.SDOHeaderLen, Type: coe.TypeCoE, Counter: 2}.Encode(b)
	coe.Header{Service: coe.ServiceSDOResponse}.Encode(b[coe.MailboxHeaderLen:])
	b[coe.MailboxHeaderLen+coe.HeaderLen] = 0x4F // expedited upload, 1 byte
	binary.LittleEndian.PutUint16(b[coe.MailboxHeaderLen+coe.HeaderLen+1:], 0x1001)
	return b
}

func TestCyclicMailboxPolling(t *testing.T) {
	drive := coe.Emergency{ErrorCode: 0x2310, ErrorRegister: 0x03, Data: [5]byte{1, 2, 3, 4, 5}}
	mailboxError := make([]byte, coe.MailboxHeaderLen+4)
	coe.MailboxHeader{Length: 4, Type: coe.TypeError}.Encode(mailboxError)
	truncated := emergencyMessage(drive)
	binary.LittleEndian.PutUint16(truncated, 300) // announces more than the 128-byte mailbox holds
	short := emergencyMessage(drive)
	binary.LittleEndian.PutUint16(short, coe.HeaderLen+coe.EmergencyLen-1)
	tests := []struct {
		name       string
		msg        []byte
		emergency  bool
		discarded  uint64
		withDC     bool
		slaveIndex int
	}{
		{name: "emergency", msg: emergencyMessage(drive), emergency: true, slaveIndex: 5},
		{name: "emergency with DC", msg: emergencyMessage(drive), emergency: true, withDC: true, slaveIndex: 5},
		{name: "emergency from the first mailbox", msg: emergencyMessage(drive), emergency: true, slaveIndex: 0},
		{name: "late SDO response", msg: sdoResponseMessage(), discarded: 1, slaveIndex: 5},
		{name: "mailbox error reply", msg: mailboxError, discarded: 1, slaveIndex: 5},
		{name: "length beyond the mailbox", msg: truncated, discarded: 1, slaveIndex: 5},
		{name: "emergency too short", msg: short, discarded: 1, slaveIndex: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slaves, setup := auxSlaves()
			var dc *DCSetup
			if tt.withDC {
				dc = &setup
			}
			b := newAuxBench(t, slaves, dc, maxLRWData)
			s := slaves[tt.slaveIndex]
			b.put(s.StationAddress, tt.msg, false)
			// Two mailboxes polled in turn, a read-out the cycle after the
			// poll: four cycles are always enough, eight leave room to
			// catch a second read-out.
			for i := range 8 {
				if r := b.cy.Exchange(); r.Err != nil {
					t.Fatalf("cycle %d: %v", i+1, r.Err)
				}
			}
			mb := b.mailbox(s.StationAddress)
			if mb.readOut != 1 || mb.full || mb.empty != 0 {
				t.Errorf("mailbox read out %d times (%d times empty), still full %v; want once", mb.readOut, mb.empty, mb.full)
			}
			got := b.m.Emergencies(nil)
			st := b.m.Stats()
			if tt.emergency {
				want := SlaveEmergency{Position: s.Position, StationAddress: s.StationAddress, Emergency: drive}
				if len(got) != 1 {
					t.Fatalf("emergencies %+v, want one", got)
				}
				if got[0].Time == 0 {
					t.Error("emergency has no time")
				}
				got[0].Time = 0
				if got[0] != want {
					t.Errorf("emergency %+v, want %+v", got[0], want)
				}
			} else if len(got) != 0 {
				t.Errorf("emergencies %+v, want none", got)
			}
			if want := uint64(len(got)); st.Emergencies != want || st.MailboxDiscarded != tt.discarded {
				t.Errorf("stats: %d emergencies, %d discarded; want %d, %d", st.Emergencies, st.MailboxDiscarded, want, tt.discarded)
			}
		})
	}
}

// TestCyclicMailboxRoundRobin checks that the status poll visits the
// mailboxes in turn and that the read-out precedes the poll in the frame.
func TestCyclicMailboxRoundRobin(t *testing.T) {
	slaves, _ := auxSlaves()
	b := newAuxBench(t, slaves, nil, maxLRWData)
	b.put(slaves[0].StationAddress, emergencyMessage(coe.Emergency{ErrorCode: 0x8110}), false)
	type dg struct {
		cmd     wire.Command
		station uint16
		ado     uint16
		n       int
	}
	var cycles [][]dg
	for range 4 {
		b.cy.build()
		var f wire.Frame
		if err := f.Decode(b.cy.frames[0].builder.Bytes()); err != nil {
			t.Fatal(err)
		}
		var got []dg
		it := f.Datagrams()
		var d wire.Datagram
		for it.Next(&d) {
			got = append(got, dg{d.Command, d.ADP(), d.ADO(), len(d.Data)})
		}
		cycles = append(cycles, got[2:]) // after LRW and the AL status read
		// Play the answers: the first poll finds slave 0's mailbox full.
		frame := append([]byte(nil), b.cy.frames[0].builder.Bytes()...)
		b.seg.mu.Lock()
		var af wire.Frame
		_ = af.Decode(frame)
		ait := af.Datagrams()
		for ait.Next(&d) {
			b.seg.answer(&d)
		}
		b.seg.mu.Unlock()
		var r CycleResult
		b.cy.frames[0].done = false
		if b.cy.take(frame, &r) != answerTaken {
			t.Fatal("answer not taken")
		}
	}
	st := regSendMailboxStatus
	want := [][]dg{
		{{wire.FPRD, 0x1001, st, 1}},
		{{wire.FPRD, 0x1001, 0x1900, 256}, {wire.FPRD, 0x1006, st, 1}},
		{{wire.FPRD, 0x1001, st, 1}},
		{{wire.FPRD, 0x1006, st, 1}},
	}
	for i := range want {
		if len(cycles[i]) != len(want[i]) {
			t.Errorf("cycle %d: auxiliary datagrams %+v, want %+v", i+1, cycles[i], want[i])
			continue
		}
		for k := range want[i] {
			if cycles[i][k] != want[i][k] {
				t.Errorf("cycle %d: auxiliary datagrams %+v, want %+v", i+1, cycles[i], want[i])
				break
			}
		}
	}
	if got := b.m.Emergencies(nil); len(got) != 1 || got[0].Emergency.ErrorCode != 0x8110 {
		t.Errorf("emergencies %+v, want the 0x8110 one", got)
	}
}

// TestCyclicMailboxExchangeDoesNotAllocate runs cycles that keep finding a
// full mailbox holding an emergency, with the drift compensation on.
func TestCyclicMailboxExchangeDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	slaves, setup := auxSlaves()
	b := newAuxBench(t, slaves, &setup, maxLRWData)
	b.put(slaves[5].StationAddress, emergencyMessage(coe.Emergency{ErrorCode: 0xFF00}), true)
	b.put(slaves[0].StationAddress, sdoResponseMessage(), true)
	failed := 0
	allocs := testing.AllocsPerRun(2000, func() {
		_ = b.cy.image.SetOutputBit(slaves[1], 0, true)
		if r := b.cy.Exchange(); r.Err != nil || !r.DCValid || !r.DCDiffValid {
			failed++
		}
	})
	if allocs != 0 {
		t.Errorf("Exchange with DC and mailbox read-outs allocates %v times per cycle", allocs)
	}
	if failed > 20 {
		t.Errorf("%d of 2000 cycles failed", failed)
	}
	st := b.m.Stats()
	// A mailbox found full is read out in the next cycle, while the other
	// one is polled and found full again: every cycle reads one out, in
	// turn, some 1000 emergencies and 1000 discarded SDO responses.
	if st.Emergencies < 900 || st.MailboxDiscarded < 900 {
		t.Errorf("stats %+v: want some 1000 emergencies and discarded messages", st)
	}
	if st.EmergenciesDropped == 0 {
		t.Error("nobody drained the emergency queue, yet none was dropped")
	}
}

// BenchmarkExchangeDCMailbox measures a cycle with drift compensation and
// mailbox polling whose mailboxes keep refilling (one read-out per cycle).
func BenchmarkExchangeDCMailbox(b *testing.B) {
	slaves, setup := auxSlaves()
	bench := newAuxBench(b, slaves, &setup, maxLRWData)
	bench.put(slaves[5].StationAddress, emergencyMessage(coe.Emergency{ErrorCode: 0xFF00}), true)
	bench.put(slaves[0].StationAddress, sdoResponseMessage(), true)
	b.ReportAllocs()
	n, failed := 0, 0
	for b.Loop() {
		n++
		if r := bench.cy.Exchange(); r.Err != nil || !r.DCValid {
			failed++
		}
	}
	b.ReportMetric(float64(failed)/float64(n), "failed/op")
}
