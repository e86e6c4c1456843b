package runner

import (
	"flag"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/tags"
)

// RegisterFlags registers the settings of a runner's registration and capacity as flags on fs, with the
// defaults [New] would apply: -project-dir, -hostname, -profile, -tags, -require-matching-tags,
// -max-concurrent and -shutdown-grace. The fields it does not register (Coordinator, Executor,
// Blueprints, Gateway, Logger, …) are the service's to set before [New].
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.ProjectDir, "project-dir", "", "working directory of the runs (default: the runner's)")
	fs.StringVar(&c.Hostname, "hostname", "", "hostname to register (default: this host's)")
	fs.StringVar(&c.ExecutorProfile, "profile", "", "executor profile to register (default: the executor type)")
	fs.Func("tags", "comma-separated tags", func(s string) error {
		c.Tags = tags.Split(s)
		return nil
	})
	fs.BoolVar(&c.RequireMatchingTags, "require-matching-tags", false, "take only runs that demand one of -tags")
	fs.IntVar(&c.MaxConcurrent, "max-concurrent", 4, "runs executed at once")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 30*time.Second, "on shutdown, how long runs may finish")
}
