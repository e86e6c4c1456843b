package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

var (
	intPattern    = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	numberPattern = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

// buildParams makes a run's parameters: base (the --params object, or nil) with each -p key=value pair
// set on it, its value typed from the property's schema in agentSchema (see typedValue). A key given
// twice with -p is an error, except for arrays, whose values are appended. It returns nil when there is
// nothing to send.
func buildParams(agentSchema json.RawMessage, base []byte, pairs []string) (json.RawMessage, error) {
	if len(base) == 0 && len(pairs) == 0 {
		return nil, nil
	}
	params := &object{m: map[string]any{}}
	if len(base) > 0 {
		v, err := decodeJSON(base)
		if err != nil {
			return nil, usageErrorf("--params is not valid JSON: %v", err)
		}
		o, ok := v.(*object)
		if !ok {
			return nil, usageErrorf("--params must be a JSON object, not %s", jsonType(v))
		}
		params = o
	}
	s, err := parseSchema(agentSchema)
	if err != nil {
		return nil, err
	}
	var root *object
	if s != nil {
		root = s.root
	}
	var given []string
	for _, pair := range pairs {
		key, raw, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return nil, usageErrorf("-p %q: want key=value", pair)
		}
		var prop *object
		if s != nil {
			prop = s.property(root, key)
		}
		v := typedValue(s, prop, raw)
		if slices.Contains(given, key) {
			prev, isList := params.get(key).([]any)
			next, alsoList := v.([]any)
			if !isList || !alsoList {
				return nil, usageErrorf("-p %s is given twice (only array parameters may repeat)", key)
			}
			v = append(prev, next...)
		}
		given = append(given, key)
		params.set(key, v)
	}
	return marshal(params)
}

// typedValue converts a -p value to the JSON type its schema asks for, trying the types the schema
// allows in this order: integer, number, boolean, array (a JSON array, or a comma-separated list whose
// items are typed from the item schema), object (JSON), null ("null"), string. A value that fits none of
// them — or a key the schema does not know — stays a string, so that the coordinator's validation says
// what is wrong with it, with its path.
func typedValue(s *schema, prop *object, raw string) any {
	if s == nil || prop == nil {
		return raw
	}
	types := s.types(prop)
	for _, t := range []string{"integer", "number", "boolean", "array", "object", "null", "string"} {
		if !slices.Contains(types, t) {
			continue
		}
		switch t {
		case "integer":
			if intPattern.MatchString(raw) {
				return json.Number(raw)
			}
		case "number":
			if numberPattern.MatchString(raw) {
				return json.Number(raw)
			}
		case "boolean":
			switch strings.ToLower(raw) {
			case "true", "yes", "on", "1":
				return true
			case "false", "no", "off", "0":
				return false
			}
		case "array":
			if strings.HasPrefix(strings.TrimSpace(raw), "[") {
				if v, err := decodeJSON([]byte(raw)); err == nil {
					if list, ok := v.([]any); ok {
						return list
					}
				}
			}
			list := []any{}
			if strings.TrimSpace(raw) == "" {
				return list
			}
			for i, part := range strings.Split(raw, ",") {
				list = append(list, typedValue(s, s.item(prop, i), strings.TrimSpace(part)))
			}
			return list
		case "object":
			if v, err := decodeJSON([]byte(raw)); err == nil {
				if o, ok := v.(*object); ok {
					return o
				}
			}
		case "null":
			if raw == "null" {
				return nil
			}
		case "string":
			return raw
		}
	}
	return raw
}

// pairsSchema returns the agent's parameters schema when -p pairs need it to type their values, and nil
// (no request) when there are none.
func pairsSchema(ctx context.Context, coord orchestrator.Coordinator, agent string, pairs []string) (json.RawMessage, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	info, err := coord.GetAgent(ctx, agent)
	if err != nil {
		return nil, err
	}
	schema, _ := info.Schemas()
	return schema, nil
}

// params builds an agent's parameters from the --params flag (JSON, @FILE or @-) with the -p pairs on top,
// typed by the agent's schema when there are pairs.
func (e *env) params(ctx context.Context, coord orchestrator.Coordinator, agent, flag string, pairs []string) (json.RawMessage, error) {
	base, err := e.readParams(flag)
	if err != nil {
		return nil, err
	}
	paramSchema, err := pairsSchema(ctx, coord, agent, pairs)
	if err != nil {
		return nil, err
	}
	return buildParams(paramSchema, base, pairs)
}
