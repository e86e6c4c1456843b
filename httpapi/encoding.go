package httpapi

import (
	"net/http"
	"net/url"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/wellformed"
)

// Text that cannot be stored as it came — a NUL, bytes that are not UTF-8 — is refused on the way in,
// whichever route it reaches: the path, every query parameter and the headers whose values reach the
// coordinator here ([checkRequestText]), every request body in readBody. Stores differ on such text
// (PostgreSQL refuses it, SQLite keeps it and serves it back, which breaks strict JSON readers), so
// without this the same request would be a 500 on one store and stored garbage on the other.

// textHeaders are the request headers whose values reach the coordinator: X-Agent-Session-Id becomes a
// parent_session_id; the MCP server reads the next two; the event stream the last.
var textHeaders = []string{HeaderSessionID, "X-Agent-Tags", "X-Additional-Demands", "Last-Event-ID"}

func badEncoding(where string, err error) error {
	return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_encoding", "%s %v: text must be UTF-8 without NUL characters", where, err)
}

// checkRequestText refuses a request whose path, query or text headers hold malformed text.
func checkRequestText(r *http.Request) error {
	if err := wellformed.String(r.URL.Path); err != nil {
		return badEncoding("the path", err)
	}
	if r.URL.RawQuery != "" {
		// Pairs that do not parse are left to the handlers, which ignore them as url.Values does.
		q, _ := url.ParseQuery(r.URL.RawQuery)
		for k, vs := range q {
			if err := wellformed.String(k); err != nil {
				return badEncoding("a query parameter name", err)
			}
			for _, v := range vs {
				if err := wellformed.String(v); err != nil {
					return badEncoding("query parameter "+k, err)
				}
			}
		}
	}
	for _, h := range textHeaders {
		for _, v := range r.Header.Values(h) {
			if err := wellformed.String(v); err != nil {
				return badEncoding("header "+h, err)
			}
		}
	}
	return nil
}

// checkBodyText refuses a JSON body whose text is malformed (see [wellformed.JSON]).
func checkBodyText(body []byte) error {
	if err := wellformed.JSON(body); err != nil {
		return badEncoding("the body", err)
	}
	return nil
}
