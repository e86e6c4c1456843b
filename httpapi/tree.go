package httpapi

import (
	"context"
	"net/url"
	"strconv"

	"net/http"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// getSessionTree serves GET /sessions/{id}/tree[?depth=&max_children=&max_nodes=]: the session, its
// descendants and the sums of every subtree (docs/usage.md, "The tree"). depth=0 is the root alone.
func (s *server) getSessionTree(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	p, err := treeParams(r)
	if err != nil {
		return err
	}
	tree, err := s.coord.SessionTree(r.Context(), id, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tree)
	return nil
}

// treeParams reads the bounds of a tree from the query.
func treeParams(r *http.Request) (orchestrator.TreeParams, error) {
	var p orchestrator.TreeParams
	if r.URL.Query().Has("depth") {
		d, err := queryInt(r, "depth", 0, 0, 1<<20)
		if err != nil {
			return p, err
		}
		p.Depth = int(d)
		if d == 0 {
			p.Depth = -1 // the root alone
		}
	}
	n, err := queryInt(r, "max_children", 0, 1, orchestrator.MaxTreeChildren)
	if err != nil {
		return p, err
	}
	p.MaxChildren = int(n)
	n, err = queryInt(r, "max_nodes", 0, 1, orchestrator.MaxTreeNodes)
	if err != nil {
		return p, err
	}
	p.MaxNodes = int(n)
	return p, nil
}

// SessionTree implements [orchestrator.Coordinator].
func (c *Client) SessionTree(ctx context.Context, id string, p orchestrator.TreeParams) (*orchestrator.SessionTree, error) {
	q := url.Values{}
	switch {
	case p.Depth < 0:
		q.Set("depth", "0")
	case p.Depth > 0:
		q.Set("depth", strconv.Itoa(p.Depth))
	}
	if p.MaxChildren != 0 {
		q.Set("max_children", strconv.Itoa(p.MaxChildren))
	}
	if p.MaxNodes != 0 {
		q.Set("max_nodes", strconv.Itoa(p.MaxNodes))
	}
	var out orchestrator.SessionTree
	if _, err := c.do(ctx, call{method: "GET", path: "/sessions/" + seg(id) + "/tree", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SessionTree: a runner reads the trees of the sessions in its scope (a session's descendants are in
// scope with it).
func (s *runnerScoped) SessionTree(ctx context.Context, id string, p orchestrator.TreeParams) (*orchestrator.SessionTree, error) {
	if err := s.sessionAccess(ctx, id); err != nil {
		return nil, err
	}
	return s.inner.SessionTree(ctx, id, p)
}
