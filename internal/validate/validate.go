// Package validate compiles JSON Schemas and validates JSON values against them for package orchestrator,
// which documents the behaviour (orchestrator.Schema). It joins two libraries:
// github.com/santhosh-tekuri/jsonschema/v6 compiles (checking the meta-schema) and validates (every error,
// with instance locations, format asserted), and github.com/google/jsonschema-go applies defaults. What is
// ours is the glue: turning the validator's error tree into flat, sorted errors worded like Python's
// jsonschema (docs/decisions.md), and applying defaults without making valid params invalid.
package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	gjs "github.com/google/jsonschema-go/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Error is one way a value fails its schema (orchestrator.FieldError has the same fields).
type Error struct {
	Path       string // JSONPath of the failing value: "$", "$.url", "$.items[2]", "$['odd key']"
	Message    string // in Python jsonschema's wording: "'deep' is not of type 'integer'"
	SchemaPath string // the failing keyword's location, dot-separated: "properties.url.format"
}

// SchemaError reports a schema that cannot be used; the message says what is wrong and where.
type SchemaError struct{ msg string }

func (e *SchemaError) Error() string { return e.msg }

func schemaErrorf(format string, args ...any) error {
	return &SchemaError{msg: fmt.Sprintf(format, args...)}
}

// JSONError reports params that are not JSON.
type JSONError struct{ msg string }

func (e *JSONError) Error() string { return e.msg }

func jsonErrorf(format string, args ...any) error {
	return &JSONError{msg: fmt.Sprintf(format, args...)}
}

// Schema is a compiled schema. It is immutable and safe for concurrent use.
type Schema struct {
	doc      any // the decoded schema (numbers as json.Number), to quote subschemas in messages
	compiled *sjs.Schema
	defaults *gjs.Resolved // nil when no default is reachable through "properties"
	// recheck: applying defaults could make valid params invalid, so Normalize validates again after.
	recheck bool
	// formatFree is the schema compiled without asserting format, for the errors a failed format hides
	// (see Validate); nil when the schema has no format keyword.
	formatFree func() *sjs.Schema
}

// newCompiler returns a compiler set up as Compile needs: draft 7 by default, format asserted (drafts
// before 2019-09 always assert it), no remote references.
func newCompiler() *sjs.Compiler {
	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft7)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	return c
}

// compileWithoutFormat compiles doc, which Compile accepted, without its format keywords; nil if that
// fails after all.
func compileWithoutFormat(doc any) (s *sjs.Schema) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	c := newCompiler()
	if c.AddResource(schemaURL, withoutFormat(doc)) != nil {
		return nil
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil
	}
	return s
}

// schemaURL is the schema's in-memory address. It must be absolute: a relative name would be resolved
// against the process's working directory.
const schemaURL = "mem:///schema.json"

// Limits on JSON numbers. The validator does exact arithmetic (math/big) on numbers, whose cost grows with
// a literal's exponent, so numbers must stay within float64's range.
const (
	maxNumberLength = 400 // characters of one number literal in a schema
	maxExactInteger = 100 // digits of an instance integer kept exact; longer ones become float64
)

// Compile parses and compiles a JSON Schema; see orchestrator.CompileSchema for what it refuses. Errors are
// *SchemaError, or *LimitError for a schema beyond one of the limits (limits.go).
func Compile(raw []byte) (s *Schema, err error) {
	defer func() {
		// The schema is untrusted input: a panic deep inside a library must not take the process down.
		if r := recover(); r != nil {
			s, err = nil, schemaErrorf("schema could not be compiled: %v", r)
		}
	}()
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, schemaErrorf("schema is empty")
	}
	doc, err := decodeJSONNumbers(raw)
	if err == nil {
		err = checkSchemaNumbers(doc)
	}
	if err != nil {
		return nil, schemaErrorf("schema is not valid JSON: %v", err)
	}
	// What compiling costs is bounded before the library compiles, and what validating costs before
	// anything is validated (the defaults below are): see limits.go.
	cost, err := checkShape(doc, len(raw))
	if err != nil {
		return nil, err
	}

	c := newCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, schemaErrorf("%s", cleanSchemaError(err))
	}
	compiled, err := c.Compile(schemaURL)
	if err != nil {
		return nil, compileError(err, doc)
	}
	if _, err := measureEvaluations(compiled, cost, compileCostLimit(len(raw))); err != nil {
		return nil, err
	}
	s = &Schema{doc: doc, compiled: compiled}
	if bytes.Contains(raw, []byte(`"format"`)) {
		s.formatFree = sync.OnceValue(func() *sjs.Schema { return compileWithoutFormat(doc) })
	}

	var sites []defaultSite
	skeleton, ok := defaultsSkeleton(doc, nil, &sites)
	if !ok {
		return s, nil
	}
	for _, site := range sites {
		if err := checkDefault(c, doc, site); err != nil {
			return nil, err
		}
	}
	if s.defaults, err = skeleton.Resolve(nil); err != nil {
		return nil, schemaErrorf("schema defaults: %v", err)
	}
	s.recheck = defaultsNeedRecheck(raw, doc, sites)
	return s, nil
}

// defaultsNeedRecheck reports whether adding defaults could make valid params invalid. It is false for the
// common plain schema, where that is impossible: every default is on a top-level property (so no object is
// created to hold one, and each default was checked against its subschema at compile time), and no keyword
// of the root schema reacts to one more declared property being present (no $ref, allOf/anyOf/oneOf/not,
// if, dependencies, propertyNames, patternProperties, maxProperties, enum or const — only the keywords
// listed below), and no dynamic reference could change how a subschema validates.
func defaultsNeedRecheck(raw []byte, doc any, sites []defaultSite) bool {
	for _, s := range sites {
		if len(s.ptr) != 2 {
			return true
		}
	}
	root, ok := doc.(map[string]any)
	if !ok || bytes.Contains(raw, []byte("$dynamicRef")) || bytes.Contains(raw, []byte("$recursiveRef")) {
		return true
	}
	for k := range root {
		if !plainRootKeywords[k] {
			return true
		}
	}
	return false
}

var plainRootKeywords = map[string]bool{
	"$schema": true, "$id": true, "id": true, "$comment": true, "title": true, "description": true,
	"examples": true, "default": true, "readOnly": true, "writeOnly": true, "deprecated": true,
	"definitions": true, "$defs": true, "type": true, "format": true,
	"properties": true, "required": true, "additionalProperties": true, "minProperties": true,
	// Keywords for other types than objects do not apply to params objects.
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true, "items": true, "additionalItems": true,
	"prefixItems": true, "minItems": true, "maxItems": true, "uniqueItems": true, "contains": true,
}

// Validate checks a decoded JSON value and returns every error, sorted and without duplicates; nil means
// valid. See orchestrator.Schema.Validate for the paths and messages.
func (s *Schema) Validate(instance any) (errs []Error) {
	defer func() {
		if r := recover(); r != nil {
			errs = []Error{{Path: "$", Message: fmt.Sprintf("the value could not be validated: %v", r)}}
		}
	}()
	err := s.compiled.Validate(instance)
	if err == nil {
		return nil
	}
	var ve *sjs.ValidationError
	if !errors.As(err, &ve) {
		return []Error{{Path: "$", Message: err.Error()}}
	}
	f := &flattener{instance: instance, doc: s.doc}
	f.walk(ve, valueCtx{root: instance}, "", "", nil)
	s.addHiddenByFormat(f, instance)
	return f.fieldErrors()
}

// withoutFormat copies a schema document without its format keywords. Members whose keys are names
// (properties, definitions, …) and values that are data (const, enum, default, examples) are kept as
// they are; the keyword locations of everything else do not change.
func withoutFormat(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			switch k {
			case "format":
				if _, isString := e.(string); isString {
					continue
				}
				out[k] = withoutFormat(e)
			case "properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies":
				if m, ok := e.(map[string]any); ok {
					named := make(map[string]any, len(m))
					for name, sub := range m {
						named[name] = withoutFormat(sub)
					}
					out[k] = named
					continue
				}
				out[k] = e
			case "const", "enum", "default", "examples":
				out[k] = e
			default:
				out[k] = withoutFormat(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutFormat(e)
		}
		return out
	}
	return v
}

// hiddenByFormat are the keywords whose failures the validator does not report once the same schema's
// format failed (it stops checking a subschema at a failed format). They do not depend on format, so the
// schema validated without format reports them truly.
var hiddenByFormat = map[string]bool{"minLength": true, "maxLength": true, "pattern": true}

// addHiddenByFormat adds to f the failures a failed format hid: for each format error, those of the
// keywords of hiddenByFormat in the same subschema, at the same value, found by validating again without
// asserting format. Every failing keyword is then reported ("not-a-url" against format uri and pattern
// ^https?:// fails both).
func (s *Schema) addHiddenByFormat(f *flattener, instance any) {
	if s.formatFree == nil {
		return
	}
	type site struct{ loc, schema string }
	formats := map[site]bool{}
	for _, l := range f.leaves {
		if parent, ok := strings.CutSuffix(l.schemaPath, "format"); ok && (parent == "" || strings.HasSuffix(parent, ".")) {
			formats[site{strings.Join(l.loc, "\x00"), parent}] = true
		}
	}
	if len(formats) == 0 {
		return
	}
	free := s.formatFree()
	if free == nil {
		return
	}
	var ve *sjs.ValidationError
	if !errors.As(free.Validate(instance), &ve) {
		return
	}
	g := &flattener{instance: instance, doc: s.doc}
	g.walk(ve, valueCtx{root: instance}, "", "", nil)
	for _, l := range g.leaves {
		i := strings.LastIndexByte(l.schemaPath, '.') + 1
		if hiddenByFormat[l.schemaPath[i:]] && formats[site{strings.Join(l.loc, "\x00"), l.schemaPath[:i]}] {
			f.leaves = append(f.leaves, l)
		}
	}
}

// Normalize decodes params, validates them, applies the schema's defaults and returns the normalized JSON,
// or the errors. The error return, a *JSONError, is for params that are not JSON. See
// orchestrator.Schema.Normalize for how defaults are applied.
func (s *Schema) Normalize(params []byte) ([]byte, []Error, error) {
	inst, err := decodeParams(params)
	if err != nil {
		return nil, nil, err
	}
	if errs := s.Validate(inst); len(errs) > 0 {
		return nil, errs, nil
	}
	if s.defaults != nil {
		if _, ok := inst.(map[string]any); ok {
			keys := 0
			if s.recheck {
				keys = countKeys(inst)
			}
			err := applySchemaDefaults(s.defaults, &inst)
			// Defaults only ever add keys: when none were added there is nothing to check again.
			if err != nil || (s.recheck && countKeys(inst) != keys && len(s.Validate(inst)) > 0) {
				// ApplyDefaults changed inst in place: start again from the params as given.
				if inst, err = decodeParams(params); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	out, err := encodeCompactJSON(inst)
	if err != nil {
		return nil, nil, jsonErrorf("parameters cannot be encoded: %v", err)
	}
	return out, nil, nil
}

// countKeys counts the object members in a decoded JSON value.
func countKeys(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n += len(v)
		for _, e := range v {
			n += countKeys(e)
		}
	case []any:
		for _, e := range v {
			n += countKeys(e)
		}
	}
	return n
}

func applySchemaDefaults(rs *gjs.Resolved, inst *any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("applying defaults: %v", r)
		}
	}()
	return rs.ApplyDefaults(inst)
}

func decodeParams(params []byte) (any, error) {
	if t := bytes.TrimSpace(params); len(t) == 0 || string(t) == "null" {
		return map[string]any{}, nil
	}
	v, err := decodeJSONNumbers(params)
	if err == nil {
		v, err = normalizeNumbers(v)
	}
	if err != nil {
		return nil, jsonErrorf("parameters are not valid JSON: %v", err)
	}
	return v, nil
}

// decodeJSONNumbers decodes exactly one JSON value, numbers as json.Number.
func decodeJSONNumbers(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no JSON value")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func encodeCompactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// normalizeNumbers replaces, in place, every json.Number in v that is not a short integer by its float64,
// and fails for numbers beyond float64's range. Short integers stay exact (an id such as
// 9007199254740993 must not change).
func normalizeNumbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if isPlainInteger(string(v)) && len(v) <= maxExactInteger {
			return v, nil
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", clipText(string(v), 40))
		}
		return f, nil
	case map[string]any:
		for k, e := range v {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
	case []any:
		for i, e := range v {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
	}
	return v, nil
}

// checkSchemaNumbers refuses numbers the validator could spend a long time on (1e999999).
func checkSchemaNumbers(v any) error {
	switch v := v.(type) {
	case json.Number:
		if len(v) > maxNumberLength {
			return fmt.Errorf("number %s is too long", clipText(string(v), 40))
		}
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return fmt.Errorf("number %s is out of range", clipText(string(v), 40))
		}
		if i := strings.IndexAny(string(v), "eE"); i >= 0 {
			if e, err := strconv.Atoi(string(v[i+1:])); err != nil || e < -maxNumberLength || e > maxNumberLength {
				return fmt.Errorf("number %s is out of range", clipText(string(v), 40))
			}
		}
	case map[string]any:
		for _, e := range v {
			if err := checkSchemaNumbers(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkSchemaNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func isPlainInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// refuseLoader is the validator's loader for documents outside the schema: there are none.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errors.New("references to other documents are not supported")
}

// compileError turns the validator's compile error into an invalid_schema error that says what and where.
func compileError(err error, doc any) error {
	var sve *sjs.SchemaValidationError
	var ve *sjs.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		f := &flattener{instance: doc}
		f.walk(ve, valueCtx{root: doc}, "", "", nil)
		// The meta-schema validated the schema document: instance locations are places in the schema.
		return schemaErrorf("invalid schema: %s", f.locatedMessages())
	}
	var lue *sjs.LoadURLError
	if errors.As(err, &lue) {
		return schemaErrorf("invalid schema: it refers to %q, outside the schema: references to other documents are not supported", lue.URL)
	}
	var ire *sjs.InvalidRegexError
	if errors.As(err, &ire) {
		return schemaErrorf("invalid schema: at %s: %q is not a valid regular expression: %v",
			dotLocation(fragmentTokens(ire.URL)), ire.Regex, ire.Err)
	}
	return schemaErrorf("invalid schema: %s", cleanSchemaError(err))
}

func refCycleMessage(rc *kind.RefCycle) string {
	return fmt.Sprintf("at %s: the reference loops back to %s without validating anything",
		dotLocation(pointerTokens(rc.KeywordLocation1)), dotLocation(fragmentTokens(rc.URL)))
}

func cleanSchemaError(err error) string {
	msg := strings.ReplaceAll(err.Error(), schemaURL+"#", "#")
	return strings.ReplaceAll(msg, schemaURL, "#")
}

// defaultSite is a "default" keyword that ApplyDefaults can use: the schema pointer of its subschema.
type defaultSite struct {
	ptr   []string
	value any
}

// defaultsSkeleton builds the part of the schema ApplyDefaults reads — "properties" chains and their
// "default"s, nothing else — as a google/jsonschema-go schema. Giving it only this keeps it away from
// keywords, drafts and references it does not know (it knows draft-07 and 2020-12 only), and leaving out
// "required" makes it descend into required objects (see [Schema.Normalize]). ok is false when the schema
// has no property default at all.
func defaultsSkeleton(node any, ptr []string, sites *[]defaultSite) (s *gjs.Schema, ok bool) {
	obj, isObj := node.(map[string]any)
	if !isObj {
		return nil, false
	}
	s = &gjs.Schema{}
	if d, has := obj["default"]; has && len(ptr) > 0 {
		raw, err := json.Marshal(d)
		if err == nil {
			s.Default = raw
			*sites = append(*sites, defaultSite{ptr: slices.Clone(ptr), value: d})
			ok = true
		}
	}
	props, _ := obj["properties"].(map[string]any)
	for _, name := range sortedMapKeys(props) {
		child, childOK := defaultsSkeleton(props[name], append(ptr, "properties", name), sites)
		if childOK {
			if s.Properties == nil {
				s.Properties = map[string]*gjs.Schema{}
			}
			s.Properties[name] = child
			ok = true
		}
	}
	return s, ok
}

// checkDefault validates a default against the subschema that holds it.
func checkDefault(c *sjs.Compiler, doc any, site defaultSite) error {
	loc := dotLocation(append(slices.Clone(site.ptr), "default"))
	sub, err := c.Compile(schemaURL + "#" + encodePointer(site.ptr))
	if err != nil {
		return schemaErrorf("invalid schema: at %s: %s", loc, cleanSchemaError(err))
	}
	value := site.value // numbers are json.Number, bounded by checkSchemaNumbers
	verr := sub.Validate(value)
	if verr == nil {
		return nil
	}
	var ve *sjs.ValidationError
	if !errors.As(verr, &ve) {
		return schemaErrorf("invalid schema: at %s: %v", loc, verr)
	}
	f := &flattener{instance: value, doc: doc}
	f.walk(ve, valueCtx{root: value}, "", "", nil)
	var msgs []string
	for _, fe := range f.fieldErrors() {
		if fe.Path != "$" {
			fe.Message = fe.Path + ": " + fe.Message
		}
		msgs = append(msgs, fe.Message)
	}
	return schemaErrorf("invalid schema: at %s: the default does not match its schema: %s",
		loc, strings.Join(msgs, "; "))
}

// encodePointer renders schema pointer tokens as a URI fragment, escaped as the validator expects.
func encodePointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		t = strings.ReplaceAll(t, "~", "~0")
		t = strings.ReplaceAll(t, "/", "~1")
		b.WriteByte('/')
		b.WriteString(url.PathEscape(t))
	}
	return b.String()
}

// fragmentTokens returns the JSON-pointer tokens of an absolute schema location
// ("mem:///schema.json#/properties/a%20b" → ["properties", "a b"]).
func fragmentTokens(loc string) []string {
	_, frag, _ := strings.Cut(loc, "#")
	return pointerTokens(frag)
}

// pointerTokens splits a URI-encoded JSON pointer ("/properties/a%20b/~1x") into its tokens.
func pointerTokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			p = u
		}
		p = strings.ReplaceAll(p, "~1", "/")
		parts[i] = strings.ReplaceAll(p, "~0", "~")
	}
	return parts
}

// dotLocation renders schema pointer tokens the way Error.SchemaPath is written.
func dotLocation(tokens []string) string {
	if len(tokens) == 0 {
		return "the root"
	}
	return strings.Join(tokens, ".")
}
