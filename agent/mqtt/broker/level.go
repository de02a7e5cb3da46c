package broker

import (
	"context"
	"log/slog"
)

// levelFloor passes on only records at min or above: the broker logs
// every connection at info level, which would drown the agent's log.
type levelFloor struct {
	slog.Handler
	min slog.Level
}

// Enabled implements slog.Handler.
func (h levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// WithAttrs implements slog.Handler.
func (h levelFloor) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelFloor{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

// WithGroup implements slog.Handler.
func (h levelFloor) WithGroup(name string) slog.Handler {
	return levelFloor{Handler: h.Handler.WithGroup(name), min: h.min}
}
