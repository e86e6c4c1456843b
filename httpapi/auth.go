package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// Role is what a bearer token may do. Every route lists the roles that may call it (see [Routes]); admin
// may call every route.
type Role string

const (
	// RoleAdmin may call every route, including the agent registry's writes and runner administration.
	RoleAdmin Role = "admin"
	// RoleClient starts, reads and stops runs and sessions, reads agents and reads and appends events.
	RoleClient Role = "client"
	// RoleRunner is the shared runner token's (ORCHESTRATOR_RUNNER_TOKEN): it may only register a runner
	// (POST /runner/register). Everything a runner does after that it does with its own credential.
	RoleRunner Role = "runner"
	// RoleRunnerInstance is a registered runner's own credential ([RunnerCredential]), bound to that one
	// runner: the /runner/* routes for itself, and what its gateway forwards for its executors — reading
	// agents, and, within the sessions of the runs it holds or held and their descendants, starting child
	// runs, reading sessions, results and events, appending events and stopping sessions. It is never
	// configured in [Config.Tokens]; a registration returns it.
	RoleRunnerInstance Role = "runner_instance"
	// RoleMetrics may only read GET /metrics: the token a Prometheus server scrapes with, which can neither
	// read sessions nor start runs.
	RoleMetrics Role = "metrics"
)

// RunnerVerifier checks a runner's own credential: nil when secret is the one the runner's latest
// registration returned, an error wrapping [orchestrator.ErrUnauthorized] when it is not. When the
// Coordinator given to [NewHandler] implements it (coordinator.Coordinator does) and tokens are
// configured, runners authenticate with [RunnerCredential]; without it only the configured tokens are
// accepted.
type RunnerVerifier interface {
	VerifyRunnerSecret(ctx context.Context, runnerID, secret string) error
}

// RunnerCredential returns the bearer token of a registered runner: its runner id and the runner_secret
// its registration returned, joined by a dot ("lnch_0123456789abcdef.aors_…"). [Client] sends it on every
// call after a registration.
func RunnerCredential(runnerID, secret string) string { return runnerID + "." + secret }

// parseRunnerCredential splits a bearer token of the shape RunnerCredential makes; ok is false for
// anything else.
func parseRunnerCredential(tok string) (runnerID, secret string, ok bool) {
	runnerID, secret, ok = strings.Cut(tok, ".")
	if !ok || len(runnerID) > 64 || !strings.HasPrefix(runnerID, ids.Runner) ||
		!strings.HasPrefix(secret, ids.RunnerSecret) || len(secret) > 256 {
		return "", "", false
	}
	for _, c := range runnerID {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return "", "", false
		}
	}
	return runnerID, secret, true
}

// Environment variables the binaries read their tokens from (see [ParseTokens]). Each holds one token or
// a comma-separated list.
const (
	EnvAdminToken  = "ORCHESTRATOR_ADMIN_TOKEN"
	EnvClientToken = "ORCHESTRATOR_CLIENT_TOKEN"
	EnvRunnerToken = "ORCHESTRATOR_RUNNER_TOKEN"
)

// HeaderSessionID is the header through which an AI agent's tool calls name the session making them. POST
// /runs uses it as parent_session_id when the body names none, which links the children an agent starts
// through MCP to the agent's session.
const HeaderSessionID = "X-Agent-Session-Id"

// ParseTokens builds a token → role map from comma-separated token lists, one per role (flag values, say).
// Empty lists and empty items are skipped. A token listed under two roles is an error: which role it has
// would be ambiguous.
func ParseTokens(admin, client, runner string) (map[string]Role, error) {
	out := map[string]Role{}
	for _, set := range []struct {
		role Role
		list string
	}{{RoleAdmin, admin}, {RoleClient, client}, {RoleRunner, runner}} {
		for _, tok := range strings.Split(set.list, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" {
				continue
			}
			if strings.ContainsAny(tok, " \t\r\n") {
				return nil, fmt.Errorf("httpapi: a %s token contains white space", set.role)
			}
			if prev, ok := out[tok]; ok && prev != set.role {
				return nil, fmt.Errorf("httpapi: the same token is configured for roles %s and %s", prev, set.role)
			}
			out[tok] = set.role
		}
	}
	return out, nil
}

// CheckListenAddr refuses to serve an open API (no tokens configured) on an address other machines can
// reach, unless insecure is set. Loopback addresses ("127.0.0.1:8765", "[::1]:8765", "localhost:8765")
// are always allowed; ":8765" listens on every interface and is not.
func CheckListenAddr(addr string, open, insecure bool) error {
	if !open || insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("httpapi: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("httpapi: refusing to serve without tokens on %q, which is reachable from other hosts: "+
		"configure tokens (%s, %s, %s), listen on a loopback address, or allow it explicitly (insecure)",
		addr, EnvAdminToken, EnvClientToken, EnvRunnerToken)
}

// Authenticator decides whether a request may call a route. It returns the request to serve — it may carry
// values in its context for the Coordinator behind the handler (the gateway's scoping does) — or an error
// wrapping [orchestrator.ErrUnauthorized] (401) or [orchestrator.ErrForbidden] (403). It is not called
// for public routes (GET /health).
type Authenticator interface {
	Authenticate(r *http.Request, rt Route) (*http.Request, error)
}

// TokenAuth is the coordinator's [Authenticator]: bearer tokens with roles.
//
// Tokens are compared in constant time: the presented token is hashed (SHA-256, so every comparison is of
// 32 bytes whatever the lengths) and compared with every configured token's hash, with no early exit on a
// match, so timing reveals neither which token matched nor how much of one did.
//
// [NewHandler] builds one from [Config.Tokens] that also takes registered runners' own credentials
// ([RunnerCredential]), checked by the Coordinator it serves ([RunnerVerifier]). One built with
// NewTokenAuth takes the configured tokens only.
type TokenAuth struct {
	hashes [][sha256.Size]byte
	roles  []Role
	// runners checks runner credentials; nil: there are none.
	runners RunnerVerifier
}

// NewTokenAuth returns a TokenAuth for the token → role map.
func NewTokenAuth(tokens map[string]Role) *TokenAuth {
	a := &TokenAuth{}
	for tok, role := range tokens {
		a.hashes = append(a.hashes, sha256.Sum256([]byte(tok)))
		a.roles = append(a.roles, role)
	}
	return a
}

// Role returns the role of token, or false when it is not configured.
func (a *TokenAuth) Role(token string) (Role, bool) {
	h := sha256.Sum256([]byte(token))
	found, idx := 0, 0
	for i := range a.hashes {
		eq := subtle.ConstantTimeCompare(h[:], a.hashes[i][:])
		idx = subtle.ConstantTimeSelect(eq, i, idx)
		found |= eq
	}
	if found == 0 || token == "" {
		return "", false
	}
	return a.roles[idx], true
}

// Authenticate implements [Authenticator]: a missing or unknown token is 401, a role the route does not
// allow is 403. The role is put into the request's context ([RoleFromContext]); for a runner's own
// credential, the runner too, which binds the request to that runner (see [RoleRunnerInstance]).
func (a *TokenAuth) Authenticate(r *http.Request, rt Route) (*http.Request, error) {
	tok, ok := BearerToken(r)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrUnauthorized, "unauthorized", "a bearer token is required (Authorization: Bearer <token>)")
	}
	role, ok := a.Role(tok)
	runnerID := ""
	if !ok && a.runners != nil {
		if id, secret, isRunner := parseRunnerCredential(tok); isRunner {
			err := a.runners.VerifyRunnerSecret(r.Context(), id, secret)
			if err != nil {
				return nil, err
			}
			role, runnerID, ok = RoleRunnerInstance, id, true
		}
	}
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrUnauthorized, "invalid_token", "the bearer token is not valid")
	}
	if !rt.Allows(role) {
		return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "forbidden", "role %s may not call %s", role, rt)
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, principal{role, runnerID})), nil
}

// BearerToken returns the token of an "Authorization: Bearer <token>" header.
func BearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// principal is who a TokenAuth authenticated: a role and, for a runner's own credential, the runner.
type principal struct {
	role   Role
	runner string
}

type principalKey struct{}

// boundRunner returns the runner a request's credential is bound to: set for a runner's own credential,
// empty for every other caller (admin, client, an open API).
func boundRunner(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p.runner
}

// RoleFromContext returns the role a [TokenAuth] authenticated the request with.
func RoleFromContext(ctx context.Context) (Role, bool) {
	p, ok := ctx.Value(principalKey{}).(principal)
	return p.role, ok
}
