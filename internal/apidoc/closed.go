package apidoc

// closeSchemas closes the object schemas of an OpenAPI document in place (see the package comment): every
// schema found under components/schemas or as the "schema" of a parameter, header or media type.
func closeSchemas(doc map[string]any) {
	if comps, ok := doc["components"].(map[string]any); ok {
		if schemas, ok := comps["schemas"].(map[string]any); ok {
			for _, s := range schemas {
				closeSchema(s, true)
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if k == "schema" {
					closeSchema(e, true)
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc["paths"])
	if comps, ok := doc["components"].(map[string]any); ok {
		for k, v := range comps {
			if k != "schemas" {
				walk(v)
			}
		}
	}
}

// closeSchema adds "unevaluatedProperties": false to s when it lists properties and says nothing about
// others, and does the same in its subschemas. closable is false for a subschema whose properties are not
// the whole of the instance's: an allOf branch, if, then, else, not, dependentSchemas (closing one of
// those would refuse the properties its siblings allow, or invert under not).
func closeSchema(v any, closable bool) {
	s, ok := v.(map[string]any)
	if !ok {
		return
	}
	if _, has := s["properties"]; has && closable {
		_, ap := s["additionalProperties"]
		_, up := s["unevaluatedProperties"]
		_, pp := s["patternProperties"]
		if !ap && !up && !pp {
			s["unevaluatedProperties"] = false
		}
	}
	for k, e := range s {
		switch k {
		case "properties", "patternProperties", "$defs":
			if m, ok := e.(map[string]any); ok {
				for _, sub := range m {
					closeSchema(sub, true)
				}
			}
		case "dependentSchemas":
			if m, ok := e.(map[string]any); ok {
				for _, sub := range m {
					closeSchema(sub, false)
				}
			}
		case "additionalProperties", "items", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties":
			closeSchema(e, true)
		case "prefixItems", "anyOf", "oneOf":
			if a, ok := e.([]any); ok {
				for _, sub := range a {
					closeSchema(sub, true)
				}
			}
		case "allOf":
			if a, ok := e.([]any); ok {
				for _, sub := range a {
					closeSchema(sub, false)
				}
			}
		case "if", "then", "else", "not":
			closeSchema(e, false)
		}
	}
}
