package maintenance

import (
	"context"
	"errors"
	"fmt"
)

// OpData returns a copy of the process image (DataResult).
const OpData Op = "data"

// DataResult is a copy of the process image: outputs first, then inputs.
type DataResult struct {
	// Cycle is the cycle the copy was published in; 0 for an image
	// exchanged once by the command itself.
	Cycle       uint64   `json:"cycle"`
	OutputBytes int      `json:"output_bytes"`
	Image       HexBytes `json:"image"`
}

// ImageSnapshot copies the latest published process image into dst and
// returns its cycle; ok is false when none is published yet.
// (*shm.Image).Snapshot is one.
type ImageSnapshot func(dst []byte) (cycle uint64, ok bool)

// WithImage makes h answer OpData from snap, the image the cycle
// publishes, instead of exchanging one itself (which only a master that no
// cycle runs may do).
func (h *Handler) WithImage(snap ImageSnapshot) *Handler {
	h.snapshot = snap
	return h
}

func (h *Handler) data(ctx context.Context) (*DataResult, error) {
	img := h.m.Image()
	if img == nil {
		return nil, errors.New("the process image is not mapped")
	}
	res := &DataResult{OutputBytes: len(img.Outputs()), Image: make([]byte, len(img.Bytes()))}
	if h.snapshot != nil {
		cycle, ok := h.snapshot(res.Image)
		if !ok {
			return nil, errors.New("no process image published yet")
		}
		res.Cycle = cycle
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r := h.m.Exchange(); r.Err != nil {
		return nil, fmt.Errorf("exchange the process image: %w", r.Err)
	}
	copy(res.Image, img.Bytes())
	return res, nil
}
