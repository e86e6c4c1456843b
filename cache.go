package orchestrator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// CachePolicy is a deterministic blueprint's result cache: a start whose agent, blueprint and inputs
// match a completed session younger than TTLSeconds completes at once with that session's result, without
// a runner and without a slot (see [CacheKey] for what "match" means). Identical starts that arrive while
// the first one executes wait for it and share its result: the command runs once (single flight).
//
// Only completed results are cached: a failed, stopped or truncated result never is, and the starts that
// waited on it run themselves, one at a time, until one completes. AI agents cannot have a cache (their
// output is not a function of their input): a blueprint that tries is refused.
type CachePolicy struct {
	// TTLSeconds is how long a completed result answers identical starts: 1 second to 30 days.
	TTLSeconds int `json:"ttl_seconds"`
}

// TTL returns TTLSeconds as a duration.
func (p *CachePolicy) TTL() time.Duration { return time.Duration(p.TTLSeconds) * time.Second }

// maxCacheTTLSeconds caps ttl_seconds at 30 days: a result older than that is worth executing again.
const maxCacheTTLSeconds = 30 * 24 * 3600

func (p *CachePolicy) validate() error {
	if p.TTLSeconds < 1 || p.TTLSeconds > maxCacheTTLSeconds {
		return fmt.Errorf("cache.ttl_seconds must be between 1 and %d (30 days)", maxCacheTTLSeconds)
	}
	return nil
}

// CacheMode is what a start asks of its agent's result cache ([StartRunParams].Cache).
type CacheMode string

const (
	// CacheUse (the default, also spelled "") answers from the cache when it can, joins an identical start
	// in flight, and otherwise executes and fills the cache.
	CacheUse CacheMode = "use"
	// CacheBypass executes whatever the cache holds, without joining a start in flight, and still writes
	// its result when it completes: the result it replaces stays readable until then.
	CacheBypass CacheMode = "bypass"
	// CacheRefresh drops the cached result at once and executes; identical starts that arrive meanwhile
	// wait for it, as they wait for any start that fills the cache.
	CacheRefresh CacheMode = "refresh"
)

// Valid reports whether m is a known cache mode (or empty).
func (m CacheMode) Valid() bool {
	switch m {
	case "", CacheUse, CacheBypass, CacheRefresh:
		return true
	}
	return false
}

// EventCacheHit opens a session answered from the result cache: {"cached_from": session id, "cache_key"}.
// The session's result and run_ended events follow it at once.
const EventCacheHit = "cache_hit"

// CacheKey is the result cache's key of a start: the hex SHA-256 of the agent's name, the blueprint's
// content hash ([Blueprint.ContentHash]) and the canonical JSON of the start's inputs — its validated
// parameters after schema defaults, its metadata.env, its project directory and the output schema it asked
// for. Canonical JSON sorts object keys and drops insignificant whitespace, so key order, spacing and an
// explicit default value give the same key.
func CacheKey(agentName string, b *Blueprint, params json.RawMessage, env map[string]string, projectDir string, outputSchema json.RawMessage) (string, error) {
	canon, err := CanonicalJSON(params)
	if err != nil {
		return "", err
	}
	var schema []byte
	if len(bytes.TrimSpace(outputSchema)) > 0 {
		if schema, err = CanonicalJSON(outputSchema); err != nil {
			return "", err
		}
	}
	envJSON, _ := json.Marshal(env) // maps marshal with sorted keys
	h := sha256.New()
	for _, part := range [][]byte{[]byte(agentName), []byte(b.ContentHash()), canon, envJSON, []byte(projectDir), schema} {
		fmt.Fprintf(h, "%d:", len(part)) // length-prefixed, so no two inputs run together alike
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ContentHash is the hex SHA-256 of what makes a blueprint's results what they are: its type, command,
// parameters and output schemas (canonical JSON), env, allowed_env and version. A change to any of them
// changes the hash, and so every [CacheKey] of the agent: nothing cached before the change answers after
// it.
func (b *Blueprint) ContentHash() string {
	params, _ := CanonicalJSON(b.ParametersSchema)
	output, _ := CanonicalJSON(b.OutputSchema)
	allowed := append([]string(nil), b.AllowedEnv...)
	sort.Strings(allowed)
	doc, _ := json.Marshal(struct {
		Type       AgentType         `json:"type"`
		Command    string            `json:"command"`
		Params     json.RawMessage   `json:"parameters_schema"`
		Output     json.RawMessage   `json:"output_schema"`
		Env        map[string]string `json:"env"`
		AllowedEnv []string          `json:"allowed_env"`
		Version    string            `json:"version"`
		Timeout    float64           `json:"timeout_seconds"`
	}{b.Type, b.Command, params, output, b.Env, allowed, b.Version, b.TimeoutSeconds})
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON returns doc with object keys sorted and insignificant whitespace removed; numbers keep
// their text. An empty document is JSON null.
func CanonicalJSON(doc json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return json.RawMessage("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return json.RawMessage(strings.TrimSuffix(buf.String(), "\n")), nil
}
