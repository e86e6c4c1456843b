// Package mergepatch applies RFC 7386 JSON merge patches: the shape in which the HTTP API takes partial
// updates (PATCH /agents/{name}) and a re-run takes changed parameters.
package mergepatch

// Apply applies patch to target (both as decoded by encoding/json) and returns the result: an object
// patch sets its members in target, recursively, and removes those it sets to null; any other patch
// replaces target. target may be modified.
func Apply(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = Apply(tm[k], v)
	}
	return tm
}
