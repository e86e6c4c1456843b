package mcpserver

import (
	"context"
	"log/slog"
)

// sdkLogger is the logger handed to the MCP SDK: the SDK's own INFO records (three per HTTP request in
// stateless mode — "server connecting", "server session connected", "session initialized" — and more of
// the kind) are DEBUG, so that a coordinator's log at INFO shows what happened, not every MCP request.
// Warnings and errors keep their level.
func sdkLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(demoteInfo{l.Handler()})
}

// demoteInfo passes records to h with INFO (and anything below WARN) lowered to DEBUG.
type demoteInfo struct{ h slog.Handler }

func (d demoteInfo) level(l slog.Level) slog.Level {
	if l >= slog.LevelInfo && l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

func (d demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return d.h.Enabled(ctx, d.level(l))
}

func (d demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	r.Level = d.level(r.Level)
	return d.h.Handle(ctx, r)
}

func (d demoteInfo) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoteInfo{d.h.WithAttrs(attrs)}
}

func (d demoteInfo) WithGroup(name string) slog.Handler { return demoteInfo{d.h.WithGroup(name)} }
