package link

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
)

func TestOpErrorMatching(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		wantText    string
		wantTimeout bool
		matches     []error
		notMatches  []error
	}{
		{
			name:        "timeout",
			err:         &OpError{Op: "recv", Link: "eth1", Err: ErrTimeout},
			wantText:    "link: recv on eth1: receive timeout",
			wantTimeout: true,
			matches:     []error{ErrTimeout, os.ErrDeadlineExceeded},
			notMatches:  []error{ErrClosed, net.ErrClosed, ErrFrameSize},
		},
		{
			name:       "closed",
			err:        &OpError{Op: "send", Link: "pipe-a", Err: ErrClosed},
			wantText:   "link: send on pipe-a: link closed",
			matches:    []error{ErrClosed, net.ErrClosed},
			notMatches: []error{ErrTimeout, os.ErrDeadlineExceeded},
		},
		{
			name:       "other cause",
			err:        &OpError{Op: "recv", Link: "fd-3", Err: io.ErrShortBuffer},
			wantText:   "link: recv on fd-3: short buffer",
			matches:    []error{io.ErrShortBuffer},
			notMatches: []error{ErrTimeout, ErrClosed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.wantText {
				t.Errorf("Error() = %q, want %q", got, tt.wantText)
			}
			var opErr *OpError
			if !errors.As(tt.err, &opErr) || opErr.Timeout() != tt.wantTimeout {
				t.Errorf("Timeout() = %v, want %v", opErr.Timeout(), tt.wantTimeout)
			}
			for _, target := range tt.matches {
				if !errors.Is(tt.err, target) {
					t.Errorf("errors.Is(%v, %v) = false, want true", tt.err, target)
				}
			}
			for _, target := range tt.notMatches {
				if errors.Is(tt.err, target) {
					t.Errorf("errors.Is(%v, %v) = true, want false", tt.err, target)
				}
			}
		})
	}
}
