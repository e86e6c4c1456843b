package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// schema is a JSON Schema document, read for showing it and for typing -p values. It understands the
// keywords people write in parameters schemas (type, properties, required, items, enum, const, default,
// anyOf/oneOf/allOf, local $ref); anything it does not understand is left to the coordinator, which
// validates parameters for real.
type schema struct {
	root *object
}

// parseSchema reads a schema. An empty or null schema is nil: any parameters.
func parseSchema(raw json.RawMessage) (*schema, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %w", err)
	}
	root, _ := v.(*object)
	if root == nil {
		return nil, nil // true/false schemas: nothing to show or type
	}
	return &schema{root: root}, nil
}

// resolve follows local "$ref"s ("#/definitions/x", "#/$defs/x") from node, a few levels deep.
func (s *schema) resolve(node *object) *object {
	for range 8 {
		ref := node.str("$ref")
		if !strings.HasPrefix(ref, "#") {
			return node
		}
		target := s.pointer(ref[1:])
		if target == nil {
			return node
		}
		node = target
	}
	return node
}

// pointer resolves a JSON Pointer ("/definitions/x") in the root.
func (s *schema) pointer(p string) *object {
	if p == "" {
		return s.root
	}
	if !strings.HasPrefix(p, "/") {
		return nil
	}
	cur := any(s.root)
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		o, ok := cur.(*object)
		if !ok {
			return nil
		}
		cur = o.get(tok)
	}
	o, _ := cur.(*object)
	return o
}

// types returns the JSON types node accepts: its "type", else the types of its anyOf/oneOf/allOf
// branches, else those of its enum or const values. None means any (or unknown).
func (s *schema) types(node *object) []string {
	node = s.resolve(node)
	if node == nil {
		return nil
	}
	var out []string
	add := func(t string) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	switch t := node.get("type").(type) {
	case string:
		add(t)
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				add(s)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		list, _ := node.get(kw).([]any)
		for _, b := range list {
			if bo, ok := b.(*object); ok {
				for _, t := range s.types(bo) {
					add(t)
				}
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	values, _ := node.get("enum").([]any)
	if node.has("const") {
		values = append(values, node.get("const"))
	}
	for _, v := range values {
		add(jsonType(v))
	}
	return out
}

// jsonType is the JSON Schema type of a decoded value ("integer" for whole numbers).
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil || intPattern.MatchString(x.String()) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// property returns the schema of an object's property: from "properties", else "additionalProperties"
// when that is a schema. Nil when neither says.
func (s *schema) property(node *object, name string) *object {
	node = s.resolve(node)
	if p := node.obj("properties").obj(name); p != nil {
		return s.resolve(p)
	}
	if ap := node.obj("additionalProperties"); ap != nil {
		return s.resolve(ap)
	}
	return nil
}

// item returns the schema of an array's i-th item: prefixItems (2020-12) or an items array (draft-07
// tuples) by position, then items, then additionalItems.
func (s *schema) item(node *object, i int) *object {
	node = s.resolve(node)
	for _, kw := range []string{"prefixItems", "items"} {
		if list, ok := node.get(kw).([]any); ok {
			if i < len(list) {
				o, _ := list[i].(*object)
				return s.resolve(o)
			}
			if kw == "items" {
				o := node.obj("additionalItems")
				return s.resolve(o)
			}
		}
	}
	if o := node.obj("items"); o != nil {
		return s.resolve(o)
	}
	return nil
}

// required returns the required property names of an object schema.
func required(node *object) []string {
	list, _ := node.get("required").([]any)
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// ---- rendering ----

// typeText describes what node accepts in a few words: "string", "array of integer", "string or null",
// "one of: a, b", "any".
func (s *schema) typeText(node *object) string {
	node = s.resolve(node)
	if node == nil {
		return "any"
	}
	if node.has("const") {
		return "always " + compactJSON(node.get("const"))
	}
	if values, ok := node.get("enum").([]any); ok && len(values) > 0 {
		parts := make([]string, len(values))
		for i, v := range values {
			parts[i] = displayValue(v)
		}
		return "one of: " + strings.Join(parts, " | ")
	}
	types := s.types(node)
	if len(types) == 0 {
		return "any"
	}
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = t
		if t == "array" {
			if it := s.item(node, 0); it != nil {
				if _, tuple := node.get("items").([]any); !tuple && !node.has("prefixItems") {
					parts[i] = "array of " + s.typeText(it)
				}
			}
		}
	}
	return strings.Join(parts, " or ")
}

// displayValue shows a value as a person would type it: strings bare unless they need quotes.
func displayValue(v any) string {
	if str, ok := v.(string); ok && str != "" && !strings.ContainsAny(str, " ,\"\t\n") {
		return str
	}
	return compactJSON(v)
}

// constraints lists node's other rules (format, pattern, bounds, sizes), for the line under a property.
func constraints(node *object) []string {
	var out []string
	for _, c := range []struct{ key, label string }{
		{"format", "format"}, {"pattern", "pattern"},
		{"minimum", "minimum"}, {"exclusiveMinimum", "greater than"},
		{"maximum", "maximum"}, {"exclusiveMaximum", "less than"},
		{"multipleOf", "multiple of"},
		{"minLength", "min length"}, {"maxLength", "max length"},
		{"minItems", "min items"}, {"maxItems", "max items"},
		{"minProperties", "min properties"}, {"maxProperties", "max properties"},
	} {
		v := node.get(c.key)
		if v == nil {
			continue
		}
		if b, ok := v.(bool); ok { // draft-04 exclusiveMinimum: true
			if b {
				out = append(out, c.label)
			}
			continue
		}
		out = append(out, c.label+" "+displayValue(v))
	}
	if b, _ := node.get("uniqueItems").(bool); b {
		out = append(out, "unique items")
	}
	if node.get("deprecated") == true {
		out = append(out, "deprecated")
	}
	return out
}

// renderProperties writes an object schema's properties, one block each:
//
//	name   type, required, default X
//	       description, wrapped
//	       constraints
//
// Nested object properties follow their parent as parent.child, up to a few levels.
func (s *schema) renderProperties(w io.Writer, node *object, width int) {
	type row struct {
		name, head string
		lines      []string
	}
	var rows []row
	var walk func(node *object, prefix string, depth int)
	walk = func(node *object, prefix string, depth int) {
		node = s.resolve(node)
		props := node.obj("properties")
		if props == nil {
			return
		}
		req := required(node)
		for _, name := range props.keys {
			p := s.resolve(props.obj(name))
			head := []string{s.typeText(p)}
			if slices.Contains(req, name) {
				head = append(head, "required")
			}
			if p.has("default") {
				head = append(head, "default "+displayValue(p.get("default")))
			}
			r := row{name: prefix + name, head: strings.Join(head, ", ")}
			if d := strings.TrimSpace(p.str("description")); d != "" {
				r.lines = append(r.lines, d)
			} else if t := strings.TrimSpace(p.str("title")); t != "" {
				r.lines = append(r.lines, t)
			}
			if c := constraints(p); len(c) > 0 {
				r.lines = append(r.lines, strings.Join(c, "; "))
			}
			if it := s.item(p, 0); it != nil && slices.Contains(s.types(p), "array") {
				if c := constraints(it); len(c) > 0 {
					r.lines = append(r.lines, "each item: "+strings.Join(c, "; "))
				}
			}
			rows = append(rows, r)
			if depth < 3 && p.obj("properties") != nil {
				walk(p, prefix+name+".", depth+1)
			}
		}
	}
	walk(node, "", 0)
	nameWidth := 0
	for _, r := range rows {
		nameWidth = max(nameWidth, len(r.name))
	}
	nameWidth = min(nameWidth, 24)
	indent := strings.Repeat(" ", 2+nameWidth+2)
	for _, r := range rows {
		if len(r.name) > nameWidth {
			fmt.Fprintf(w, "  %s\n%s%s\n", r.name, indent, r.head)
		} else {
			fmt.Fprintf(w, "  %-*s  %s\n", nameWidth, r.name, r.head)
		}
		for _, l := range r.lines {
			for _, wl := range wrap(l, max(width-len(indent), 30)) {
				fmt.Fprintf(w, "%s%s\n", indent, wl)
			}
		}
	}
}

// renderSchema writes a parameters or output schema for people under a title ("Parameters"): its
// properties, whether others are accepted, or a short description when it is not an object schema.
func renderSchema(w io.Writer, title string, raw json.RawMessage, width int) error {
	s, err := parseSchema(raw)
	if err != nil {
		return err
	}
	if s == nil {
		fmt.Fprintf(w, "%s: any JSON object (no schema)\n", title)
		return nil
	}
	root := s.resolve(s.root)
	props := root.obj("properties")
	if props == nil || len(props.keys) == 0 {
		what := s.typeText(root)
		if what == "object" || what == "any" {
			what = "any JSON object"
			if ap, ok := root.get("additionalProperties").(bool); ok && !ap {
				what = "none (an empty object)"
			}
		}
		fmt.Fprintf(w, "%s: %s\n", title, what)
		if d := strings.TrimSpace(root.str("description")); d != "" {
			for _, l := range wrap(d, width-2) {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
		return nil
	}
	fmt.Fprintf(w, "%s:\n", title)
	s.renderProperties(w, root, width)
	switch ap := root.get("additionalProperties").(type) {
	case bool:
		if !ap {
			fmt.Fprintln(w, "  No other properties are accepted.")
		}
	case *object:
		fmt.Fprintf(w, "  Other properties: %s.\n", s.typeText(ap))
	}
	return nil
}

// wrap splits text into lines of at most width columns at spaces; existing line breaks are kept.
func wrap(text string, width int) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		words := strings.Fields(para)
		if len(words) == 0 {
			out = append(out, "")
			continue
		}
		line := words[0]
		for _, word := range words[1:] {
			if len([]rune(line))+1+len([]rune(word)) > width {
				out = append(out, line)
				line = word
				continue
			}
			line += " " + word
		}
		out = append(out, line)
	}
	return out
}
