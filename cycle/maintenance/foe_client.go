package maintenance

import (
	"context"
	"encoding/json"
)

// CallProgress is Call for a request that reports its progress (an FoE
// transfer): it sets req.Progress and calls progress, when not nil, with
// each Progress line before the result. The endpoint's error is a
// *RemoteError, with FoE set for an FoE error of the slave's.
func (cl *Client) CallProgress(ctx context.Context, req Request, progress func(done, total int)) (json.RawMessage, error) {
	req.Progress = true
	stop, err := cl.send(ctx, &req)
	defer stop()
	if err != nil {
		return nil, err
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
