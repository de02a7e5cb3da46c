package maintenance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// CallProgress is Call for a request that reports its progress (an FoE
// transfer): it sets req.Progress and calls progress, when not nil, with
// each Progress line before the result. The endpoint's error is a
// *RemoteError, with FoE set for an FoE error of the slave's.
func (cl *Client) CallProgress(ctx context.Context, req Request, progress func(done, total int)) (json.RawMessage, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = cl.c.SetDeadline(dl)
	} else {
		_ = cl.c.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = cl.c.SetDeadline(time.Now()) })
	defer stop()
	req.Progress = true
	if err := cl.enc.Encode(&req); err != nil {
		return nil, fmt.Errorf("control: send %s: %w", req.Op, err)
	}
	for {
		resp, err := cl.next(ctx, req.Op)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.Progress != nil:
			if progress != nil {
				progress(resp.Progress.Done, resp.Progress.Total)
			}
		case resp.Error != "":
			return nil, &RemoteError{Msg: resp.Error, Refused: resp.Refused, FoE: resp.FoE}
		default:
			return resp.Result, nil
		}
	}
}
