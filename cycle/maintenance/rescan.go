package maintenance

import (
	"context"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
)

// OpRescan counts the slaves that answer now (a broadcast read, BRD of
// the ESC type register) and checks each known slave at its station
// address (RescanResult). It changes nothing: a running agent's recovery
// reconfigures slaves that come back; a slave added to the segment needs
// the agent restarted (bus.expectedslaves).
const OpRescan Op = "rescan"

// RescanResult compares the segment now with the slaves the master knows.
type RescanResult struct {
	// Known is how many slaves the master configured, Answering how many
	// answer a broadcast now.
	Known     int `json:"known"`
	Answering int `json:"answering"`
	// Missing are the positions of known slaves that do not answer at
	// their station address.
	Missing []int `json:"missing"`
}

func (h *Handler) rescan(ctx context.Context) (*RescanResult, error) {
	var b [1]byte
	wkc, err := h.m.Bus().BRD(ctx, uint16(esc.RegType), b[:], master.AnyWKC)
	if err != nil {
		return nil, fmt.Errorf("count the slaves: %w", err)
	}
	res := &RescanResult{Known: len(h.m.Slaves()), Answering: int(wkc), Missing: []int{}}
	for _, s := range h.m.Slaves() {
		if err := h.m.Bus().FPRD(ctx, s.StationAddress, uint16(esc.RegType), b[:]); err != nil {
			res.Missing = append(res.Missing, s.Position)
		}
	}
	return res, nil
}
