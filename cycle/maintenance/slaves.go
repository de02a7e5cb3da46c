package maintenance

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
)

// SlavesResult lists the slaves of the segment in ring order.
type SlavesResult struct {
	Slaves []SlaveInfo `json:"slaves"`
}

// SlaveInfo is one slave: what the scan learned (identity, SII) and what
// its registers say now (alias, AL status, DL status).
type SlaveInfo struct {
	Position int    `json:"position"`
	Station  uint16 `json:"station"`
	// Alias is the configured station alias (0x0012) as read now.
	Alias uint16 `json:"alias"`
	SlaveStatus
	Vendor    uint32 `json:"vendor"`
	Product   uint32 `json:"product"`
	Revision  uint32 `json:"revision"`
	Serial    uint32 `json:"serial"`
	Name      string `json:"name"`
	OrderCode string `json:"order_code"`
	// Parent is the position of the slave this one hangs off, -1 for the
	// master.
	Parent int `json:"parent"`
	// Ports is the DL status (0x0110) of ports 0 to 3 as read now.
	Ports [esc.PortCount]PortInfo `json:"ports"`
	DC    bool                    `json:"dc"`
	// Mailbox is the standard mailbox (SM0 receive, SM1 send); absent
	// without one.
	Mailbox   *MailboxInfo `json:"mailbox,omitempty"`
	Protocols string       `json:"protocols,omitempty"`
	InBits    int          `json:"in_bits"`
	OutBits   int          `json:"out_bits"`
	// Strings is the SII's Strings category.
	Strings []string `json:"strings,omitempty"`
}

// PortInfo is one port's part of DL status and of the port descriptor.
type PortInfo struct {
	// Kind is the port descriptor (0x0007): "-" not implemented, "n/c"
	// not configured, "EBUS" or "MII".
	Kind string `json:"kind"`
	Link bool   `json:"link"`
	// Loop is true when the port is closed (frames loop back).
	Loop bool `json:"loop"`
	Comm bool `json:"comm"`
}

// MailboxInfo is the standard mailbox of a slave.
type MailboxInfo struct {
	RxOffset uint16 `json:"rx_offset"`
	RxSize   uint16 `json:"rx_size"`
	TxOffset uint16 `json:"tx_offset"`
	TxSize   uint16 `json:"tx_size"`
}

// portKind names the port descriptor's two bits of a port.
func portKind(k uint8) string {
	switch k {
	case 1:
		return "n/c"
	case 2:
		return "EBUS"
	case 3:
		return "MII"
	}
	return "-"
}

func (h *Handler) slaves(ctx context.Context) (*SlavesResult, error) {
	res := &SlavesResult{Slaves: []SlaveInfo{}}
	for _, s := range h.m.Slaves() {
		info, err := h.slaveInfo(ctx, s)
		if err != nil {
			return nil, err
		}
		res.Slaves = append(res.Slaves, info)
	}
	return res, nil
}

func (h *Handler) slaveInfo(ctx context.Context, s *master.Slave) (SlaveInfo, error) {
	st, err := h.status(ctx, s)
	if err != nil {
		return SlaveInfo{}, err
	}
	bus := h.m.Bus()
	var alias, dl [2]byte
	if err := bus.FPRD(ctx, s.StationAddress, uint16(esc.RegStationAlias), alias[:]); err != nil {
		return SlaveInfo{}, fmt.Errorf("%v: read station alias: %w", s, err)
	}
	if err := bus.FPRD(ctx, s.StationAddress, uint16(esc.RegDLStatus), dl[:]); err != nil {
		return SlaveInfo{}, fmt.Errorf("%v: read DL status: %w", s, err)
	}
	info := SlaveInfo{
		Position: s.Position, Station: s.StationAddress, Alias: binary.LittleEndian.Uint16(alias[:]),
		SlaveStatus: st,
		Vendor:      s.Identity.VendorID, Product: s.Identity.ProductCode, Revision: s.Identity.Revision,
		Serial: s.Identity.SerialNumber, Name: s.Name, OrderCode: s.OrderCode, Parent: s.Parent, DC: s.DC,
		InBits: s.InputBits, OutBits: s.OutputBits,
	}
	d := esc.DecodeDLStatus(dl[:])
	for p := range info.Ports {
		info.Ports[p] = PortInfo{Kind: portKind(s.ESC.Port(p)), Link: d.Ports[p].Link, Loop: d.Ports[p].Loop,
			Comm: d.Ports[p].Communication}
	}
	if s.HasMailbox {
		mb := s.Mailbox
		info.Mailbox = &MailboxInfo{RxOffset: mb.ReceiveOffset, RxSize: mb.ReceiveSize, TxOffset: mb.SendOffset, TxSize: mb.SendSize}
		info.Protocols = s.Protocols.String()
	}
	if s.SII != nil {
		info.Strings = s.SII.Strings
	}
	return info, nil
}
