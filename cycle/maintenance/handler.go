package maintenance

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// Reporter takes the events of the writes a Handler carries out;
// *cycle.Engine is one (it writes them to the shared-memory event ring).
type Reporter interface {
	Report(ev shm.Event) bool
}

// Handler serves requests on a master: the cycle process's, or one the
// ecagent command brought up itself. Its methods are safe from several
// goroutines as far as the master's acyclic API is.
type Handler struct {
	m *master.Master
	// iface is the segment's network interface ("" for a simulated one),
	// told by OpHello.
	iface string
	// events, when not nil, gets an shm.EventMaintenance per write.
	events Reporter
	// snapshot, when not nil, reads the image the cycle publishes.
	snapshot ImageSnapshot
	// requests counts the requests Do took (Requests).
	requests atomic.Uint64
}

// NewHandler returns a Handler on m, a master that has scanned its
// segment, for the segment on network interface iface. events, when not
// nil, is told of every write.
func NewHandler(m *master.Master, iface string, events Reporter) *Handler {
	return &Handler{m: m, iface: iface, events: events}
}

// Do carries out req for the process with user id uid and returns its
// result, one of the *Result types of this package. A request that
// changes a slave is refused unless req.Write.
func (h *Handler) Do(ctx context.Context, req Request, uid int) (any, error) {
	h.requests.Add(1)
	if req.IsWrite() && !req.Write {
		return nil, &ErrWriteNotConfirmed{Op: req.Op}
	}
	// Every request is safe to repeat (a write writes the same again), so
	// one whose frames went unanswered, or found the cycle's queue full,
	// is tried again: a loaded host delays the cycle now and then.
	for try := 1; ; try++ {
		res, err := h.do(ctx, req, uid)
		if err == nil || try == requestTries || ctx.Err() != nil ||
			!(errors.Is(err, master.ErrNoResponse) || errors.Is(err, master.ErrAcyclicQueueFull)) {
			return res, err
		}
	}
}

// Requests returns how many requests Do has taken so far, carried out or
// refused. A request allocates on the goroutine that serves it (decoding,
// the result, its frames' errors); the cycle process reports the count
// beside its allocations, so that those are not taken for the cycle's.
func (h *Handler) Requests() uint64 { return h.requests.Load() }

// requestTries is how often Do tries a request whose frames went unanswered.
const requestTries = 3

// do carries out one try of req.
func (h *Handler) do(ctx context.Context, req Request, uid int) (any, error) {
	switch req.Op {
	case OpHello:
		return &HelloResult{Interface: h.iface, Slaves: len(h.m.Slaves())}, nil
	case OpSlaves:
		return h.slaves(ctx)
	case OpRegRead, OpRegWrite:
		return h.reg(ctx, req, uid)
	case OpStates:
		return h.states(ctx, req, uid)
	case OpCRC:
		return h.crc(ctx)
	case OpSIIRead:
		return h.siiRead(ctx, req)
	case OpSIIWrite:
		return h.siiWrite(ctx, req, uid)
	case OpAlias:
		return h.alias(ctx, req, uid)
	case OpMaster:
		return h.master(), nil
	case OpPDOs:
		return h.pdos()
	case OpData:
		return h.data(ctx)
	case OpFoEWrite:
		return h.foeWrite(ctx, req, uid)
	case OpFoERead:
		return h.foeRead(ctx, req, uid)
	case OpSDOUpload:
		return h.sdoUpload(ctx, req)
	case OpSDODownload:
		return h.sdoDownload(ctx, req, uid)
	case OpSDOInfo:
		return h.sdoInfo(ctx, req)
	case OpDiag:
		return h.diag(ctx, req)
	case OpRescan:
		return h.rescan(ctx)
	}
	return nil, fmt.Errorf("unknown request %q", req.Op)
}

// Call runs req as Do and returns its result as the JSON a Response
// carries, so that an in-process call and one over the socket give the
// same bytes to decode.
func (h *Handler) Call(ctx context.Context, req Request, uid int) (json.RawMessage, error) {
	res, err := h.Do(ctx, req, uid)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode %s result: %w", req.Op, err)
	}
	return b, nil
}

// HelloResult describes the endpoint.
type HelloResult struct {
	Interface string `json:"interface"`
	Slaves    int    `json:"slaves"`
}

// slave returns the slave at ring position pos.
func (h *Handler) slave(pos int) (*master.Slave, error) {
	ss := h.m.Slaves()
	if pos < 0 || pos >= len(ss) {
		return nil, fmt.Errorf("slave %d: the segment has %d slaves (positions 0 to %d)", pos, len(ss), len(ss)-1)
	}
	return ss[pos], nil
}

// report records a write carried out for uid.
func (h *Handler) report(pos int, uid int, text string) {
	if h.events == nil {
		return
	}
	ev := shm.Event{Kind: shm.EventMaintenance, Slave: uint16(pos), Value: uint64(uid)}
	ev.SetText(text)
	h.events.Report(ev)
}

// reportState records, before it happens, that a request of uid takes the
// slave at pos to state on purpose: an shm.EventMaintenanceState, which
// the agent logs and publishes as maintenance, not as a fault.
func (h *Handler) reportState(pos int, uid int, state esc.ALState, text string) {
	if h.events == nil {
		return
	}
	var b [esc.ALStatusLen]byte
	esc.ALStatus{State: state}.Encode(b[:])
	ev := shm.Event{Kind: shm.EventMaintenanceState, Slave: uint16(pos), Value: uint64(uid),
		ALState: binary.LittleEndian.Uint16(b[:])}
	ev.SetText(text)
	h.events.Report(ev)
}

// checkBoot refuses BOOT to s before its state is touched when its SII
// names no bootstrap mailbox.
func (h *Handler) checkBoot(ctx context.Context, s *master.Slave) error {
	if _, err := h.m.BootstrapMailbox(ctx, s); err != nil {
		return fmt.Errorf("%w: BOOT refused before the slave's state was touched (it stays in %v)", err, s.State())
	}
	return nil
}

// RegResult is the content of registers after a read or write.
type RegResult struct {
	Slave int      `json:"slave"`
	Addr  uint16   `json:"addr"`
	Data  HexBytes `json:"data"`
}

// HexBytes is a byte string that JSON carries as hex digits ("fc01"),
// as register dumps are read.
type HexBytes []byte

// MarshalJSON writes b as a string of hex digits.
func (b HexBytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(b)) }

// UnmarshalJSON reads a string of hex digits.
func (b *HexBytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("hex bytes %q: %w", s, err)
	}
	*b = v
	return nil
}

func (h *Handler) reg(ctx context.Context, req Request, uid int) (*RegResult, error) {
	s, err := h.slave(req.Slave)
	if err != nil {
		return nil, err
	}
	bus := h.m.Bus()
	if req.Op == OpRegWrite {
		if len(req.Data) == 0 || len(req.Data) > wire.MaxDataLen || int(req.Addr)+len(req.Data) > 0x10000 {
			return nil, fmt.Errorf("register write of %d bytes at %#04x: want 1 to %d bytes within 0x0000–0xffff",
				len(req.Data), req.Addr, wire.MaxDataLen)
		}
		if err := bus.FPWR(ctx, s.StationAddress, req.Addr, req.Data); err != nil {
			return nil, fmt.Errorf("%v: write %d bytes at %#04x: %w", s, len(req.Data), req.Addr, err)
		}
		h.report(req.Slave, uid, fmt.Sprintf("reg write %#04x+%d", req.Addr, len(req.Data)))
		return &RegResult{Slave: req.Slave, Addr: req.Addr, Data: req.Data}, nil
	}
	if req.Len <= 0 || req.Len > wire.MaxDataLen || int(req.Addr)+req.Len > 0x10000 {
		return nil, fmt.Errorf("register read of %d bytes at %#04x: want 1 to %d bytes within 0x0000–0xffff",
			req.Len, req.Addr, wire.MaxDataLen)
	}
	data := make([]byte, req.Len)
	if err := bus.FPRD(ctx, s.StationAddress, req.Addr, data); err != nil {
		return nil, fmt.Errorf("%v: read %d bytes at %#04x: %w", s, req.Len, req.Addr, err)
	}
	return &RegResult{Slave: req.Slave, Addr: req.Addr, Data: data}, nil
}

// StatesResult is the AL status of the slaves a state request addressed,
// read after the request.
type StatesResult struct {
	Requested string        `json:"requested"`
	Slaves    []SlaveStatus `json:"slaves"`
}

// SlaveStatus is a slave's AL status (0x0130) and AL status code (0x0134).
type SlaveStatus struct {
	Position int    `json:"position"`
	State    string `json:"state"`
	Error    bool   `json:"error"`
	Code     uint16 `json:"code"`
	// CodeText is the code's standard meaning (ETG.1000.6 Table 11), ""
	// for code 0.
	CodeText string `json:"code_text,omitempty"`
}

func (h *Handler) states(ctx context.Context, req Request, uid int) (*StatesResult, error) {
	state, ok := esc.ParseALState(req.State)
	if !ok {
		return nil, fmt.Errorf("state %q: want INIT, PREOP, BOOT, SAFEOP or OP", req.State)
	}
	targets := h.m.Slaves()
	if req.Slave != AllSlaves {
		s, err := h.slave(req.Slave)
		if err != nil {
			return nil, err
		}
		targets = []*master.Slave{s}
	}
	if state == esc.StateBootstrap {
		for _, s := range targets {
			if err := h.checkBoot(ctx, s); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range targets {
		h.reportState(s.Position, uid, state, "states "+state.String())
	}
	var reqErr error
	if req.Slave == AllSlaves {
		reqErr = h.m.RequestState(ctx, state)
	} else {
		reqErr = h.m.RequestSlaveState(ctx, targets[0], state)
	}
	res := &StatesResult{Requested: state.String()}
	for _, s := range targets {
		st, err := h.status(ctx, s)
		if err != nil {
			return nil, errors.Join(reqErr, err)
		}
		res.Slaves = append(res.Slaves, st)
	}
	if reqErr != nil {
		return nil, fmt.Errorf("request %v: %w", state, reqErr)
	}
	return res, nil
}

// status reads the live AL status and AL status code of s.
func (h *Handler) status(ctx context.Context, s *master.Slave) (SlaveStatus, error) {
	var b [6]byte // 0x0130–0x0135
	if err := h.m.Bus().FPRD(ctx, s.StationAddress, uint16(esc.RegALStatus), b[:]); err != nil {
		return SlaveStatus{}, fmt.Errorf("%v: read AL status: %w", s, err)
	}
	st := esc.DecodeALStatus(b[:])
	code := esc.ALStatusCode(binary.LittleEndian.Uint16(b[4:]))
	out := SlaveStatus{Position: s.Position, State: st.State.String(), Error: st.Error, Code: uint16(code)}
	if code != 0 {
		out.CodeText = code.String()
	}
	return out, nil
}

// CRCResult holds the error counters of every slave.
type CRCResult struct {
	Slaves []SlaveCounters `json:"slaves"`
}

// SlaveCounters are the error counters of one slave (0x0300–0x0313).
type SlaveCounters struct {
	Position int `json:"position"`
	// Ports are the counters of ports 0 to 3.
	Ports [esc.PortCount]PortCounters `json:"ports"`
	// Processing is the ECAT processing unit error counter (0x030C), PDI
	// the PDI error counter (0x030D).
	Processing uint8 `json:"processing"`
	PDI        uint8 `json:"pdi"`
}

// PortCounters are the error counters of one port.
type PortCounters struct {
	// Kind is the port descriptor: "-" for a port the ESC does not have.
	Kind string `json:"kind"`
	// InvalidFrame (0x0300+2p) counts frames with a CRC or framing error,
	// RXError (0x0301+2p) physical-layer RX errors, ForwardedRX
	// (0x0308+p) errors a slave before this one found, LostLink
	// (0x0310+p) link losses.
	InvalidFrame uint8 `json:"invalid_frame"`
	RXError      uint8 `json:"rx_error"`
	ForwardedRX  uint8 `json:"forwarded_rx"`
	LostLink     uint8 `json:"lost_link"`
}

func (h *Handler) crc(ctx context.Context) (*CRCResult, error) {
	res := &CRCResult{Slaves: []SlaveCounters{}}
	for _, s := range h.m.Slaves() {
		var b [0x14]byte
		if err := h.m.Bus().FPRD(ctx, s.StationAddress, uint16(esc.RegRxErrorCounter), b[:]); err != nil {
			return nil, fmt.Errorf("%v: read error counters: %w", s, err)
		}
		c := SlaveCounters{Position: s.Position, Processing: b[0x0C], PDI: b[0x0D]}
		for p := range c.Ports {
			c.Ports[p] = PortCounters{Kind: portKind(s.ESC.Port(p)), InvalidFrame: b[2*p], RXError: b[2*p+1], ForwardedRX: b[0x08+p], LostLink: b[0x10+p]}
		}
		res.Slaves = append(res.Slaves, c)
	}
	return res, nil
}

// MasterResult is the master's view of the segment.
type MasterResult struct {
	Interface string       `json:"interface"`
	Slaves    int          `json:"slaves"`
	Stats     master.Stats `json:"stats"`
}

func (h *Handler) master() *MasterResult {
	return &MasterResult{Interface: h.iface, Slaves: len(h.m.Slaves()), Stats: h.m.Stats()}
}
