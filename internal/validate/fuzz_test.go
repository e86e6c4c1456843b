package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// FuzzCompileSchema compiles arbitrary documents and checks, without timing anything, that the work stays
// within what the limits promise:
//
//   - a schema refused for its depth or compile cost is refused by the linear pre-pass alone, before the
//     library compiles it;
//   - an accepted schema's measured compile cost is within its limit;
//   - validating probe values against an accepted schema evaluates no more subschemas than the evaluation
//     bound allows: at most bound × (JSON values) of each probe. Evaluations are counted by a vocabulary
//     whose keyword sits in every subschema, so a schema whose references multiply the work beyond what
//     measureEvaluations predicted fails here, deterministically.
//
// Run it with: go test -fuzz=FuzzCompileSchema -fuzztime=90s ./internal/validate
func FuzzCompileSchema(f *testing.F) {
	seeds := []string{
		`{"type":"object","required":["url"],"properties":{"url":{"type":"string","format":"uri"},"depth":{"type":"integer","default":2}}}`,
		nested(10, "a"), nested(32, "a"), nested(33, "a"), nested(800, "a"),
		strings.Repeat("[", 70) + strings.Repeat("]", 70),
		deepWithSiblings(20, "abcdefgh", 50),
		fanOut(3), fanOut(12),
		fragmentRefs(5),
		wideSchema(50, `{"$id":"i%d"}`),
		`{"allOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}}}]}`,
		`{"properties":{"a":{"$ref":"#"}},"patternProperties":{"^a":{"$ref":"#"}}}`,
		`{"items":{"$ref":"#"},"contains":{"$ref":"#"}}`,
		`{"$ref":"#"}`,
		`{"if":{"const":"magic"},"then":{"$ref":"#"}}`,
		`{"properties":{"a":{"default":{"b":1},"properties":{"b":{"type":"integer","default":2}}}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"$ref":"#"},{"type":"string"}],"items":{"$ref":"#"},"unevaluatedProperties":{"$ref":"#"}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","items":[{"$ref":"#"}],"additionalItems":{"$ref":"#"},"dependencies":{"a":{"$ref":"#"}}}`,
		`{"propertyNames":{"$ref":"#"},"minProperties":1}`,
	}
	for _, s := range admittedSchemas {
		seeds = append(seeds, s)
	}
	slices.Sort(seeds)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 64<<10 {
			return // larger inputs only slow the search down; the limits scale with size
		}
		_, err := Compile(raw)
		doc, derr := decodeJSONNumbers(raw)
		if derr != nil || checkSchemaNumbers(doc) != nil {
			if err == nil {
				t.Fatalf("Compile accepted a document that is not JSON, or has numbers out of range")
			}
			return
		}
		cost, preErr := checkShape(doc, len(raw))
		var le *LimitError
		if errors.As(err, &le) && (le.Measure == MeasureDepth || (le.Measure == MeasureCompileCost && le.Measured == cost)) {
			if preErr == nil || preErr.Error() != err.Error() {
				t.Fatalf("Compile refused the schema for %s (%v), but the pre-pass does not (%v)", le.Measure, err, preErr)
			}
			return
		}
		if err != nil {
			return
		}
		if preErr != nil || cost > compileCostLimit(len(raw)) {
			t.Fatalf("Compile accepted a schema of compile cost %d past its limit %d (%v)", cost, compileCostLimit(len(raw)), preErr)
		}
		checkEvaluations(t, doc, cost, len(raw))
	})
}

// FuzzSchemaRecipe builds schemas from a recipe — definitions that refer to one another through every
// keyword that applies subschemas — and checks them as FuzzCompileSchema does. Random bytes rarely make
// a schema whose references interlock; recipes always do, so this is where a hole in the evaluation bound
// would show.
//
// Run it with: go test -fuzz=FuzzSchemaRecipe -fuzztime=90s ./internal/validate
func FuzzSchemaRecipe(f *testing.F) {
	for _, seed := range [][]byte{
		{2, 0, 0, 1, 0, 5, 1, 5, 1, 255}, // two definitions: the first an allOf of two references to the second
		{1, 0, 0, 0, 5, 0, 0, 0},         // a recursion entered twice under the same name
		{1, 6, 0, 3, 0, 2, 0},            // any JSON value
		{3, 0, 0, 1, 0, 1, 2, 255, 0, 0, 0, 255, 3, 2, 255},
		{2, 12, 0, 1, 0, 11, 1, 255, 4, 0, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, recipe []byte) {
		raw := schemaFromRecipe(recipe)
		_, err := Compile(raw)
		if err != nil {
			return
		}
		doc, err := decodeJSONNumbers(raw)
		if err != nil {
			t.Fatal(err)
		}
		cost, err := checkShape(doc, len(raw))
		if err != nil {
			t.Fatal(err)
		}
		checkEvaluations(t, doc, cost, len(raw))
	})
}

// schemaFromRecipe reads recipe as: the number of definitions, then for each definition its keywords, two
// bytes each (the keyword, then a reference or name), up to a 255. Every reference points to a definition.
func schemaFromRecipe(recipe []byte) []byte {
	next := func() int {
		if len(recipe) == 0 {
			return 255
		}
		b := recipe[0]
		recipe = recipe[1:]
		return int(b)
	}
	n := 1 + next()%4
	ref := func(b int) map[string]any { return map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", b%n)} }
	// inPlace refers to a later definition only, so that in-place references seldom loop (a loop is
	// refused as invalid, which checks nothing more).
	inPlace := func(i, b int) map[string]any {
		if i+1 >= n || b%8 == 7 {
			return ref(b)
		}
		return ref(i + 1 + b%(n-i-1))
	}
	names := []string{"a", "b", "ab"}
	defs := map[string]any{}
	for i := range n {
		d := map[string]any{}
		named := func(kw string) map[string]any {
			m, _ := d[kw].(map[string]any)
			if m == nil {
				m = map[string]any{}
				d[kw] = m
			}
			return m
		}
		listed := func(kw string, v any) { l, _ := d[kw].([]any); d[kw] = append(l, v) }
		for k := 0; k < 6; k++ {
			op := next()
			if op == 255 {
				break
			}
			arg := next()
			switch op % 16 {
			case 0:
				named("properties")[names[arg%3]] = ref(arg / 3)
			case 1:
				named("patternProperties")["^"+names[arg%3]] = ref(arg / 3)
			case 2:
				d["additionalProperties"] = ref(arg)
			case 3:
				d["items"] = ref(arg)
			case 4:
				listed("prefixItems", ref(arg))
			case 5:
				listed("allOf", inPlace(i, arg))
			case 6:
				listed("anyOf", inPlace(i, arg))
			case 7:
				listed("oneOf", inPlace(i, arg))
			case 8:
				d["contains"] = ref(arg)
			case 9:
				d["not"] = inPlace(i, arg)
			case 10:
				d["if"], d["then"] = inPlace(i, arg), inPlace(i, arg/4)
			case 11:
				d["propertyNames"] = ref(arg)
			case 12:
				d["unevaluatedProperties"] = ref(arg)
			case 13:
				named("dependentSchemas")[names[arg%3]] = inPlace(i, arg/3)
			case 14:
				d["type"] = []string{"object", "array", "string"}[arg%3]
			case 15:
				d["items"] = map[string]any{"$dynamicRef": "#node"}
			}
		}
		defs[fmt.Sprintf("d%d", i)] = d
	}
	raw, _ := json.Marshal(map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "$dynamicAnchor": "node",
		"$ref": "#/$defs/d0", "$defs": defs,
	})
	return raw
}

// checkEvaluations validates probe values against the schema, counting the subschemas evaluated, and
// fails when a probe costs more than the bound allows.
func checkEvaluations(t *testing.T, doc any, cost int64, size int) {
	counter := &evaluationCounter{}
	s, err := compileLibrary(doc, counter)
	if err != nil {
		return // the meta-schema differs with a vocabulary registered; nothing to count
	}
	bound, err := measureEvaluations(s, cost, compileCostLimit(size))
	if err != nil {
		return
	}
	for _, probe := range probes(s) {
		counter.n = 0
		_ = s.Validate(probe)
		if n := countValues(probe); counter.n > bound*n {
			t.Fatalf("validating %d values evaluated %d subschemas, past the bound of %d a value", n, counter.n, bound)
		}
	}
}

// compileLibrary compiles doc with the library alone, as Compile sets it up, without the limits or our
// other checks; with counter, every subschema holds it as an extension.
func compileLibrary(doc any, counter *evaluationCounter) (*sjs.Schema, error) {
	c := newCompiler()
	if counter != nil {
		c.RegisterVocabulary(&sjs.Vocabulary{URL: "urn:orchestrator:test:count",
			Compile: func(*sjs.CompilerContext, map[string]any) (sjs.SchemaExt, error) { return counter, nil }})
		c.AssertVocabs()
	}
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// evaluationCounter is a schema extension that counts how often the validator finishes evaluating a
// subschema. It undercounts (a subschema that fails early, on its type or a draft-07 $ref, never gets to
// its extensions), but every in-place fan-out and every level of a recursion passes through it.
type evaluationCounter struct{ n int64 }

func (c *evaluationCounter) Validate(*sjs.ValidatorContext, any) { c.n++ }

// probes builds values that walk into the schema: scalars, empty containers, and values that follow
// its properties and items a few levels deep, through its in-place branches.
func probes(s *sjs.Schema) []any {
	out := []any{nil, false, "", float64(0), []any{}, map[string]any{}}
	for depth := 1; depth <= 5; depth++ {
		out = append(out, probeValue(s, depth))
	}
	return out
}

// probeChildren is how many values inside one value a probe holds at most.
const probeChildren = 3

// probeValue is a value that follows s's properties (and the other keywords for the values inside) or its
// items, depth levels deep.
func probeValue(s *sjs.Schema, depth int) any {
	obj := map[string]any{}
	var arr []any
	if depth == 0 || s == nil {
		return obj
	}
	full := func() bool { return len(obj)+len(arr) >= probeChildren }
	seen := map[*sjs.Schema]bool{}
	var visit func(s *sjs.Schema)
	visit = func(s *sjs.Schema) {
		if s == nil || seen[s] || full() {
			return
		}
		seen[s] = true
		for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
			if full() {
				return
			}
			obj[k] = probeValue(s.Properties[k], depth-1)
		}
		// A few short names, for the patterns that match them.
		patterns := slices.SortedFunc(maps.Keys(s.PatternProperties), func(a, b sjs.Regexp) int {
			return strings.Compare(a.String(), b.String())
		})
		for _, k := range []string{"a", "ab", "b", "x-a"} {
			for _, re := range patterns {
				if _, taken := obj[k]; !taken && !full() && re.MatchString(k) {
					obj[k] = probeValue(s.PatternProperties[re], depth-1)
				}
			}
		}
		for k, t := range map[string]*sjs.Schema{"zz-other": schemaOf(s.AdditionalProperties), "zz-unevaluated": s.UnevaluatedProperties} {
			if t != nil && !full() {
				obj[k] = probeValue(t, depth-1)
			}
		}
		for _, t := range slices.Concat(prefixItems(s), []*sjs.Schema{s.Items2020, schemaOf(s.Items), schemaOf(s.AdditionalItems), s.Contains, s.UnevaluatedItems}) {
			if t != nil && !full() {
				arr = append(arr, probeValue(t, depth-1))
			}
		}
		for _, t := range slices.Concat([]*sjs.Schema{s.Ref, s.RecursiveRef, s.If, s.Then, s.Else}, s.AllOf, s.AnyOf, s.OneOf) {
			visit(t)
		}
		if s.DynamicRef != nil {
			visit(s.DynamicRef.Ref)
		}
	}
	visit(s)
	if len(arr) > len(obj) {
		return arr
	}
	return obj
}

// countValues counts the JSON values in v, v included.
func countValues(v any) int64 {
	n := int64(1)
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			n += countValues(e)
		}
	case []any:
		for _, e := range v {
			n += countValues(e)
		}
	}
	return n
}

// TestEvaluationCounterSeesTheWork: the fuzz target's counter sees each in-place path of a fan-out, and
// stays within the bound, which is tight here.
func TestEvaluationCounterSeesTheWork(t *testing.T) {
	t.Parallel()
	counter := &evaluationCounter{}
	doc, _ := decodeJSONNumbers([]byte(fanOut(6)))
	s, err := compileLibrary(doc, counter)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := measureEvaluations(s, 0, MaxCompileCost)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Validate(map[string]any{})
	// 2^6 paths reach the last definition, and each allOf of each path is evaluated on the way.
	if counter.n < 64 || counter.n > bound {
		t.Errorf("validating {} evaluated %d subschemas; want at least 64 and at most the bound, %d", counter.n, bound)
	}
}
