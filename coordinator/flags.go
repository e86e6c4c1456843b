package coordinator

import (
	"flag"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/tags"
)

// RegisterFlags registers the settings a coordinator's operator tunes as flags on fs, with the defaults
// [New] would apply: -heartbeat-interval, -stale-after, -offline-after, -no-match-timeout,
// -redeliver-after, -timeout-grace, -retention, -max-schedules, -artifacts, -webhook-timeout,
// -webhook-secret, -webhook-allow-hosts, -prices, -max-tree-depth and -max-tree-sessions. A service that
// embeds the coordinator calls it before fs.Parse; the fields it does not register (Store, Logger,
// Notifier, Now, …) are the service's to set. -webhook-secret keeps the value WebhookSecret has when it is
// not given, so a default read from the environment can be set before or after this call.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.HeartbeatInterval, "heartbeat-interval", 30*time.Second, "how often runners heartbeat")
	fs.DurationVar(&c.StaleAfter, "stale-after", 90*time.Second, "no heartbeat for this long: the runner claims nothing new")
	fs.DurationVar(&c.OfflineAfter, "offline-after", 180*time.Second, "no heartbeat for this long: the runner's runs fail")
	fs.DurationVar(&c.NoMatchTimeout, "no-match-timeout", 300*time.Second, "fail a run no runner can take after this long")
	fs.DurationVar(&c.RedeliverAfter, "redeliver-after", 15*time.Second, "hand a claimed run its runner never started to it again after this long")
	fs.DurationVar(&c.TimeoutGrace, "timeout-grace", 30*time.Second, "fail a run past its timeout this long after its runner was told to stop it")
	fs.DurationVar(&c.Retention, "retention", 0, "delete sessions that ended longer ago than this (0: keep everything)")
	fs.StringVar(&c.ArtifactsURL, "artifacts", c.ArtifactsURL, "bucket for sessions' artifacts: file:///DIR or s3://bucket?region=…&endpoint=… (empty: no artifacts)")
	fs.DurationVar(&c.IdempotencyRetention, "idempotency-retention", 24*time.Hour, "how long a POST /runs idempotency key is remembered")
	fs.IntVar(&c.MaxSchedules, "max-schedules", DefaultMaxSchedules, "how many schedules may exist at once (negative: no cap)")
	fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", 10*time.Second, "bound of one callback_url delivery attempt")
	fs.IntVar(&c.MaxTreeDepth, "max-tree-depth", defaultMaxTreeDepth, "how deep a tree of sessions may grow (a root is depth 0)")
	fs.IntVar(&c.MaxTreeSessions, "max-tree-sessions", defaultMaxTreeSessions, "how many sessions one tree may hold, its root included")
	fs.Func("webhook-secret", "secret signing callback_url deliveries (whsec_ + base64, or any text)", func(s string) error {
		c.WebhookSecret = []byte(s)
		return nil
	})
	fs.Func("prices", "JSON file of model prices in USD per million tokens, {\"model\": {\"input\", \"output\", \"cache_read\", \"cache_write\"}}, over the defaults", func(path string) error {
		p, err := LoadPrices(path)
		c.Prices = p
		return err
	})
	fs.Func("webhook-allow-hosts", "non-public hosts or CIDR prefixes callback_url deliveries may reach, comma-separated (e.g. 127.0.0.1)", func(s string) error {
		c.WebhookAllowHosts = tags.Split(s)
		return nil
	})
}
