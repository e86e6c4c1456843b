package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

var _ orchestrator.ArtifactKeeper = (*Client)(nil)

// artifactURL is the path of an artifact. The name is one escaped segment (its slashes as %2F), which the
// coordinator reads back as the name; a name's slashes may also be sent as they are.
func artifactURL(sessionID, name string) string {
	return "/sessions/" + seg(sessionID) + "/artifacts/" + seg(name)
}

// stream sends one request whose body (or answer) streams, outside the retrying client: a body read
// once cannot be sent again. A status of 300 or more is the API's error.
func (c *Client) stream(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.URL()+path, body)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	for k, vs := range c.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	token := c.cfg.Token
	if cred := c.runner.Load(); cred != nil {
		token = *cred
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, &transportError{op: method + " " + path, err: err}
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, decodeError(resp.StatusCode, http.StatusText(resp.StatusCode), data)
	}
	return resp, nil
}

// PutArtifact implements [orchestrator.ArtifactKeeper]: PUT /sessions/{id}/artifacts/{name}, the body
// streamed as it is. It is sent once, never retried (a reader cannot be read twice).
func (c *Client) PutArtifact(ctx context.Context, p orchestrator.PutArtifactParams, body io.Reader) (*orchestrator.Artifact, error) {
	if err := orchestrator.ValidArtifactName(p.Name); err != nil {
		return nil, err
	}
	ct := p.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	resp, err := c.stream(ctx, http.MethodPut, artifactURL(p.SessionID, p.Name), body, http.Header{"Content-Type": {ct}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a orchestrator.Artifact
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&a); err != nil {
		return nil, &orchestrator.Error{Kind: ErrServer, Code: "invalid_response", Message: "PUT artifact: cannot read the answer: " + err.Error()}
	}
	return &a, nil
}

// ListArtifacts implements [orchestrator.ArtifactKeeper]: GET /sessions/{id}/artifacts.
func (c *Client) ListArtifacts(ctx context.Context, sessionID string) ([]*orchestrator.Artifact, error) {
	var out artifactList
	if _, err := c.do(ctx, call{method: "GET", path: "/sessions/" + seg(sessionID) + "/artifacts"}, &out); err != nil {
		return nil, err
	}
	return out.Artifacts, nil
}

// OpenArtifact implements [orchestrator.ArtifactKeeper]: GET /sessions/{id}/artifacts/{name}, the
// answer's body streamed to the caller, who closes it. Its record comes from the answer's headers (its
// name, size, SHA-256 and content type; not its run or time).
func (c *Client) OpenArtifact(ctx context.Context, sessionID, name string) (*orchestrator.Artifact, io.ReadCloser, error) {
	if err := orchestrator.ValidArtifactName(name); err != nil {
		return nil, nil, err
	}
	resp, err := c.stream(ctx, http.MethodGet, artifactURL(sessionID, name), nil, nil)
	if err != nil {
		return nil, nil, err
	}
	a := &orchestrator.Artifact{
		SessionID: sessionID, Name: name, Size: resp.ContentLength,
		SHA256: strings.Trim(resp.Header.Get("ETag"), `"`), ContentType: resp.Header.Get("Content-Type"),
	}
	return a, resp.Body, nil
}
