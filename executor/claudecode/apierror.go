package claudecode

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Error codes this executor puts on a failed Result (Result.ErrorCode), so that a retry policy can tell a
// passing failure of the model API from the agent's own (docs/http-api.md lists every code).
const (
	// CodeAPIOverloaded: the API answered 529 (overloaded), after the CLI's own retries.
	CodeAPIOverloaded = "api_overloaded"
	// CodeAPIRateLimited: the API answered 429 (a rate limit that is not a usage limit).
	CodeAPIRateLimited = "api_rate_limited"
	// CodeAPIError: the API answered another 5xx, or could not be reached (connection refused, timeout).
	CodeAPIError = "api_error"
	// CodeUsageLimit: the account's usage limit (a Claude subscription's five-hour or weekly limit) was
	// reached; Result.RetryAt is its reset time when the CLI named it.
	CodeUsageLimit = "usage_limit"
	// CodeBudgetExceeded: the CLI stopped at --max-budget-usd (the budget the run was given).
	CodeBudgetExceeded = "budget_exceeded"
)

// classify returns the error code of a turn that failed, and when the failure is a usage limit, its reset
// time. The result line says how the turn ended (is_error, api_error_status, the message); the last
// assistant line's error kind says what failed when there was no HTTP status (a connection failure is
// server_error); a rate_limit_event that said rejected carries the exact reset time of a usage limit.
// Every format here was checked against Claude Code 2.1.197 and 2.1.332 (testdata/).
func classify(res *streamLine, kind string, limit *rateLim, now time.Time) (code string, retryAt *time.Time) {
	if res == nil {
		return "", nil
	}
	if res.Subtype == "error_max_budget_usd" {
		return CodeBudgetExceeded, nil
	}
	if !res.IsError {
		return "", nil
	}
	status := 0
	if res.APIErrorStatus != nil {
		status = *res.APIErrorStatus
	}
	if status == 429 || kind == "rate_limit" || kind == "billing_error" {
		if at, ok := usageLimit(res.Result, limit, now); ok {
			return CodeUsageLimit, at
		}
	}
	switch {
	case status == 529:
		return CodeAPIOverloaded, nil
	case status == 429:
		return CodeAPIRateLimited, nil
	case status >= 500 && status <= 599:
		return CodeAPIError, nil
	case status != 0:
		return "", nil // 400, 401, …: running again would fail again
	}
	switch kind {
	case "overloaded":
		return CodeAPIOverloaded, nil
	case "rate_limit":
		return CodeAPIRateLimited, nil
	case "server_error": // also a connection refused, a timeout, an unreachable host
		return CodeAPIError, nil
	}
	return "", nil
}

// usageLimitText matches the CLI's usage-limit messages: "You've hit your session limit · resets 4:35am
// (UTC)" (2.1.197), "You've hit your 5-hour limit · resets Dec 1, 1:35am (America/New_York)" (2.1.332),
// and the older "Claude AI usage limit reached|1795840539".
var (
	usageLimitText = regexp.MustCompile(`(?i)you've hit your|you've reached your|usage limit reached|out of usage`)
	resetEpoch     = regexp.MustCompile(`limit reached\|(\d{9,11})`)
	resetClock     = regexp.MustCompile(`resets (?:([A-Z][a-z]{2}) (\d{1,2}), (?:(\d{4}), )?)?(\d{1,2})(?::(\d{2}))?(am|pm)(?: \(([^)]+)\))?`)
)

// usageLimit says whether a failed turn hit a usage limit, and when it resets: the rate_limit_event's
// resetsAt, else the time the message names (nil when neither says).
func usageLimit(text string, limit *rateLim, now time.Time) (*time.Time, bool) {
	if limit == nil && !usageLimitText.MatchString(text) {
		return nil, false
	}
	if limit != nil && limit.ResetsAt > 0 {
		at := time.Unix(int64(limit.ResetsAt), 0).UTC()
		return &at, true
	}
	if m := resetEpoch.FindStringSubmatch(text); m != nil {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		at := time.Unix(sec, 0).UTC()
		return &at, true
	}
	if at, ok := parseReset(text, now); ok {
		return &at, true
	}
	return nil, true
}

// parseReset reads "resets 4:35am (UTC)" or "resets Dec 1, 1:35am (America/New_York)" (the CLI writes
// the time in its own time zone, named in parentheses): the next such time after now, give or take a
// minute (the CLI rounds nothing, but its clock and ours may differ).
func parseReset(text string, now time.Time) (time.Time, bool) {
	m := resetClock.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, false
	}
	loc := time.UTC
	if m[7] != "" {
		l, err := time.LoadLocation(m[7])
		if err != nil {
			return time.Time{}, false
		}
		loc = l
	}
	hour, _ := strconv.Atoi(m[4])
	minute := 0
	if m[5] != "" {
		minute, _ = strconv.Atoi(m[5])
	}
	if hour < 1 || hour > 12 || minute > 59 {
		return time.Time{}, false
	}
	hour %= 12
	if m[6] == "pm" {
		hour += 12
	}
	local := now.In(loc)
	if m[1] == "" { // a time of day: today's, or tomorrow's when today's has passed
		at := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
		if at.Before(now.Add(-time.Minute)) {
			at = at.AddDate(0, 0, 1)
		}
		return at.UTC(), true
	}
	month, err := time.Parse("Jan", m[1])
	if err != nil {
		return time.Time{}, false
	}
	day, _ := strconv.Atoi(m[2])
	year := local.Year()
	explicitYear := m[3] != ""
	if explicitYear {
		year, _ = strconv.Atoi(m[3])
	}
	at := time.Date(year, month.Month(), day, hour, minute, 0, 0, loc)
	if at.Day() != day {
		return time.Time{}, false // Feb 30
	}
	if !explicitYear && at.Before(now.Add(-24*time.Hour)) {
		at = at.AddDate(1, 0, 0) // Jan 2 read on Dec 30
	}
	return at.UTC(), true
}

// retryMessage describes an api_retry line: "Claude API retry 3/10 in 4.1 s: 529".
func retryMessage(l *streamLine) string {
	why := l.errorKind()
	switch {
	case l.ErrorStatus != nil:
		why = strconv.Itoa(*l.ErrorStatus)
		if k := l.errorKind(); k != "" && k != "unknown" {
			why += " " + strings.ReplaceAll(k, "_", " ")
		}
	case why == "" || why == "unknown":
		why = "no answer (connection failed)"
	default:
		why = strings.ReplaceAll(why, "_", " ")
	}
	return fmt.Sprintf("Claude API retry %d/%d in %.1f s: %s", l.Attempt, l.MaxRetries, l.RetryDelayMS/1000, why)
}
