package proc

import (
	"log/slog"
	"time"
)

// The defaults of the settings every executor that runs programs (deterministic, process, claudecode)
// shares: their Configs' StopGrace, MaxStderrLine and Logger mean the same and default the same way.
const (
	DefaultStopGrace     = 5 * time.Second
	DefaultMaxStderrLine = 16 << 10
)

// SetDefaults sets the shared settings of an executor's Config that were left unset: a zero or negative
// stopGrace to [DefaultStopGrace], a zero maxStderrLine to [DefaultMaxStderrLine] (a [StderrPump] raises
// small values to [MinStderrLine]) and a nil logger to one that discards.
func SetDefaults(stopGrace *time.Duration, maxStderrLine *int, logger **slog.Logger) {
	if *stopGrace <= 0 {
		*stopGrace = DefaultStopGrace
	}
	if *maxStderrLine == 0 {
		*maxStderrLine = DefaultMaxStderrLine
	}
	if *logger == nil {
		*logger = slog.New(slog.DiscardHandler)
	}
}
