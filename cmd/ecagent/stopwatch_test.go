package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestWatchStop: a stop that outlasts its bound writes the goroutines'
// stacks and exits 1; one that ends in time, or a run never asked to
// stop, exits nothing.
func TestWatchStop(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name     string
		stop     bool // the stop signal came
		ends     bool // the agent stops within the bound
		wantExit bool
	}{
		{"hung stop", true, false, true},
		{"stop in time", true, true, false},
		{"no stop asked, run ended", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ran := make(chan struct{})
			exited := make(chan int, 1)
			var stacks bytes.Buffer
			done := make(chan struct{})
			go func() {
				defer close(done)
				watchStop(ctx, ran, 50*time.Millisecond, quiet, &stacks, func(code int) { exited <- code })
			}()
			if tc.stop {
				cancel()
			}
			if tc.ends {
				close(ran)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("watchStop did not return")
			}
			select {
			case code := <-exited:
				if !tc.wantExit || code != exitFailure {
					t.Errorf("exit(%d), want exit %v", code, tc.wantExit)
				}
				if !strings.Contains(stacks.String(), "goroutine") || !strings.Contains(stacks.String(), "watchStop") {
					t.Errorf("no goroutine stacks written:\n%.300s", stacks.String())
				}
			default:
				if tc.wantExit {
					t.Error("a hung stop did not exit")
				}
			}
		})
	}
}
