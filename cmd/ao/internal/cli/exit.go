package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// Exit codes of ao. A run's own exit code (ao run, ao resume) is passed through; see [RunExitCode].
const (
	// ExitOK: the command did what it was asked; for ao run, the session completed.
	ExitOK = 0
	// ExitFailed: the command failed, or the run failed without an exit code of its own, or was stopped.
	ExitFailed = 1
	// ExitUsage: invalid flags or arguments, or parameters the agent's schema refused.
	ExitUsage = 2
	// ExitInterrupted: Ctrl-C (128 + SIGINT, as shells report it).
	ExitInterrupted = 130
)

// RunExitCode is the exit code of ao run for a session that ended with status and result: 0 when it
// completed; the command's exit code when it failed with one (1–255); 1 otherwise (failed without one,
// killed, timed out, stopped).
func RunExitCode(status orchestrator.SessionStatus, res *orchestrator.Result) int {
	if status == orchestrator.SessionCompleted {
		return ExitOK
	}
	if status == orchestrator.SessionFailed && res != nil && res.ExitCode != nil && *res.ExitCode > 0 && *res.ExitCode < 256 {
		return *res.ExitCode
	}
	return ExitFailed
}

// usageError is a mistake in how ao was called: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError ends ao with code after the command has printed what it had to say.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exitCode returns the exit code for err, the error a command returned.
func exitCode(err error) int {
	var ee *exitError
	var ue *usageError
	var ve *orchestrator.ValidationError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ve) && !ve.Output, errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitFailed
}

// reportError writes err for people to w (stderr), with a hint where one helps; url is the coordinator's.
func reportError(w io.Writer, err error, url string) {
	var ee *exitError
	if errors.As(err, &ee) || errors.Is(err, context.Canceled) {
		return // already said, or the user interrupted
	}
	var ve *orchestrator.ValidationError
	if errors.As(err, &ve) {
		what := "the parameters do not match"
		if ve.Output {
			what = "the output does not match"
		}
		if ve.AgentName != "" {
			what += " " + ve.AgentName + "'s"
		} else {
			what += " the agent's"
		}
		if ve.Output {
			what += " output_schema"
		} else {
			what += " parameters_schema"
		}
		fmt.Fprintf(w, "ao: %s:\n", what)
		for _, fe := range ve.Errors {
			fmt.Fprintf(w, "  %s: %s\n", fe.Path, fe.Message)
		}
		if !ve.Output && ve.AgentName != "" {
			fmt.Fprintf(w, "(ao agents show %s lists its parameters)\n", ve.AgentName)
		}
		return
	}
	msg := err.Error()
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(w, "ao: %s\n", msg)
		return
	case errors.Is(err, orchestrator.ErrUnauthorized):
		msg += " (give a token with --token or ORCHESTRATOR_TOKEN)"
	case errors.Is(err, orchestrator.ErrForbidden):
		msg += " (the token's role does not allow this; some commands need an admin token)"
	case unreachable(err):
		msg = fmt.Sprintf("cannot reach the coordinator at %s: %s (is it running? --url or ORCHESTRATOR_URL names it)", url, shortError(err))
	}
	fmt.Fprintf(w, "ao: %s\n", strings.TrimPrefix(msg, "httpapi: "))
}

// errorDocument is err as one JSON document, for --json: the coordinator's error body when it came from
// the coordinator ({"error": code, "message": …, …}), else {"error": "usage"|"unreachable"|"failed", "message"}.
func errorDocument(err error) any {
	var ve *orchestrator.ValidationError
	if errors.As(err, &ve) {
		doc := map[string]any{"error": ve.Code(), "message": ve.Summary(), "validation_errors": ve.Errors}
		if ve.AgentName != "" {
			doc["agent_name"] = ve.AgentName
		}
		return doc
	}
	var oe *orchestrator.Error
	if errors.As(err, &oe) {
		return oe
	}
	code := "failed"
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		code = "usage"
	case unreachable(err):
		code = "unreachable"
	}
	return map[string]string{"error": code, "message": strings.TrimPrefix(err.Error(), "httpapi: ")}
}

// unreachable reports whether err is a request that got no answer from the coordinator (a refused or
// dropped connection, a timeout), as opposed to an answer.
func unreachable(err error) bool {
	var oe *orchestrator.Error
	return errors.Is(err, httpapi.ErrServer) && !errors.As(err, &oe)
}
