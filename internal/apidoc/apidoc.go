// Package apidoc reads the API's OpenAPI 3.1 description (docs/openapi.yaml) and checks HTTP answers
// against it: the tests of package httpapi use it to keep the description in step with the route table,
// and the end-to-end tests to validate every answer the real coordinator gives them. Only tests import it.
//
// Schemas are JSON Schema 2020-12, validated with github.com/santhosh-tekuri/jsonschema/v6 (formats
// asserted). The description's object schemas are checked closed: an object schema that lists properties
// and says nothing of other ones is compiled as if it had "unevaluatedProperties": false, so a field the
// coordinator sends and the description lacks is an error (see [Doc.CheckResponse]). The document itself
// stays open, so that clients generated from it accept fields added later.
package apidoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// docURL is the base URL the document is compiled under; "$ref": "#/components/…" resolves within it.
const docURL = "https://orchestrator.invalid/openapi.json"

// Methods are the HTTP methods an OpenAPI path item may hold, in the order operations are listed.
var Methods = []string{"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"}

// Doc is a loaded OpenAPI description.
type Doc struct {
	// raw is the document as JSON values (map[string]any, []any, string, json.Number, bool, nil).
	raw map[string]any
	// closed is raw with its object schemas closed, for validation.
	closed map[string]any
	ops    []*Operation

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
}

// Operation is one documented route.
type Operation struct {
	// Method is upper case ("GET"); Path is the path template ("/agents/{name}").
	Method, Path string
	// ID is the operationId.
	ID string
	// Roles are the x-roles extension: the roles the route admits.
	Roles []string
	// Public is set when the operation needs no credentials (security: []).
	Public bool
	// LongPoll is the x-long-poll extension.
	LongPoll bool
	// PathParams are the names of the path's template parameters, in order.
	PathParams []string

	segs []string
	ptr  string // JSON pointer of the operation object
	obj  map[string]any
}

func (op *Operation) String() string { return op.Method + " " + op.Path }

// Load reads and parses the description at path.
func Load(path string) (*Doc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// Parse parses a description written in YAML (or JSON, which is YAML).
func Parse(data []byte) (*Doc, error) {
	var y any
	if err := yaml.Unmarshal(data, &y); err != nil {
		return nil, err
	}
	j, err := toJSON(y, "")
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	root, ok := raw.(map[string]any)
	if !ok {
		return nil, errors.New("the document is not an object")
	}
	closedDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b)) // a second copy, to close
	if err != nil {
		return nil, err
	}
	d := &Doc{raw: root, closed: closedDoc.(map[string]any), schemas: map[string]*jsonschema.Schema{}}
	closeSchemas(d.closed)
	if err := d.collectOperations(); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, d.closed); err != nil {
		return nil, err
	}
	d.compiler = c
	return d, nil
}

// toJSON turns what the YAML decoder made into JSON values. A mapping key that is not a string (an
// unquoted status code such as 200) is refused: JSON has only string keys, and OpenAPI asks for quotes.
func toJSON(v any, at string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			j, err := toJSON(e, at+"/"+k)
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case map[any]any:
		for k := range v {
			if _, ok := k.(string); !ok {
				return nil, fmt.Errorf("at %s: key %v is not a string: quote it (\"%v\")", at, k, k)
			}
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			j, err := toJSON(e, at+"/"+k.(string))
			if err != nil {
				return nil, err
			}
			out[k.(string)] = j
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			j, err := toJSON(e, at+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	}
	return v, nil
}

func (d *Doc) collectOperations() error {
	paths, _ := d.raw["paths"].(map[string]any)
	keys := sortedKeys(paths)
	for _, p := range keys {
		item, ok := paths[p].(map[string]any)
		if !ok {
			return fmt.Errorf("paths[%q] is not an object", p)
		}
		segs := splitPath(p)
		var params []string
		for _, s := range segs {
			if name, ok := templateParam(s); ok {
				params = append(params, name)
			}
		}
		for _, m := range Methods {
			o, ok := item[strings.ToLower(m)]
			if !ok {
				continue
			}
			obj, ok := o.(map[string]any)
			if !ok {
				return fmt.Errorf("%s %s is not an object", m, p)
			}
			op := &Operation{Method: m, Path: p, PathParams: params, segs: segs, obj: obj,
				ptr: "/paths/" + escapePtr(p) + "/" + strings.ToLower(m)}
			op.ID, _ = obj["operationId"].(string)
			if roles, ok := obj["x-roles"].([]any); ok {
				for _, r := range roles {
					s, _ := r.(string)
					op.Roles = append(op.Roles, s)
				}
			}
			if sec, ok := obj["security"].([]any); ok && len(sec) == 0 {
				op.Public = true
			}
			op.LongPoll, _ = obj["x-long-poll"].(bool)
			d.ops = append(d.ops, op)
		}
	}
	return nil
}

// Operations returns every documented operation, by path, then in [Methods] order.
func (d *Doc) Operations() []*Operation { return slices.Clone(d.ops) }

// splitPath splits a URL path into its segments, without the leading "/".
func splitPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// templateParam returns the name of a path template segment ("{name}").
func templateParam(seg string) (string, bool) {
	if len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
		return seg[1 : len(seg)-1], true
	}
	return "", false
}

// Match finds the operation that serves method on the URL path urlPath (escaped, as sent), the way Go's
// ServeMux picks a route: among the documented paths that match, with the method (GET also serving
// HEAD), the most specific. allowed lists the methods of the matching paths when none has method, so the
// answer is 405; both are empty when no path matches (404).
func (d *Doc) Match(method, urlPath string) (op *Operation, allowed []string) {
	segs := splitPath(urlPath)
	for i, s := range segs {
		if u, err := url.PathUnescape(s); err == nil {
			segs[i] = u
		}
	}
	best := -1
	for _, o := range d.ops {
		n, ok := matchSegs(o.segs, segs)
		if !ok {
			continue
		}
		if o.Method == method || (method == "HEAD" && o.Method == "GET") {
			if n > best {
				op, best = o, n
			}
			continue
		}
		allowed = append(allowed, o.Method)
	}
	if op != nil {
		return op, nil
	}
	return nil, allowed
}

// matchSegs matches a template's segments against a path's and returns how many literal segments
// matched (more is more specific).
func matchSegs(tmpl, segs []string) (int, bool) {
	if len(tmpl) != len(segs) {
		return 0, false
	}
	lit := 0
	for i, t := range tmpl {
		if _, ok := templateParam(t); ok {
			if segs[i] == "" {
				return 0, false
			}
			continue
		}
		if t != segs[i] {
			return 0, false
		}
		lit++
	}
	return lit, true
}

// Response returns the response object documented for status, and its JSON pointer: the exact status,
// else its range ("4XX"), else "default". References to components/responses are followed.
func (d *Doc) Response(op *Operation, status int) (map[string]any, string, bool) {
	responses, _ := op.obj["responses"].(map[string]any)
	code := strconv.Itoa(status)
	for _, key := range []string{code, code[:1] + "XX", "default"} {
		if r, ok := responses[key].(map[string]any); ok {
			return d.follow(r, op.ptr+"/responses/"+escapePtr(key))
		}
	}
	return nil, "", false
}

// Statuses lists the statuses documented for op.
func (d *Doc) Statuses(op *Operation) []string {
	responses, _ := op.obj["responses"].(map[string]any)
	return sortedKeys(responses)
}

// follow resolves a Reference Object (one "$ref" into this document) to the object and its pointer.
func (d *Doc) follow(obj map[string]any, ptr string) (map[string]any, string, bool) {
	for range 10 {
		ref, ok := obj["$ref"].(string)
		if !ok {
			return obj, ptr, true
		}
		target, err := d.resolve(ref)
		if err != nil {
			return nil, "", false
		}
		next, ok := target.(map[string]any)
		if !ok {
			return nil, "", false
		}
		obj, ptr = next, strings.TrimPrefix(ref, "#")
	}
	return nil, "", false
}

// resolve returns the value a local reference ("#/components/…") points to.
func (d *Doc) resolve(ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("reference %q is not local to the document", ref)
	}
	var cur any = d.raw
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("reference %q does not resolve (no %q)", ref, tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("reference %q does not resolve (no item %q)", ref, tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("reference %q does not resolve (%q is in a scalar)", ref, tok)
		}
	}
	return cur, nil
}

// Schema compiles (once) the schema at the JSON pointer ptr of the document, closed as the package
// comment says.
func (d *Doc) Schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[ptr]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(docURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	d.schemas[ptr] = s
	return s, nil
}

// CheckResponse checks an answer against the description: that the operation serving method and urlPath
// documents status, that the answer's media type is one it documents, and that a JSON body matches the
// documented schema (a text/event-stream body: each frame's data, see [Doc.CheckEventStream]). An answer
// of no documented route must be the JSON error 404 (no path matches) or 405 (the path has other
// methods). method and urlPath are those of the request that was answered (after redirects).
func (d *Doc) CheckResponse(method, urlPath string, status int, contentType string, body []byte) error {
	op, allowed := d.Match(method, urlPath)
	if op == nil {
		want := 404
		if len(allowed) > 0 {
			want = 405
		}
		if status != want {
			return fmt.Errorf("%s %s matches no documented route (%s), so the answer should be %d; it is %d: a route that is served but not documented?",
				method, urlPath, map[bool]string{true: "the path has " + strings.Join(allowed, ", "), false: "no documented path"}[len(allowed) > 0], want, status)
		}
		return d.checkBody("/components/schemas/Error", "application/json", contentType, body)
	}
	resp, rptr, ok := d.Response(op, status)
	if !ok {
		return fmt.Errorf("%s (for %s %s) answered %d, which docs/openapi.yaml does not document (it documents %s); body: %s",
			op, method, urlPath, status, strings.Join(d.Statuses(op), ", "), snippet(body))
	}
	if method == "HEAD" {
		return nil
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			return fmt.Errorf("%s answered %d with a body, but the description documents none: %s", op, status, snippet(body))
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("%s answered %d with Content-Type %q: %v", op, status, contentType, err)
	}
	// The most specific key applies, as OpenAPI says: the media type itself, else its range (text/*),
	// else */* (a download served with its own type).
	key := mt
	media, ok := content[key].(map[string]any)
	for _, r := range []string{strings.SplitN(mt, "/", 2)[0] + "/*", "*/*"} {
		if !ok {
			key = r
			media, ok = content[key].(map[string]any)
		}
	}
	if !ok {
		return fmt.Errorf("%s answered %d as %s, which the description does not document (it documents %s); body: %s",
			op, status, mt, strings.Join(sortedKeys(content), ", "), snippet(body))
	}
	if _, ok := media["schema"]; !ok {
		return nil
	}
	sptr := rptr + "/content/" + escapePtr(key) + "/schema"
	if err := d.checkBody(sptr, key, contentType, body); err != nil {
		return fmt.Errorf("%s answered %d: %w", op, status, err)
	}
	return nil
}

// checkBody validates body, of media type mt, against the schema at sptr.
func (d *Doc) checkBody(sptr, mt, contentType string, body []byte) error {
	got, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "text/event-stream":
		return d.CheckEventStream(sptr, body)
	case mt != "application/json" && !strings.HasSuffix(mt, "+json"):
		return nil
	case got != mt:
		return fmt.Errorf("Content-Type is %q, want %s; body: %s", contentType, mt, snippet(body))
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON (%v): %s", err, snippet(body))
	}
	sch, err := d.Schema(sptr)
	if err != nil {
		return fmt.Errorf("compiling the schema at %s: %w", sptr, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("the body does not match the schema at %s: %v\nbody: %s", sptr, err, snippet(body))
	}
	return nil
}

// CheckEventStream checks the frames of a Server-Sent Events body against the schema at sptr (a
// string schema, or a reference to one): its x-sse-data extension maps frame event names to a reference
// to the schema of their data ("default" for the other names). Comments and incomplete trailing frames
// are skipped.
func (d *Doc) CheckEventStream(sptr string, body []byte) error {
	v, err := d.resolve("#" + sptr)
	if err != nil {
		return err
	}
	obj, _ := v.(map[string]any)
	obj, _, ok := d.follow(obj, sptr)
	if !ok {
		return fmt.Errorf("the schema at %s does not resolve", sptr)
	}
	frames, _ := obj["x-sse-data"].(map[string]any)
	if len(frames) == 0 {
		return nil
	}
	for _, f := range ParseEventStream(body) {
		ref, ok := frames[f.Event].(map[string]any)
		if !ok {
			ref, ok = frames["default"].(map[string]any)
		}
		target, _ := ref["$ref"].(string)
		if !ok || !strings.HasPrefix(target, "#/") {
			return fmt.Errorf("event stream frame %q is not documented (x-sse-data of %s)", f.Event, sptr)
		}
		if err := d.checkBody(target[1:], "application/json", "application/json", []byte(f.Data)); err != nil {
			return fmt.Errorf("event stream frame %q (id %q): %w", f.Event, f.ID, err)
		}
	}
	return nil
}

// Frame is one Server-Sent Events frame.
type Frame struct {
	ID, Event, Data string
}

// ParseEventStream splits a text/event-stream body into its complete frames (those ended by a blank
// line); comment lines are skipped.
func ParseEventStream(body []byte) []Frame {
	var (
		out  []Frame
		cur  Frame
		data []string
		seen bool
	)
	for _, line := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n") {
		switch {
		case line == "":
			if seen {
				cur.Data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data, seen = Frame{}, nil, false
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			seen = true
			switch field {
			case "id":
				cur.ID = value
			case "event":
				cur.Event = value
			case "data":
				data = append(data, value)
			}
		}
	}
	return out
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

func escapePtr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
