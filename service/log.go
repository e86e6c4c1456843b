package service

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// LogConfig chooses a service's log format and level.
type LogConfig struct {
	// Format is "text" (key=value lines, the default) or "json" (one JSON object a line).
	Format string
	// Level is the lowest level logged. Default: info.
	Level slog.Level
}

// RegisterFlags registers -log-format and -log-level on fs.
func (c *LogConfig) RegisterFlags(fs *flag.FlagSet) {
	c.Format = "text"
	fs.Func("log-format", `log format: "text" or "json" (default "text")`, func(s string) error {
		if s != "text" && s != "json" {
			return fmt.Errorf("want text or json, not %q", s)
		}
		c.Format = s
		return nil
	})
	fs.TextVar(&c.Level, "log-level", slog.LevelInfo, "lowest level logged: debug, info, warn or error")
}

// New returns a logger writing to w in the configured format and level.
func (c LogConfig) New(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.Level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
