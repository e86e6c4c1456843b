package validate

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// A schema can cost far more to compile and to use than its size suggests, so Compile measures it before it
// spends anything: a linear walk of the decoded document (measureShape) bounds what compiling it costs, and
// a linear walk of the compiled schema (measureEvaluations) bounds what validating a value against it costs,
// before a single value is validated. A schema beyond a limit is refused with a *LimitError that names the
// limit and what the schema reaches.
//
// Where the time goes in github.com/santhosh-tekuri/jsonschema/v6 (v6.0.3), and so what the estimate counts:
//
//   - Compile checks the document against its draft's meta-schema, and for every subschema it meets it
//     rebuilds that subschema's location by string concatenation, token by token (validator.metaResource).
//     A subschema d levels deep whose location is L bytes long costs about d·L; a chain of n nested
//     subschemas costs about n³. This is what made a 17 KB schema nested 800 deep take seconds.
//   - Compile keeps the subschemas it has queued in a slice and looks each new one up by a linear scan
//     (queue.get): n subschemas and r references cost about n·(n+r).
//   - For every subschema, it scans every resource (each "$id") of the document: about ids·n.
//   - A "$ref" whose target is not a place the draft defines as a subschema ("#/x/y", with x not a
//     keyword) makes it copy the document's whole index of subschemas before it compiles the target.
//   - Validation evaluates every applicable subschema for every value, so "$ref", "allOf", "anyOf" and
//     "oneOf" that fan out to the same subschemas multiply the work, exponentially in how often they nest.
//
// Our own steps after the library's compile are linear in the schema, or bounded by the evaluation limit.

// The limits. Each admits every real schema we have measured with a wide margin (see docs/http-api.md):
// the 1,860 resource schemas of AWS CloudFormation's linter, the OpenAPI 2.0 to 3.2 schemas, the JSON Schema
// meta-schemas and the test suites of both libraries.
const (
	// MaxDepth bounds how deeply a schema document nests arrays and objects: 64 levels, about 30 levels of
	// nested objects in the data the schema describes ({"properties":{"a":{...}}} takes two levels for one).
	// The real schemas we measured stay under 16; a Kubernetes resource with a whole pod template inside
	// reaches about 30. The compile cost grows with the cube of the depth, so a deep schema is costly even
	// when it is small.
	MaxDepth = 64

	// CompileCostPerByte, MinCompileCost and MaxCompileCost bound the estimated cost of compiling a
	// schema, in units of about one step of the library's slowest loops (5 to 10 ns on a current server
	// core): a schema of n bytes may cost CompileCostPerByte × n, but never less than MinCompileCost (a
	// few milliseconds) nor more than MaxCompileCost (a tenth of a second or two). Tying the limit to the
	// size keeps the CPU a request costs proportional to the bytes it sends — about a microsecond a byte,
	// where the schemas that prompted the limits took seconds for a few kilobytes — so a batch of many
	// small schemas costs no more than one large one.
	//
	// The estimate adds up the terms listed above: a quarter of the location cost (for every object or
	// boolean of the document, the lengths of the JSON Pointers of its ancestors and itself, added up),
	// subschemas × (subschemas + references), 4 × ids × subschemas and 48 × (distinct references to
	// places that are not subschemas) × subschemas. Real schemas cost 1 to 35 units a byte; the most
	// costly we measured, 76 KB with 1,800 subschemas, costs 2.5 million.
	CompileCostPerByte = 100
	MinCompileCost     = 1 << 18
	MaxCompileCost     = 25_000_000

	// MaxEvaluations bounds how many subschemas a single value of an instance may be checked against, through
	// "$ref", "allOf", "anyOf", "oneOf", "not", "if"/"then"/"else" and the dependent schemas, and through the
	// subschemas of its enclosing values that lead to it. A plain schema checks each value against one to
	// a few subschemas; the most we measured in a real schema is 104 (the AWS Step Functions state machine).
	// The schemas that multiply are refused: "allOf" of two references to the next level, nested ten times,
	// already asks 2^10. Validating a value of n JSON values against an accepted schema evaluates at most
	// n × 2,000 subschemas.
	MaxEvaluations = 2_000
)

// compileCostLimit is the compile cost a schema of n bytes may have.
func compileCostLimit(n int) int64 {
	return min(MaxCompileCost, max(MinCompileCost, CompileCostPerByte*int64(n)))
}

// unitsPerStep is what one step of measureEvaluations counts against the compile cost: its steps are map
// operations, about ten times the library's.
const unitsPerStep = 10

// What the limits measure, as a *LimitError names it.
const (
	MeasureDepth       = "depth"
	MeasureCompileCost = "compile_cost"
	MeasureEvaluations = "evaluations"
)

// LimitError reports a schema beyond one of the limits. Measured is what the schema reaches (at least that
// much, for evaluations: counting stops past the limit), unless Unbounded: a recursion that multiplies has
// no bound at all. Limit is the limit for this schema.
type LimitError struct {
	Measure   string // MeasureDepth, MeasureCompileCost or MeasureEvaluations
	Measured  int64
	Unbounded bool
	Limit     int64
	msg       string
}

func (e *LimitError) Error() string { return e.msg }

// shape is what measureShape finds in a decoded schema document.
type shape struct {
	depth        int   // deepest nesting of arrays and objects; a lone scalar is 0
	subschemas   int64 // objects and booleans: everything the library may compile as a subschema
	refs         int64 // "$ref", "$dynamicRef" and "$recursiveRef" members with a string value
	ids          int64 // "$id" and "id" members with a string value
	fragmentRefs int64 // distinct "$ref" targets that are not subschema places
	locationCost int64 // see MaxCompileCost

	refTargets map[string]bool // the distinct string values of the reference members
}

// compileCost is the estimate MaxCompileCost bounds.
func (s *shape) compileCost() int64 {
	n := s.subschemas
	return satAdd(satAdd(s.locationCost/4, satMul(n, satAdd(n, s.refs))),
		satAdd(satMul(4, satMul(s.ids, n)), satMul(48, satMul(s.fragmentRefs, n))))
}

// checkShape measures doc, size bytes of JSON, and refuses it when it is beyond MaxDepth or its compile cost
// limit; it returns the compile cost. The walk visits each value once, so its cost is linear in the
// document whatever the document is.
func checkShape(doc any, size int) (int64, error) {
	s := &shape{refTargets: map[string]bool{}}
	s.walk(doc, 0, 0, 0)
	if s.depth > MaxDepth {
		return 0, &LimitError{Measure: MeasureDepth, Measured: int64(s.depth), Limit: MaxDepth, msg: fmt.Sprintf(
			"the schema nests arrays and objects %d levels deep; the limit is %d: move deep parts into definitions and refer to them with $ref",
			s.depth, MaxDepth)}
	}
	draft := draftOf(doc)
	for ref := range s.refTargets {
		if !refersToSubschema(doc, draft, ref) {
			s.fragmentRefs++
		}
	}
	cost, limit := s.compileCost(), compileCostLimit(size)
	if cost > limit {
		return 0, &LimitError{Measure: MeasureCompileCost, Measured: cost, Limit: limit, msg: fmt.Sprintf(
			"the schema is too complex to compile: its estimated compile cost is %d, and the limit for a schema of %d bytes is %d "+
				"(%d a byte, at least %d, at most %d); it has %d subschemas, %d references (%d to places that are not subschemas), "+
				"%d ids, a location cost of %d, and nests %d levels deep: "+
				"use fewer subschemas, nest less deeply, shorten long property names, or share repeated parts through definitions",
			cost, size, limit, CompileCostPerByte, MinCompileCost, MaxCompileCost,
			s.subschemas, s.refs, s.fragmentRefs, s.ids, s.locationCost, s.depth)}
	}
	return cost, nil
}

// walk visits v, which is depth containers deep; ptrLen is the length of its JSON Pointer, and ptrCost the
// sum of the pointer lengths of its ancestors and itself (what the meta-schema check spends on it).
func (s *shape) walk(v any, depth int, ptrLen, ptrCost int64) {
	switch v := v.(type) {
	case map[string]any:
		depth++
		s.depth = max(s.depth, depth)
		s.subschemas++
		s.locationCost = satAdd(s.locationCost, satAdd(ptrCost, 1))
		for k, e := range v {
			if str, ok := e.(string); ok {
				switch k {
				case "$ref", "$dynamicRef", "$recursiveRef":
					s.refs++
					s.refTargets[str] = true
				case "$id", "id":
					s.ids++
				}
			}
			l := ptrLen + tokenLen(k)
			s.walk(e, depth, l, satAdd(ptrCost, l))
		}
	case []any:
		depth++
		s.depth = max(s.depth, depth)
		for i, e := range v {
			l := ptrLen + 1 + int64(len(strconv.Itoa(i)))
			s.walk(e, depth, l, satAdd(ptrCost, l))
		}
	case bool:
		s.subschemas++
		s.locationCost = satAdd(s.locationCost, satAdd(ptrCost, 1))
	}
}

// tokenLen is the length of "/" and k escaped as a JSON Pointer token.
func tokenLen(k string) int64 {
	return 1 + int64(len(k)+strings.Count(k, "~")+strings.Count(k, "/"))
}

// draftOf returns the draft the library compiles doc with: its "$schema", or draft-07 (newCompiler's default).
func draftOf(doc any) int {
	obj, _ := doc.(map[string]any)
	s, _ := obj["$schema"].(string)
	for _, d := range []struct {
		mark  string
		draft int
	}{{"draft-04", 4}, {"draft-06", 6}, {"draft-07", 7}, {"2019-09", 2019}, {"2020-12", 2020}} {
		if strings.Contains(s, d.mark) {
			return d.draft
		}
	}
	return 7
}

// Where a draft has subschemas, as the library collects them: keywords whose value is a subschema, an array
// of subschemas, or an object of named subschemas; each from the draft given onward.
var (
	schemaKeywords = map[string]int{"not": 4, "additionalProperties": 4, "items": 4, "additionalItems": 4,
		"propertyNames": 6, "contains": 6, "if": 7, "then": 7, "else": 7,
		"unevaluatedProperties": 2019, "unevaluatedItems": 2019, "contentSchema": 2019}
	schemaArrayKeywords = map[string]int{"allOf": 4, "anyOf": 4, "oneOf": 4, "items": 4, "prefixItems": 2020}
	namedSchemaKeywords = map[string]int{"definitions": 4, "properties": 4, "patternProperties": 4,
		"dependencies": 4, "$defs": 2019, "dependentSchemas": 2019}
)

// refersToSubschema reports whether ref is one the library resolves without copying its index of
// subschemas: the root ("#"), an anchor ("#name"), an address without a JSON Pointer, or a JSON Pointer to
// a place draft defines as a subschema. Anything else ("#/x/y", "other.json#/a") counts against the
// compile cost.
func refersToSubschema(doc any, draft int, ref string) bool {
	base, frag, hasFrag := strings.Cut(ref, "#")
	if !hasFrag || frag == "" || !strings.HasPrefix(frag, "/") {
		return true
	}
	if base != "" {
		return false
	}
	node := doc
	tokens := strings.Split(frag[1:], "/")
	for i := 0; i < len(tokens); i++ {
		obj, ok := node.(map[string]any)
		if !ok {
			return false
		}
		kw := unescapeToken(tokens[i])
		switch {
		case namedSchemaKeywords[kw] != 0 && namedSchemaKeywords[kw] <= draft && i+1 < len(tokens):
			named, ok := obj[kw].(map[string]any)
			if !ok {
				return false
			}
			i++
			node = named[unescapeToken(tokens[i])]
		case schemaArrayKeywords[kw] != 0 && schemaArrayKeywords[kw] <= draft && i+1 < len(tokens) && isArray(obj[kw]):
			arr := obj[kw].([]any)
			i++
			n, err := strconv.Atoi(tokens[i])
			if err != nil || n < 0 || n >= len(arr) {
				return false
			}
			node = arr[n]
		case schemaKeywords[kw] != 0 && schemaKeywords[kw] <= draft:
			node = obj[kw]
		default:
			return false
		}
		if node == nil {
			return false
		}
	}
	return true
}

func isArray(v any) bool {
	_, ok := v.([]any)
	return ok
}

// unescapeToken decodes one token of a JSON Pointer in a URI fragment.
func unescapeToken(t string) string {
	if u, err := url.PathUnescape(t); err == nil {
		t = u
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}

const maxInt64 = int64(^uint64(0) >> 1)

// satAdd and satMul add and multiply non-negative numbers, stopping at the largest int64.
func satAdd(a, b int64) int64 {
	if a > maxInt64-b {
		return maxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > maxInt64/a {
		return maxInt64
	}
	return a * b
}
