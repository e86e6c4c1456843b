package apidoc

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The fixed fields of the OpenAPI 3.1 objects the lint knows; "x-" extensions are allowed everywhere.
var fixedFields = map[string][]string{
	"root":           {"openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks", "components", "security", "tags", "externalDocs"},
	"info":           {"title", "summary", "description", "termsOfService", "contact", "license", "version"},
	"pathItem":       {"$ref", "summary", "description", "get", "put", "post", "delete", "options", "head", "patch", "trace", "servers", "parameters"},
	"operation":      {"tags", "summary", "description", "externalDocs", "operationId", "parameters", "requestBody", "responses", "callbacks", "deprecated", "security", "servers"},
	"parameter":      {"name", "in", "description", "required", "deprecated", "allowEmptyValue", "style", "explode", "allowReserved", "schema", "example", "examples", "content"},
	"header":         {"description", "required", "deprecated", "allowEmptyValue", "style", "explode", "allowReserved", "schema", "example", "examples", "content"},
	"reference":      {"$ref", "summary", "description"},
	"requestBody":    {"description", "content", "required"},
	"mediaType":      {"schema", "example", "examples", "encoding"},
	"response":       {"description", "headers", "content", "links"},
	"components":     {"schemas", "responses", "parameters", "examples", "requestBodies", "headers", "securitySchemes", "links", "callbacks", "pathItems"},
	"securityScheme": {"type", "description", "name", "in", "scheme", "bearerFormat", "flows", "openIdConnectUrl"},
	"tag":            {"name", "description", "externalDocs"},
	"server":         {"url", "description", "variables"},
}

var statusKey = regexp.MustCompile(`^([1-5][0-9][0-9]|[1-5]XX|default)$`)

// linter collects the problems of a document.
type linter struct {
	d    *Doc
	errs []error
}

func (l *linter) errorf(format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf(format, args...))
}

// Lint checks the document's structure as OpenAPI 3.1 has it, as far as this package relies on it and
// beyond: the version; the fixed fields of every object (a misspelt key is an error); that every local
// "$ref" resolves; that the path template parameters and the declared path parameters agree; unique
// operationIds; responses with valid status keys, descriptions and schemas; security requirements that
// name a scheme; and that every schema compiles as JSON Schema 2020-12 (so is valid against its
// meta-schema). It returns every problem found.
func (d *Doc) Lint() []error {
	l := &linter{d: d}
	root := d.raw
	l.fields("root", "", root)
	if v, _ := root["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		l.errorf("openapi is %q, want 3.1.x", root["openapi"])
	}
	info, _ := root["info"].(map[string]any)
	l.fields("info", "/info", info)
	for _, f := range []string{"title", "version"} {
		if s, _ := info[f].(string); s == "" {
			l.errorf("info.%s is required", f)
		}
	}
	comps, _ := root["components"].(map[string]any)
	l.fields("components", "/components", comps)
	schemes, _ := comps["securitySchemes"].(map[string]any)
	for name, s := range schemes {
		l.fields("securityScheme", "/components/securitySchemes/"+name, s)
	}
	l.security("/security", root["security"], schemes)
	for i, t := range asSlice(root["tags"]) {
		l.fields("tag", fmt.Sprintf("/tags/%d", i), t)
	}
	for i, s := range asSlice(root["servers"]) {
		l.fields("server", fmt.Sprintf("/servers/%d", i), s)
	}
	l.refs(root, "")

	for name, p := range asMap(comps["parameters"]) {
		l.parameter("/components/parameters/"+escapePtr(name), p)
	}
	for name, h := range asMap(comps["headers"]) {
		l.header("/components/headers/"+escapePtr(name), h)
	}
	for name, r := range asMap(comps["responses"]) {
		l.response("/components/responses/"+escapePtr(name), r)
	}
	for name, rb := range asMap(comps["requestBodies"]) {
		l.requestBody("/components/requestBodies/"+escapePtr(name), rb)
	}
	for name := range asMap(comps["schemas"]) {
		l.schema("/components/schemas/" + escapePtr(name))
	}

	ids := map[string]string{}
	paths := asMap(root["paths"])
	for _, p := range sortedKeys(paths) {
		ptr := "/paths/" + escapePtr(p)
		if !strings.HasPrefix(p, "/") {
			l.errorf("path %q must start with /", p)
		}
		item := asMap(paths[p])
		l.fields("pathItem", ptr, item)
		shared := l.parameters(ptr+"/parameters", item["parameters"])
		for _, op := range d.ops {
			if op.Path != p {
				continue
			}
			l.fields("operation", op.ptr, op.obj)
			if op.ID == "" {
				l.errorf("%s has no operationId", op)
			} else if prev, dup := ids[op.ID]; dup {
				l.errorf("%s and %s have the same operationId %q", prev, op, op.ID)
			} else {
				ids[op.ID] = op.String()
			}
			l.security(op.ptr+"/security", op.obj["security"], schemes)
			own := l.parameters(op.ptr+"/parameters", op.obj["parameters"])
			declared := map[string]bool{}
			for _, prm := range append(slices.Clone(shared), own...) {
				if prm.in == "path" {
					declared[prm.name] = true
				}
			}
			for _, name := range op.PathParams {
				if !declared[name] {
					l.errorf("%s: path parameter {%s} is not declared (add a parameter with in: path, required: true)", op, name)
				}
				delete(declared, name)
			}
			for name := range declared {
				l.errorf("%s declares path parameter %q, which its path does not have", op, name)
			}
			if rb, ok := op.obj["requestBody"]; ok {
				l.requestBody(op.ptr+"/requestBody", rb)
			}
			responses := asMap(op.obj["responses"])
			if len(responses) == 0 {
				l.errorf("%s documents no responses", op)
			}
			for code, r := range responses {
				if !statusKey.MatchString(code) {
					l.errorf("%s: response key %q is not a status code (\"200\"), a range (\"4XX\") or default", op, code)
				}
				l.response(op.ptr+"/responses/"+escapePtr(code), r)
			}
		}
	}
	return l.errs
}

// fields reports keys of obj that are neither fixed fields of kind nor extensions.
func (l *linter) fields(kind, ptr string, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		l.errorf("%s: want an object (%s)", orRoot(ptr), kind)
		return
	}
	allowed := fixedFields[kind]
	if _, isRef := obj["$ref"]; isRef && kind != "pathItem" {
		allowed = fixedFields["reference"]
	}
	for k := range obj {
		if !strings.HasPrefix(k, "x-") && !slices.Contains(allowed, k) {
			what := "the " + kind + " object"
			if obj["$ref"] != nil && kind != "pathItem" {
				what = "a Reference Object"
			}
			l.errorf("%s: %q is not a field of %s", orRoot(ptr), k, what)
		}
	}
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "the document"
	}
	return ptr
}

// refs checks that every "$ref" in the document is local and resolves.
func (l *linter) refs(v any, ptr string) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k == "$ref" {
				if s, ok := e.(string); ok {
					if _, err := l.d.resolve(s); err != nil {
						l.errorf("%s: %v", ptr, err)
					}
					continue
				}
			}
			l.refs(e, ptr+"/"+escapePtr(k))
		}
	case []any:
		for i, e := range v {
			l.refs(e, fmt.Sprintf("%s/%d", ptr, i))
		}
	}
}

func (l *linter) security(ptr string, v any, schemes map[string]any) {
	for i, req := range asSlice(v) {
		for name := range asMap(req) {
			if _, ok := schemes[name]; !ok {
				l.errorf("%s/%d: security scheme %q is not in components/securitySchemes", ptr, i, name)
			}
		}
	}
}

type param struct{ name, in string }

// parameters checks a list of parameters and returns their names and locations.
func (l *linter) parameters(ptr string, v any) []param {
	var out []param
	seen := map[param]bool{}
	for i, p := range asSlice(v) {
		pp := fmt.Sprintf("%s/%d", ptr, i)
		prm, ok := l.parameter(pp, p)
		if !ok {
			continue
		}
		if seen[prm] {
			l.errorf("%s: parameter %s in %s is listed twice", pp, prm.name, prm.in)
		}
		seen[prm] = true
		out = append(out, prm)
	}
	return out
}

func (l *linter) parameter(ptr string, v any) (param, bool) {
	obj, optr, ok := l.d.follow(asMap(v), ptr)
	if !ok {
		l.errorf("%s: the parameter does not resolve", ptr)
		return param{}, false
	}
	l.fields("parameter", ptr, v)
	if optr != ptr {
		l.fields("parameter", optr, obj)
	}
	name, _ := obj["name"].(string)
	in, _ := obj["in"].(string)
	if name == "" {
		l.errorf("%s: a parameter needs a name", optr)
	}
	switch in {
	case "path":
		if req, _ := obj["required"].(bool); !req {
			l.errorf("%s: path parameter %q must say required: true", optr, name)
		}
	case "query", "header", "cookie":
	default:
		l.errorf("%s: parameter %q: in is %q, want path, query, header or cookie", optr, name, in)
	}
	l.schemaOrContent(optr, obj)
	return param{name, in}, true
}

func (l *linter) header(ptr string, v any) {
	obj, optr, ok := l.d.follow(asMap(v), ptr)
	if !ok {
		l.errorf("%s: the header does not resolve", ptr)
		return
	}
	l.fields("header", optr, obj)
	l.schemaOrContent(optr, obj)
}

func (l *linter) schemaOrContent(ptr string, obj map[string]any) {
	_, hasSchema := obj["schema"]
	_, hasContent := obj["content"]
	switch {
	case hasSchema && hasContent:
		l.errorf("%s: schema and content are exclusive", ptr)
	case hasSchema:
		l.schema(ptr + "/schema")
	case hasContent:
		l.content(ptr+"/content", obj["content"])
	default:
		l.errorf("%s: needs a schema (or content)", ptr)
	}
}

func (l *linter) requestBody(ptr string, v any) {
	obj, optr, ok := l.d.follow(asMap(v), ptr)
	if !ok {
		l.errorf("%s: the request body does not resolve", ptr)
		return
	}
	if optr != ptr {
		l.fields("requestBody", ptr, v)
	}
	l.fields("requestBody", optr, obj)
	if len(asMap(obj["content"])) == 0 {
		l.errorf("%s: a request body needs content", optr)
	}
	l.content(optr+"/content", obj["content"])
}

func (l *linter) response(ptr string, v any) {
	obj, optr, ok := l.d.follow(asMap(v), ptr)
	if !ok {
		l.errorf("%s: the response does not resolve", ptr)
		return
	}
	if optr != ptr {
		l.fields("response", ptr, v)
	}
	l.fields("response", optr, obj)
	if s, _ := obj["description"].(string); s == "" {
		l.errorf("%s: a response needs a description", optr)
	}
	for name, h := range asMap(obj["headers"]) {
		l.header(optr+"/headers/"+escapePtr(name), h)
	}
	l.content(optr+"/content", obj["content"])
}

func (l *linter) content(ptr string, v any) {
	for mt, m := range asMap(v) {
		mptr := ptr + "/" + escapePtr(mt)
		l.fields("mediaType", mptr, m)
		if _, ok := asMap(m)["schema"]; ok {
			l.schema(mptr + "/schema")
		} else if mt == "application/json" {
			l.errorf("%s: JSON content needs a schema", mptr)
		}
	}
}

// schema compiles the schema at ptr, which validates it against the JSON Schema 2020-12 meta-schema.
func (l *linter) schema(ptr string) {
	if _, err := l.d.Schema(ptr); err != nil {
		l.errorf("%s: %v", ptr, err)
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
