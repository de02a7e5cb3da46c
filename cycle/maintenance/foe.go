package maintenance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/foe"
	"github.com/ecagent/ecagent/master"
)

// The FoE requests (File access over EtherCAT, ETG.1000.6), as a drive's
// boot loader serves them: the slave is taken to BOOT, the file goes
// through the bootstrap mailbox, and the slave leaves BOOT to INIT (under
// the agent its recovery worker then takes it back to OP).
const (
	// OpFoEWrite writes Data as file Name with Password (FoEResult); a write.
	OpFoEWrite Op = "foe.write"
	// OpFoERead reads file Name with Password (FoEResult with Data).
	OpFoERead Op = "foe.read"
)

// foeTimeout bounds one FoE request: a firmware of megabytes takes a
// packet of about a kilobyte per mailbox round trip.
const foeTimeout = 10 * time.Minute

// leaveBootTimeout bounds the return to INIT after a transfer, which runs
// even when the transfer's context ended.
const leaveBootTimeout = 10 * time.Second

// FoEResult is the outcome of an FoE transfer.
type FoEResult struct {
	Slave int    `json:"slave"`
	Name  string `json:"name"`
	// Bytes is the file's length.
	Bytes int `json:"bytes"`
	// Seconds is how long the transfer took, BOOT and back included.
	Seconds float64 `json:"seconds"`
	// State is the slave's AL state after the transfer (INIT).
	State string `json:"state"`
	// Data is the file read (OpFoERead only).
	Data []byte `json:"data,omitempty"`
}

// Progress is how far a transfer is: Done of Total bytes.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// progressKey carries the progress callback of a request in its context.
type progressKey struct{}

// WithProgress returns ctx carrying fn, which an FoE write calls after
// each packet the slave acknowledged.
func WithProgress(ctx context.Context, fn func(done, total int)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// progressOf returns the progress callback ctx carries, or nil.
func progressOf(ctx context.Context) func(done, total int) {
	fn, _ := ctx.Value(progressKey{}).(func(done, total int))
	return fn
}

// FoECode returns the FoE error code and its meaning behind err (an error
// of the slave's), and whether there is one.
func FoECode(err error) (code uint32, meaning string, ok bool) {
	if fe, is := errors.AsType[*foe.Error](err); is {
		return uint32(fe.Code), fe.Code.String(), true
	}
	if re, is := errors.AsType[*RemoteError](err); is && re.FoE != nil {
		return re.FoE.Code, re.FoE.Meaning, true
	}
	return 0, "", false
}

// FoEError is an FoE error of the slave's as a Response carries it.
type FoEError struct {
	Code    uint32 `json:"code"`
	Meaning string `json:"meaning"`
}

// foeSlave checks an FoE request and returns its slave.
func (h *Handler) foeSlave(req Request) (*master.Slave, error) {
	s, err := h.slave(req.Slave)
	if err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, errors.New("FoE: no file name")
	}
	return s, nil
}

// inBoot takes s to BOOT, runs transfer and takes s back to INIT, also
// when the transfer failed or ctx ended; it returns the transfer's error
// first.
func (h *Handler) inBoot(ctx context.Context, s *master.Slave, transfer func() error) (esc.ALState, error) {
	err := h.m.EnterBoot(ctx, s)
	if err != nil {
		err = fmt.Errorf("enter BOOT: %w", err)
	} else {
		err = transfer()
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveBootTimeout)
	defer cancel()
	if lerr := h.m.RequestSlaveState(lctx, s, esc.StateInit); lerr != nil {
		return s.State(), errors.Join(err, fmt.Errorf("%v: leave BOOT: %w", s, lerr))
	}
	return s.State(), err
}

func (h *Handler) foeWrite(ctx context.Context, req Request, uid int) (*FoEResult, error) {
	s, err := h.foeSlave(req)
	if err != nil {
		return nil, err
	}
	// Under a running cycle the recovery worker would take the slave
	// back to OP, out of BOOT, half-way through the transfer, or (when a
	// transfer left it in INIT) while the SII is checked, its AL control
	// request still unread when ours comes (an ESC refuses that write).
	s.Hold(true)
	defer s.Hold(false)
	if err := h.checkBoot(ctx, s); err != nil {
		return nil, err
	}
	h.reportState(req.Slave, uid, esc.StateBootstrap, fmt.Sprintf("foe write %d B %s", len(req.Data), req.Name))
	start := time.Now()
	state, err := h.inBoot(ctx, s, func() error {
		return h.m.FoEWrite(ctx, s, req.Name, req.Password, req.Data, progressOf(ctx))
	})
	if err != nil {
		return nil, err
	}
	return &FoEResult{Slave: req.Slave, Name: req.Name, Bytes: len(req.Data),
		Seconds: time.Since(start).Seconds(), State: state.String()}, nil
}

func (h *Handler) foeRead(ctx context.Context, req Request, uid int) (*FoEResult, error) {
	s, err := h.foeSlave(req)
	if err != nil {
		return nil, err
	}
	s.Hold(true) // as foeWrite does
	defer s.Hold(false)
	if err := h.checkBoot(ctx, s); err != nil {
		return nil, err
	}
	// Not a write of the slave's memory, but it leaves OP: recorded too.
	h.reportState(req.Slave, uid, esc.StateBootstrap, "foe read "+req.Name)
	start := time.Now()
	var data []byte
	state, err := h.inBoot(ctx, s, func() error {
		var err error
		data, err = h.m.FoERead(ctx, s, req.Name, req.Password)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &FoEResult{Slave: req.Slave, Name: req.Name, Bytes: len(data),
		Seconds: time.Since(start).Seconds(), State: state.String(), Data: data}, nil
}
