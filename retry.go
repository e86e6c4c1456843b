package orchestrator

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// RetryPolicy says how often, and how soon, the coordinator runs a session again after an attempt fails by
// itself. It is a blueprint's `retry`, and a start request's `retry`, which overrides the blueprint's for
// that session. Each retry is a new run of the same session (its Attempt counts up from 1), queued for any
// runner that matches the session's demands; between attempts the session stays pending, with
// NextAttemptAt set.
//
// What is retried: a non-zero exit code not listed in NonRetryableExitCodes, an executor error, a timeout,
// a runner lost during the run, and the model API's passing failures (error codes api_overloaded,
// api_rate_limited, api_error and usage_limit). What never is: a stopped run, a run that was never started
// in time (start_timeout), a listed exit code, and failures the coordinator decided on (a refused approval,
// a spent budget).
//
// An AI agent without a policy retries only the model API's passing failures, under
// [DefaultAgentRetryPolicy]; a deterministic agent without one is not retried, since its command may have
// side effects.
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included: 1 means no retry. 1 to 100.
	MaxAttempts int `json:"max_attempts"`
	// InitialIntervalSeconds is the wait before the second attempt; zero means 1 second.
	InitialIntervalSeconds float64 `json:"initial_interval_seconds,omitempty"`
	// BackoffCoefficient multiplies the wait after each further failure; zero means 2. At least 1.
	BackoffCoefficient float64 `json:"backoff_coefficient,omitempty"`
	// MaxIntervalSeconds caps the wait; zero means 300 seconds.
	MaxIntervalSeconds float64 `json:"max_interval_seconds,omitempty"`
	// NonRetryableExitCodes are exit codes that end the session at once: the command said the failure
	// would not pass.
	NonRetryableExitCodes []int `json:"non_retryable_exit_codes,omitempty"`
}

// Retry policy limits and defaults.
const (
	MaxRetryAttempts = 100
	// maxRetryIntervalSeconds bounds an interval at a week, far from a time.Duration's overflow.
	maxRetryIntervalSeconds = 7 * 24 * 3600

	defaultRetryInitialSeconds = 1
	defaultRetryCoefficient    = 2
	defaultRetryMaxSeconds     = 300
	// retryJitter spreads each wait within ±30%, so that runs that failed together do not retry together.
	retryJitter = 0.3
)

// DefaultAgentRetryPolicy is the policy of an AI agent that declares none: three attempts, 10 seconds,
// then 20, for the model API's passing failures only (overloaded, rate limited, server errors, a usage
// limit, which waits for its reset). Any other failure of an AI agent ends its session, as its agent may
// have acted on the world before it failed.
func DefaultAgentRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 3, InitialIntervalSeconds: 10, BackoffCoefficient: 2, MaxIntervalSeconds: defaultRetryMaxSeconds}
}

// Validate checks the policy; a bad one is ErrInvalid with code invalid_retry_policy and a message that
// names the field.
func (p *RetryPolicy) Validate() error {
	if p == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return Errorf(ErrInvalid, "invalid_retry_policy", format, args...)
	}
	switch {
	case p.MaxAttempts < 1 || p.MaxAttempts > MaxRetryAttempts:
		return bad("retry.max_attempts must be between 1 and %d (1 means no retry), not %d", MaxRetryAttempts, p.MaxAttempts)
	case !finiteIn(p.InitialIntervalSeconds, 0, maxRetryIntervalSeconds):
		return bad("retry.initial_interval_seconds must be between 0 and %d, not %v", maxRetryIntervalSeconds, p.InitialIntervalSeconds)
	case !finiteIn(p.MaxIntervalSeconds, 0, maxRetryIntervalSeconds):
		return bad("retry.max_interval_seconds must be between 0 and %d, not %v", maxRetryIntervalSeconds, p.MaxIntervalSeconds)
	case p.BackoffCoefficient != 0 && !finiteIn(p.BackoffCoefficient, 1, 100):
		return bad("retry.backoff_coefficient must be between 1 and 100, not %v", p.BackoffCoefficient)
	case len(p.NonRetryableExitCodes) > 256:
		return bad("retry.non_retryable_exit_codes lists at most 256 codes")
	}
	for _, c := range p.NonRetryableExitCodes {
		if c < 1 || c > 255 {
			return bad("retry.non_retryable_exit_codes: %d is not a failing exit code (1 to 255)", c)
		}
	}
	return nil
}

func finiteIn(v, lo, hi float64) bool {
	return !math.IsNaN(v) && v >= lo && v <= hi
}

// Interval returns the wait after the failure of attempt n (1-based), without jitter:
// min(initial × coefficient^(n−1), max).
func (p *RetryPolicy) Interval(n int) time.Duration {
	initial, coef, maxSec := p.InitialIntervalSeconds, p.BackoffCoefficient, p.MaxIntervalSeconds
	if initial == 0 {
		initial = defaultRetryInitialSeconds
	}
	if coef == 0 {
		coef = defaultRetryCoefficient
	}
	if maxSec == 0 {
		maxSec = defaultRetryMaxSeconds
	}
	sec := math.Min(initial*math.Pow(coef, float64(max(n, 1)-1)), maxSec)
	return time.Duration(sec * float64(time.Second))
}

// Backoff returns Interval(n) spread at random within ±30%.
func (p *RetryPolicy) Backoff(n int) time.Duration {
	d := p.Interval(n)
	return time.Duration(float64(d) * (1 - retryJitter + 2*retryJitter*rand.Float64()))
}

// RetriesExitCode reports whether a failure with this exit code may be retried.
func (p *RetryPolicy) RetriesExitCode(code int) bool {
	return !slices.Contains(p.NonRetryableExitCodes, code)
}

// Retry reasons: the reason of a retry_scheduled event, and of the orchestrator_run_retries_total metric.
const (
	RetryReasonExitCode       = "exit_code"
	RetryReasonError          = "error"
	RetryReasonTimeout        = "timeout"
	RetryReasonRunnerLost     = "runner_lost"
	RetryReasonAPIOverloaded  = "api_overloaded"
	RetryReasonAPIRateLimited = "api_rate_limited"
	RetryReasonAPIError       = "api_error"
	RetryReasonUsageLimit     = "usage_limit"
)

// EventRetryScheduled is appended to a session when a failed attempt is followed by another:
// {"run_id" (the failed run), "attempt" (the number of the next attempt), "next_attempt_at", "reason"}.
const EventRetryScheduled = "retry_scheduled"
