package validate

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// nested is a chain of n nested property subschemas: {"properties":{"a":{"properties":{"a":...}}}}.
func nested(n int, key string) string {
	return strings.Repeat(`{"properties":{"`+key+`":`, n) + `{}` + strings.Repeat(`}}`, n)
}

// wideSchema has n properties, each with the subschema item (a format with one %d for the index).
func wideSchema(n int, item string) string {
	var b strings.Builder
	b.WriteString(`{"properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":`+item, i, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// deepWithSiblings is a chain of depth nested subschemas under key, holding siblings empty subschemas at
// its bottom: small, but costly for the meta-schema check.
func deepWithSiblings(depth int, key string, siblings int) string {
	var b strings.Builder
	b.WriteString(strings.Repeat(`{"properties":{"`+key+`":`, depth))
	b.WriteString(`{"properties":{`)
	for i := range siblings {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"b%d":{}`, i)
	}
	b.WriteString(`}}`)
	b.WriteString(strings.Repeat(`}}`, depth))
	return b.String()
}

// fanOut is a chain of n definitions, each an allOf of two references to the next: 2^n paths to the last.
func fanOut(n int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/definitions/d0","definitions":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/definitions/d%d"},{"$ref":"#/definitions/d%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"object"}}}`, n)
	return b.String()
}

// fragmentRefs has n references to subschemas kept under an unknown keyword, which are not subschema
// places: the library copies its index of subschemas for each.
func fragmentRefs(n int) string {
	var b strings.Builder
	b.WriteString(`{"x":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"b%d":{}`, i)
	}
	b.WriteString(`},"properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"r%d":{"$ref":"#/x/b%d"}`, i, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// Schemas of the shapes real schemas have, which every limit must admit.
var admittedSchemas = map[string]string{
	"any JSON value": `{"anyOf":[{"type":"string"},{"type":"number"},{"type":"array","items":{"$ref":"#"}},
		{"type":"object","additionalProperties":{"$ref":"#"}}]}`,
	"binary tree": `{"definitions":{"node":{"type":"object","properties":{"v":{"type":"integer"},
		"left":{"$ref":"#/definitions/node"},"right":{"$ref":"#/definitions/node"}}}},"$ref":"#/definitions/node"}`,
	"filter expression": `{"definitions":{"f":{"anyOf":[
		{"type":"object","properties":{"and":{"type":"array","items":{"$ref":"#/definitions/f"}}},"required":["and"]},
		{"type":"object","properties":{"or":{"type":"array","items":{"$ref":"#/definitions/f"}}},"required":["or"]},
		{"type":"object","properties":{"not":{"$ref":"#/definitions/f"}}},
		{"type":"object","properties":{"field":{"type":"string"},"eq":{}}}]}},"$ref":"#/definitions/f"}`,
	"menu tree holding filter trees": `{"definitions":{"f":{"properties":{"and":{"items":{"$ref":"#/definitions/f"}}}},
		"m":{"properties":{"children":{"items":{"$ref":"#/definitions/m"}},"filter":{"$ref":"#/definitions/f"}}}},
		"$ref":"#/definitions/m"}`,
	"pattern that does not claim the recursive name": `{"properties":{"a":{"$ref":"#"}},"patternProperties":{"^x-":{"$ref":"#"}}}`,
	"2020-12 generic list": `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://example.com/strings",
		"$ref":"list","$defs":{"content":{"$dynamicAnchor":"content","type":"string"},
		"list":{"$id":"list","type":"array","items":{"$dynamicRef":"#content"},
			"$defs":{"content":{"$dynamicAnchor":"content","not":true}}}}}`,
	"2020-12 extensible tree": `{"$schema":"https://json-schema.org/draft/2020-12/schema","$dynamicAnchor":"node",
		"type":"object","properties":{"children":{"type":"array","items":{"$dynamicRef":"#node"}}}}`,
	"2019-09 recursive tree": `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,
		"type":"object","properties":{"children":{"type":"array","items":{"$recursiveRef":"#"}}}}`,
	"30 levels of nested objects": strings.Repeat(`{"type":"object","properties":{"child":`, 30) + `{"type":"string"}` +
		strings.Repeat(`}}`, 30),
	"2,000 properties":                       wideSchema(2000, `{"type":"string","description":"property %d"}`),
	"union of 100 variants on a shared base": unionOfVariants(100),
	"references to non-subschema places":     fragmentRefs(20),
}

// unionOfVariants is a oneOf of n variants, each an allOf of a shared base and its own properties: the
// largest fan-out of real schemas (discriminated unions in OpenAPI documents).
func unionOfVariants(n int) string {
	var b strings.Builder
	b.WriteString(`{"definitions":{"base":{"type":"object","required":["kind"],"properties":{"kind":{"type":"string"},"id":{"type":"string"}}}},"oneOf":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"allOf":[{"$ref":"#/definitions/base"},{"properties":{"kind":{"const":"k%d"},"v%d":{"type":"integer"}}}]}`, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

func TestLimitsAdmitRealSchemaShapes(t *testing.T) {
	t.Parallel()
	for name, schema := range admittedSchemas {
		if _, err := Compile([]byte(schema)); err != nil {
			t.Errorf("%s: Compile: %v", name, err)
		}
	}
}

// TestLimitsRefuse: each costly shape is refused with the limit it breaks. The shapes whose cost is in the
// library's compile are refused by the linear pre-pass alone, before the library sees them.
func TestLimitsRefuse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema string
		measure      string
		prePass      bool   // refused by checkShape, before the library compiles
		unbounded    bool   // the measure has no bound
		msg          string // a part of the message
	}{
		{"nested 800 deep (17 KB)", nested(800, "a"), MeasureDepth, true, false, "nests arrays and objects 1601 levels deep; the limit is 64"},
		{"one level past the depth limit", nested(32, "a"), MeasureDepth, true, false, "65 levels deep"},
		{"nested arrays", strings.Repeat("[", 100) + strings.Repeat("]", 100), MeasureDepth, true, false, "100 levels deep"},
		{"5,100 subschemas", wideSchema(5100, `{"description":"%d"}`), MeasureCompileCost, true, false, "5102 subschemas"},
		{"long property names, deep", deepWithSiblings(30, strings.Repeat("k", 2000), 30), MeasureCompileCost, true, false, "location cost"},
		{"short names, deep, many siblings", deepWithSiblings(30, "abcdefgh", 2000), MeasureCompileCost, true, false, "nests 63 levels deep"},
		{"many ids", wideSchema(2000, `{"$id":"i%d"}`), MeasureCompileCost, true, false, "2000 ids"},
		{"references to non-subschema places", fragmentRefs(300), MeasureCompileCost, true, false, "300 to places that are not subschemas"},
		{"references fanning out, 1.4 KB", fanOut(18), MeasureEvaluations, false, false, "the limit is 2000"},
		{"references fanning out ten times", fanOut(10), MeasureEvaluations, false, false, "fans out too much"},
		{"a recursion entered twice per level", `{"allOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}}}]}`,
			MeasureEvaluations, false, true, "2 times over"},
		{"a property and a pattern both recursing", `{"properties":{"a":{"$ref":"#"}},"patternProperties":{"^a":{"$ref":"#"}}}`,
			MeasureEvaluations, false, true, "doubles with every level"},
		{"contains and items both recursing", `{"items":{"$ref":"#"},"contains":{"$ref":"#"}}`, MeasureEvaluations, false, true, "2 times over"},
		{"a recursion starting another at each level", `{"definitions":{"any":{"additionalProperties":{"$ref":"#/definitions/any"}}},
			"allOf":[{"additionalProperties":{"$ref":"#/definitions/any"}},{"properties":{"children":{"items":{"$ref":"#"}}}}]}`,
			MeasureEvaluations, false, true, "another recursion"},
	}
	for _, tt := range tests {
		_, err := Compile([]byte(tt.schema))
		var le *LimitError
		if !errors.As(err, &le) {
			t.Errorf("%s: Compile: got %v, want a *LimitError", tt.name, err)
			continue
		}
		if le.Measure != tt.measure || le.Unbounded != tt.unbounded || !strings.Contains(le.Error(), tt.msg) {
			t.Errorf("%s: got measure %q (unbounded %v): %v\nwant measure %q (unbounded %v), a message with %q",
				tt.name, le.Measure, le.Unbounded, le, tt.measure, tt.unbounded, tt.msg)
		}
		if !le.Unbounded && le.Measured <= le.Limit {
			t.Errorf("%s: measured %d, not past the limit %d", tt.name, le.Measured, le.Limit)
		}
		doc, err := decodeJSONNumbers([]byte(tt.schema))
		if err != nil {
			t.Fatal(err)
		}
		_, preErr := checkShape(doc, len(tt.schema))
		if tt.prePass && (preErr == nil || preErr.Error() != le.Error()) {
			t.Errorf("%s: checkShape alone: got %v, want the error Compile gave", tt.name, preErr)
		}
		if !tt.prePass && preErr != nil {
			t.Errorf("%s: checkShape: %v, want the pre-pass to pass it on", tt.name, preErr)
		}
	}
}

// TestCompileCostLimitScalesWithSize: the limit is per byte, with a floor and a ceiling, so that the CPU a
// request spends stays proportional to what it sends.
func TestCompileCostLimitScalesWithSize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		size int
		want int64
	}{{0, MinCompileCost}, {100, MinCompileCost}, {10_000, 1_000_000}, {256 << 10, MaxCompileCost}, {1 << 30, MaxCompileCost}} {
		if got := compileCostLimit(tt.size); got != tt.want {
			t.Errorf("compileCostLimit(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
	// The same costly shape passes when it is a small part of a large document: its cost is the same
	// whether or not it carries descriptions, but its allowance is not.
	small := deepWithSiblings(20, "abcdefgh", 400)
	if _, err := Compile([]byte(small)); err == nil {
		t.Fatalf("Compile(%d bytes) accepted a schema of cost %d", len(small), shapeOf(t, small).compileCost())
	}
	padded := `{"description":"` + strings.Repeat("x", 200_000) + `","allOf":[` + small + `]}`
	if _, err := Compile([]byte(padded)); err != nil {
		t.Fatalf("Compile(%d bytes): %v", len(padded), err)
	}
}

func shapeOf(t *testing.T, schema string) *shape {
	t.Helper()
	doc, err := decodeJSONNumbers([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	s := &shape{refTargets: map[string]bool{}}
	s.walk(doc, 0, 0, 0)
	return s
}

// TestShapeMeasures: what the pre-pass counts, on a schema small enough to count by hand.
func TestShapeMeasures(t *testing.T) {
	t.Parallel()
	schema := `{"$id":"x","properties":{"a":{"$ref":"#/definitions/d"},"b":{"items":[true,{"$ref":"#/x"}]}},
		"definitions":{"d":{"enum":[{"id":"data"}]}}}`
	s := shapeOf(t, schema)
	// The root, properties, a, b, the items array's true and object, definitions, d, and the enum's object.
	if s.depth != 5 || s.subschemas != 9 || s.refs != 2 || s.ids != 2 {
		t.Errorf("depth %d, subschemas %d, refs %d, ids %d; want 5, 9, 2, 2", s.depth, s.subschemas, s.refs, s.ids)
	}
	// Location cost: each object or boolean adds the lengths of its pointer's prefixes, itself included,
	// plus one: "" (1), /properties (11+1), /properties/a (11+13+1), /properties/b (11+13+1),
	// /properties/b/items/0 (11+13+19+21+1), /properties/b/items/1 (the same), /definitions (12+1),
	// /definitions/d (12+14+1), /definitions/d/enum/0 (12+14+19+21+1).
	if want := int64(1 + 12 + 25 + 25 + 65 + 65 + 13 + 27 + 67); s.locationCost != want {
		t.Errorf("location cost %d, want %d", s.locationCost, want)
	}
	doc, _ := decodeJSONNumbers([]byte(schema))
	for ref, want := range map[string]bool{
		"#": true, "#anchor": true, "#/definitions/d": true, "#/properties/b/items/1": true, "other.json": true,
		"#/x": false, "#/definitions": false, "#/properties/b/items/7": false, "other.json#/definitions/d": false,
	} {
		if got := refersToSubschema(doc, draftOf(doc), ref); got != want {
			t.Errorf("refersToSubschema(%q) = %v, want %v", ref, got, want)
		}
	}
	// $defs is a subschema place from 2019-09 on only.
	defs, _ := decodeJSONNumbers([]byte(`{"$defs":{"a":{}}}`))
	if refersToSubschema(defs, 7, "#/$defs/a") || !refersToSubschema(defs, 2020, "#/$defs/a") {
		t.Error("refersToSubschema: #/$defs/a should be a subschema place in 2020-12 only")
	}
}

// TestEvaluationBounds: the bound for one value, on schemas where it can be worked out by hand.
func TestEvaluationBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		schema string
		want   int64
	}{
		{`{"type":"string"}`, 1},
		// The root, the allOf branch and the referenced definition.
		{`{"allOf":[{"$ref":"#/definitions/a"}],"definitions":{"a":{}}}`, 3},
		// Under "a": its subschema and what it refers to; under any other name, one.
		{`{"properties":{"a":{"$ref":"#/definitions/a"},"b":{}},"additionalProperties":{},"definitions":{"a":{}}}`, 2},
		// A value under "a" is checked against both branches' "a".
		{`{"allOf":[{"properties":{"a":{}}},{"properties":{"a":{}}}]}`, 3},
		// Three variants: the root, each variant, each one's "kind".
		{`{"oneOf":[{"properties":{"kind":{}}},{"properties":{"kind":{}}},{"properties":{"kind":{}}}]}`, 4},
		// A recursion that leaves nothing behind: at most the root and its anyOf branches at any depth.
		{`{"anyOf":[{"type":"string"},{"items":{"$ref":"#"}}]}`, 4},
	} {
		doc, _ := decodeJSONNumbers([]byte(tt.schema))
		s, err := compileLibrary(doc, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := measureEvaluations(s, 0, MaxCompileCost)
		if err != nil || got != tt.want {
			t.Errorf("measureEvaluations(%s) = %d, %v; want %d", tt.schema, got, err, tt.want)
		}
	}
}

// TestInPlaceCycles: a cycle of references that never reaches a value inside is refused as invalid, and
// the message says where it loops.
func TestInPlaceCycles(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ schema, want string }{
		{`{"$ref":"#"}`, "at $ref: the reference loops back to the root"},
		{`{"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"allOf":[{"$ref":"#/definitions/a"}]}},"properties":{"x":{"$ref":"#/definitions/a"}}}`,
			"at definitions.b.allOf.0.$ref: the reference loops back to definitions.a"},
		// Behind a condition no probing value would meet.
		{`{"if":{"const":"magic"},"then":{"$ref":"#"}}`, "at then.$ref: the reference loops back to the root"},
	} {
		_, err := Compile([]byte(tt.schema))
		var se *SchemaError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%s): got %v, want a *SchemaError with %q", tt.schema, err, tt.want)
		}
	}
}
