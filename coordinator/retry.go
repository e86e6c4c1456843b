package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
	"github.com/agentorchestrator/orchestrator/store"
)

// Retries: a failed attempt of a session whose retry policy allows another is followed by a new run of
// the same session, due after the policy's backoff. The failed run's end, the next run and the session's
// move back to pending are written in the transaction that ends the run, so a crash can neither lose the
// retry nor make it twice, and no caller hears of the failure: the session never ends in between.

// Error codes the coordinator gives the runs it ends itself.
const (
	// codeRunnerLost: the run's runner went offline, deregistered or restarted while it held the run.
	codeRunnerLost = "runner_lost"
)

// lostRunner is the result of a run whose runner is gone.
func lostRunner(msg string) *orchestrator.Result {
	return &orchestrator.Result{Error: msg, ErrorCode: codeRunnerLost}
}

// sessionRetry returns the retry policy of a new session and how many attempts it allows: the request's,
// else the blueprint's, else the agent type's default (nil in the policy: it is not stored).
func sessionRetry(p *orchestrator.StartRunParams, b *orchestrator.Blueprint) (*orchestrator.RetryPolicy, int) {
	policy := p.Retry
	if policy == nil {
		policy = b.Retry
	}
	if policy != nil {
		cp := *policy
		return &cp, policy.MaxAttempts
	}
	if b.Type == orchestrator.AgentTypeAgent {
		return nil, orchestrator.DefaultAgentRetryPolicy().MaxAttempts
	}
	return nil, 1
}

// effectivePolicy is the policy a session's failures are retried under, and whether it was given (a
// default policy retries only the model API's passing failures).
func effectivePolicy(s *orchestrator.Session) (orchestrator.RetryPolicy, bool) {
	if s.Retry != nil {
		return *s.Retry, true
	}
	if s.AgentType == orchestrator.AgentTypeAgent {
		return orchestrator.DefaultAgentRetryPolicy(), false
	}
	return orchestrator.RetryPolicy{MaxAttempts: 1}, false
}

// retryReason classifies a failed attempt's result: the reason of its retry, and whether policy retries
// it at all (given says whether the session was given its policy, or has its type's default).
func retryReason(res *orchestrator.Result, policy orchestrator.RetryPolicy, given bool) (string, bool) {
	code := ""
	if res != nil {
		code = res.ErrorCode
	}
	switch code {
	case orchestrator.RetryReasonAPIOverloaded, orchestrator.RetryReasonAPIRateLimited, orchestrator.RetryReasonAPIError, orchestrator.RetryReasonUsageLimit:
		return code, true
	case orchestrator.RetryReasonTimeout, orchestrator.RetryReasonRunnerLost:
		return code, given
	case "":
		if res != nil && res.ExitCode != nil && *res.ExitCode > 0 {
			return orchestrator.RetryReasonExitCode, given && policy.RetriesExitCode(*res.ExitCode)
		}
		return orchestrator.RetryReasonError, given
	}
	// A code the coordinator or the executor gave for a failure that running again cannot mend: a refused
	// approval, a spent budget, a start deadline.
	return code, false
}

// retry is a failed attempt's follow-up, once decided.
type retry struct {
	next   *orchestrator.Run
	reason string
}

// planRetry decides, inside the transaction that ends e's run as failed, whether the session retries it,
// and returns the next attempt's run (not yet stored), or nil. It reads the session and the run only when
// the run's brief says another attempt is allowed: an end without retries costs nothing more.
func (c *Coordinator) planRetry(ctx context.Context, tx store.Store, e *ending) (*retry, error) {
	run := e.run
	if e.status != orchestrator.RunFailed || max(run.Attempt, 1) >= run.MaxAttempts {
		return nil, nil
	}
	s, err := tx.GetSession(ctx, run.SessionID)
	if err != nil {
		return nil, err
	}
	if s.CurrentRunID != run.ID {
		return nil, nil // the session moved on (a resume queued meanwhile): this attempt is not its
	}
	policy, given := effectivePolicy(s)
	reason, ok := retryReason(e.res, policy, given)
	if !ok {
		return nil, nil
	}
	full, err := tx.GetRun(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	attempt := max(run.Attempt, 1)
	due := e.now.Add(policy.Backoff(attempt))
	if e.res != nil && e.res.RetryAt != nil && e.res.RetryAt.After(due) {
		due = *e.res.RetryAt // a usage limit's reset: no sooner can the next attempt succeed
	}
	if limit := e.now.Add(maxDelay); due.After(limit) {
		due = limit
	}
	due = due.UTC().Truncate(time.Microsecond)
	next := &orchestrator.Run{
		ID:             ids.New(ids.Run),
		SessionID:      full.SessionID,
		AgentName:      full.AgentName,
		AgentType:      full.AgentType,
		Type:           full.Type,
		Mode:           full.Mode,
		Status:         orchestrator.RunPending,
		Parameters:     full.Parameters,
		Demands:        full.Demands,
		ProjectDir:     full.ProjectDir,
		OutputSchema:   full.OutputSchema,
		Metadata:       full.Metadata,
		CallbackURL:    full.CallbackURL,
		Priority:       full.Priority,
		RunAt:          &due,
		ConcurrencyKey: full.ConcurrencyKey,
		AgentLimit:     full.AgentLimit,
		KeyLimit:       full.KeyLimit,
		TraceParent:    full.TraceParent,
		Attempt:        attempt + 1,
		MaxAttempts:    full.MaxAttempts,
		TimeoutSeconds: full.TimeoutSeconds, // each attempt has the whole timeout; a start deadline is the first's
		CreatedAt:      e.now,
		RateLimit:      full.RateLimit,
		RatePeriod:     full.RatePeriod,
		RateBucket:     full.RateBucket,
	}
	if full.CacheRole != cacheWait {
		// A retried leader still leads: the starts waiting for it wait for its next attempt.
		next.CacheKey, next.CacheRole = full.CacheKey, full.CacheRole
	}
	if resumesRetry(s, full, reason) {
		// The executor kept the conversation the failed attempt had (Claude Code's session): the retry
		// resumes it on the runner whose host holds it, so the work done is not lost.
		next.Type = orchestrator.RunTypeResume
		next.Parameters, _ = json.Marshal(map[string]string{"prompt": continuePrompt(reason, e.errMsg)})
		next.Demands.RunnerID = s.RunnerID
		if full.RunnerID != "" {
			next.Demands.RunnerID = full.RunnerID
		}
	}
	return &retry{next: next, reason: reason}, nil
}

// resumesRetry reports whether the retry of failed resumes the executor's own session instead of starting
// afresh: an AI agent whose executor recorded a session id, after a failure that left its host running. A
// lost runner's host may be gone with the conversation, and a retry that waits for that runner might wait
// for ever: that retry starts again on any matching runner.
func resumesRetry(s *orchestrator.Session, failed *orchestrator.Run, reason string) bool {
	return failed.AgentType == orchestrator.AgentTypeAgent && s.ExecutorSessionID != "" && reason != orchestrator.RetryReasonRunnerLost
}

// continuePrompt is the prompt of a retry that resumes the executor's session: the turn that failed is
// taken up again.
func continuePrompt(reason, errMsg string) string {
	return fmt.Sprintf("Your previous turn did not finish: it failed (%s: %s). Continue the task from where you left off.", reason, errMsg)
}

// scheduleRetry writes the retry inside the transaction that ended e's run: the next run, and the
// session back to pending with it as its current run, the failed attempt's result and run_ended events
// and a retry_scheduled event. The session's guard (pending or running) makes a concurrent end lose.
func (c *Coordinator) scheduleRetry(ctx context.Context, tx store.Store, fx *effects, e *ending, r *retry) error {
	if err := tx.CreateRun(ctx, r.next); err != nil {
		return err
	}
	run := e.run
	events := append(e.session.AppendEvents, eventOf(orchestrator.EventRetryScheduled, e.now, map[string]any{
		"run_id": run.ID, "attempt": r.next.Attempt, "next_attempt_at": *r.next.RunAt, "reason": r.reason,
	}))
	u := store.SessionUpdate{
		Status:        new(orchestrator.SessionPending),
		CurrentRunID:  &r.next.ID,
		Attempt:       &r.next.Attempt,
		NextAttemptAt: r.next.RunAt,
		UpdatedAt:     e.now,
		AppendEvents:  events,
	}
	if run.RunnerID != "" {
		u.RunnerID = &run.RunnerID
	}
	s, err := updateSessionBrief(ctx, tx, run.SessionID, sessionStatusesBeforeEnd, u)
	if err != nil {
		return err
	}
	fx.changed = append(fx.changed, s.ID)
	fx.runsEnded = append(fx.runsEnded, runEnd{run: run, status: e.status, err: e.errMsg, took: e.now.Sub(run.CreatedAt)})
	fx.retries = append(fx.retries, retryCount{agent: run.AgentName, reason: r.reason})
	fx.due = append(fx.due, *r.next.RunAt)
	fx.wakeFor(r.next)
	if run.Limited {
		fx.wakeAll = true // the failed attempt freed its slot
	}
	return nil
}

// retryCount is one retry scheduled, for the metrics.
type retryCount struct{ agent, reason string }

// attemptsError is the final error of a session that made more than one attempt.
func attemptsError(attempt int, msg string) string {
	if attempt <= 1 {
		return msg
	}
	return fmt.Sprintf("failed after %d attempts: %s", attempt, msg)
}

// lastAttempt returns the run that carries runID's outcome: runID itself, or, when it failed and was
// retried, the latest of its retries. A retry is the session's next run with the next attempt number (a
// resume starts again at 1), so the chain is read from the session's runs, oldest first.
func (c *Coordinator) lastAttempt(ctx context.Context, sessionID, runID string) (*orchestrator.Run, error) {
	runs, err := c.store.ListRuns(ctx, orchestrator.RunFilter{SessionID: sessionID})
	if err != nil {
		return nil, err
	}
	var last *orchestrator.Run
	for _, r := range runs {
		switch {
		case r.ID == runID:
			last = r
		case last != nil && last.Status == orchestrator.RunFailed && r.Attempt == max(last.Attempt, 1)+1:
			last = r
		case last != nil:
			return last, nil
		}
	}
	if last == nil {
		return lookup(c.store.GetRun(ctx, runID)).as("run", runID)
	}
	return last, nil
}
