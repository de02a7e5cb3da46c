package maintenance

import (
	"context"
	"errors"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/master"
)

// The CoE requests: SDO upload and download of one object entry, and the
// object dictionary as the SDO information service describes it. Their
// mailbox transfers go through the master's acyclic queue into the
// cycle's frames, like every other request; the slave must be in PREOP or
// above (under the agent it is in OP).
const (
	// OpSDOUpload reads Index:Sub (SDOResult).
	OpSDOUpload Op = "sdo.upload"
	// OpSDODownload writes Data to Index:Sub (SDOResult); a write.
	OpSDODownload Op = "sdo.download"
	// OpSDOInfo describes the slave's object dictionary (SDOInfoResult),
	// with the values of the short readable entries when Values is set.
	OpSDOInfo Op = "sdo.info"
)

// SDOResult is an object entry's value after a read or a write.
type SDOResult struct {
	Slave int `json:"slave"`
	// Label names the slave as the log does: "slave 2 (0x1003 EL4132)".
	Label string   `json:"label"`
	Index uint16   `json:"index"`
	Sub   uint8    `json:"sub"`
	Data  HexBytes `json:"data"`
}

// SDOInfoResult is a slave's CoE object dictionary.
type SDOInfoResult struct {
	Slave int    `json:"slave"`
	Label string `json:"label"`
	// CoE is false for a slave without a CoE mailbox; Info false for one
	// whose mailbox refuses the SDO information service (Reason says how).
	CoE     bool        `json:"coe"`
	Info    bool        `json:"sdo_info"`
	Reason  string      `json:"reason,omitempty"`
	Objects []SDOObject `json:"objects"`
}

// SDOObject is one object of the dictionary.
type SDOObject struct {
	Index      uint16     `json:"index"`
	ObjectCode string     `json:"object_code"`
	Name       string     `json:"name"`
	MaxSub     uint8      `json:"max_sub"`
	Entries    []SDOEntry `json:"entries"`
}

// SDOEntry is one sub-index of an object.
type SDOEntry struct {
	Sub       uint8  `json:"sub"`
	DataType  uint16 `json:"data_type"`
	TypeName  string `json:"type_name"`
	BitLength uint16 `json:"bit_length"`
	Access    string `json:"access"`
	// ReadPreOp is set when the entry may be read in PREOP and above.
	ReadPreOp bool   `json:"read_preop"`
	Name      string `json:"name"`
	// Value is the entry's value, read when asked for, readable and at
	// most MaxInfoValue bytes long; absent otherwise.
	Value HexBytes `json:"value,omitempty"`
}

// MaxInfoValue is the longest value OpSDOInfo reads.
const MaxInfoValue = 64

func (h *Handler) sdoUpload(ctx context.Context, req Request) (*SDOResult, error) {
	s, err := h.slave(req.Slave)
	if err != nil {
		return nil, err
	}
	data, err := h.m.SDOUpload(ctx, s, req.Index, req.Sub)
	if err != nil {
		return nil, err
	}
	return &SDOResult{Slave: req.Slave, Label: s.String(), Index: req.Index, Sub: req.Sub, Data: data}, nil
}

func (h *Handler) sdoDownload(ctx context.Context, req Request, uid int) (*SDOResult, error) {
	s, err := h.slave(req.Slave)
	if err != nil {
		return nil, err
	}
	if len(req.Data) == 0 {
		return nil, fmt.Errorf("SDO download %#04x:%02x: no data", req.Index, req.Sub)
	}
	if err := h.m.SDODownload(ctx, s, req.Index, req.Sub, req.Data); err != nil {
		return nil, err
	}
	h.report(req.Slave, uid, fmt.Sprintf("sdo write %#04x:%02x %dB", req.Index, req.Sub, len(req.Data)))
	return &SDOResult{Slave: req.Slave, Label: s.String(), Index: req.Index, Sub: req.Sub, Data: req.Data}, nil
}

func (h *Handler) sdoInfo(ctx context.Context, req Request) (*SDOInfoResult, error) {
	s, err := h.slave(req.Slave)
	if err != nil {
		return nil, err
	}
	res := &SDOInfoResult{Slave: req.Slave, Label: s.String(), Objects: []SDOObject{}}
	list, err := h.m.SDOInfoList(ctx, s)
	var (
		abort  *coe.AbortError
		mbxErr *coe.MailboxError
	)
	switch {
	case errors.Is(err, master.ErrNoMailbox):
		return res, nil
	case errors.As(err, &abort) || errors.As(err, &mbxErr):
		// A CoE mailbox without the SDO information service.
		res.CoE, res.Reason = true, errors.Unwrap(err).Error()
		return res, nil
	case err != nil:
		return nil, err
	}
	res.CoE, res.Info = true, true
	for _, index := range list {
		o, err := h.m.SDOInfoObject(ctx, s, index)
		if err != nil {
			return nil, err
		}
		obj := SDOObject{Index: o.Index, ObjectCode: o.ObjectCode.String(), Name: o.Name, MaxSub: o.MaxSubIndex,
			Entries: []SDOEntry{}}
		for sub := range int(o.MaxSubIndex) + 1 {
			e, err := h.m.SDOInfoEntry(ctx, s, o.Index, uint8(sub))
			if errors.As(err, &abort) && abort.Code == coe.AbortNoSubIndex {
				continue
			}
			if err != nil {
				return nil, err
			}
			ent := SDOEntry{Sub: uint8(sub), DataType: uint16(e.DataType), TypeName: e.DataType.String(),
				BitLength: e.BitLength, Access: e.Access.String(), ReadPreOp: e.Access&coe.AccessReadPreOp != 0, Name: e.Name}
			if req.Values && ent.ReadPreOp && int(e.BitLength) <= 8*MaxInfoValue {
				if v, err := h.m.SDOUpload(ctx, s, o.Index, uint8(sub)); err == nil {
					ent.Value = v
				}
			}
			obj.Entries = append(obj.Entries, ent)
		}
		res.Objects = append(res.Objects, obj)
	}
	return res, nil
}
