package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/internal/validate"
)

// crawlerSchema is the web-crawler parameters schema of the validation example in docs/http-api.md.
const crawlerSchema = `{"type":"object","required":["url"],"properties":{"url":{"type":"string","format":"uri"},"depth":{"type":"integer","default":2}}}`

func mustCompile(t testing.TB, schema string) *Schema {
	t.Helper()
	s, err := CompileSchema(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("CompileSchema(%s): %v", schema, err)
	}
	return s
}

func formatFieldErrors(errs []FieldError) string {
	if len(errs) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n\t{path: %q, message: %q, schema_path: %q}", e.Path, e.Message, e.SchemaPath)
	}
	return b.String()
}

// TestNormalizeCrawlerExample is docs/http-api.md's validation example to the letter: both errors at once, with their paths,
// messages and schema paths.
func TestNormalizeCrawlerExample(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, crawlerSchema)
	params := `{"url":"not-a-url","depth":"deep"}`
	out, errs, err := s.Normalize(json.RawMessage(params))
	if err != nil {
		t.Fatalf("Normalize(%s): unexpected error %v", params, err)
	}
	want := []FieldError{
		{Path: "$.depth", Message: "'deep' is not of type 'integer'", SchemaPath: "properties.depth.type"},
		{Path: "$.url", Message: "'not-a-url' is not a valid URI", SchemaPath: "properties.url.format"},
	}
	if !slices.Equal(errs, want) {
		t.Errorf("Normalize(%s) errors:\ngot  %s\nwant %s", params, formatFieldErrors(errs), formatFieldErrors(want))
	}
	if out != nil {
		t.Errorf("Normalize(%s) returned JSON %s with errors; want nil", params, out)
	}

	// The wire form of one error is the documented one.
	b, _ := json.Marshal(errs[1])
	if got, want := string(b), `{"path":"$.url","message":"'not-a-url' is not a valid URI","schema_path":"properties.url.format"}`; got != want {
		t.Errorf("json.Marshal(FieldError) = %s, want %s", got, want)
	}
}

func TestNormalizeCrawlerDefaults(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, crawlerSchema)
	out, errs, err := s.Normalize(json.RawMessage(`{"url":"https://x"}`))
	if err != nil || errs != nil {
		t.Fatalf("Normalize: errs %s, err %v", formatFieldErrors(errs), err)
	}
	if got, want := string(out), `{"depth":2,"url":"https://x"}`; got != want {
		t.Errorf("Normalize({\"url\":\"https://x\"}) = %s, want %s", got, want)
	}
}

func TestValidateReportsAllErrorsAtOnce(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{
		"type": "object",
		"required": ["url", "mode", "name"],
		"additionalProperties": false,
		"properties": {
			"url": {"type": "string", "minLength": 5},
			"mode": {"enum": ["fast", "slow"]},
			"retries": {"type": "integer", "minimum": 0},
			"matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
			"name": {"type": "string"}
		}
	}`)
	params := `{"url":"a","mode":"medium","retries":-1,"matrix":[[1,"two"]],"bogus":1,"zzz":2}`
	_, errs, err := s.Normalize(json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	want := []FieldError{
		{Path: "$", Message: "'name' is a required property", SchemaPath: "required"},
		{Path: "$", Message: "Additional properties are not allowed ('bogus', 'zzz' were unexpected)", SchemaPath: "additionalProperties"},
		{Path: "$.matrix[0][1]", Message: "'two' is not of type 'integer'", SchemaPath: "properties.matrix.items.items.type"},
		{Path: "$.mode", Message: "'medium' is not one of ['fast', 'slow']", SchemaPath: "properties.mode.enum"},
		{Path: "$.retries", Message: "-1 is less than the minimum of 0", SchemaPath: "properties.retries.minimum"},
		{Path: "$.url", Message: "'a' is too short", SchemaPath: "properties.url.minLength"},
	}
	slices.SortStableFunc(want, func(a, b FieldError) int {
		if a.Path != b.Path {
			return strings.Compare(a.Path, b.Path)
		}
		return strings.Compare(a.SchemaPath, b.SchemaPath)
	})
	if !slices.Equal(errs, want) {
		t.Errorf("Normalize(%s):\ngot  %s\nwant %s", params, formatFieldErrors(errs), formatFieldErrors(want))
	}
}

// TestValidateDeterministic guards against map-order effects: the validator walks objects in Go map order.
func TestValidateDeterministic(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"additionalProperties":false,"required":["a","b","c"],"properties":{
		"p1":{"type":"integer"},"p2":{"type":"integer"},"p3":{"type":"integer"},"p4":{"type":"integer"},
		"o":{"propertyNames":{"maxLength":2}}}}`)
	inst := map[string]any{"p1": "x", "p2": "x", "p3": "x", "p4": "x", "x1": 1.0, "x2": 1.0, "x3": 1.0,
		"o": map[string]any{"long1": 1.0, "long2": 2.0, "ok": 3.0}}
	first := s.Validate(inst)
	if len(first) != 10 {
		t.Fatalf("Validate: got %d errors, want 10: %s", len(first), formatFieldErrors(first))
	}
	for i := 0; i < 50; i++ {
		if got := s.Validate(inst); !slices.Equal(got, first) {
			t.Fatalf("Validate run %d differs:\ngot  %s\nwant %s", i, formatFieldErrors(got), formatFieldErrors(first))
		}
	}
}

func TestValidateFormatAsserted(t *testing.T) {
	t.Parallel()
	drafts := map[string]string{
		"default (draft-07)": "",
		"draft-07":           `"$schema":"http://json-schema.org/draft-07/schema#",`,
		"draft-06":           `"$schema":"http://json-schema.org/draft-06/schema#",`,
		"draft-04":           `"$schema":"http://json-schema.org/draft-04/schema#",`,
		"2019-09":            `"$schema":"https://json-schema.org/draft/2019-09/schema",`,
		"2020-12":            `"$schema":"https://json-schema.org/draft/2020-12/schema",`,
	}
	tests := []struct {
		format, good, bad, message string
	}{
		{"uri", "https://example.com/a?b=c", "not-a-url", "'not-a-url' is not a valid URI"},
		{"email", "ada@example.com", "ada.example.com", "'ada.example.com' is not a valid email address"},
		{"date-time", "2026-01-08T10:00:00Z", "2026-01-08 10:00", "'2026-01-08 10:00' is not a valid date-time"},
		{"ipv4", "192.168.0.1", "192.168.0", "'192.168.0' is not a valid IPv4 address"},
		{"ipv6", "::1", "::g", "'::g' is not a valid IPv6 address"},
		{"hostname", "example.com", "-bad-.com", "'-bad-.com' is not a valid hostname"},
	}
	for name, dialect := range drafts {
		for _, tt := range tests {
			t.Run(name+"/"+tt.format, func(t *testing.T) {
				t.Parallel()
				schema := fmt.Sprintf(`{%s"properties":{"v":{"type":"string","format":%q}}}`, dialect, tt.format)
				s := mustCompile(t, schema)
				if errs := s.Validate(map[string]any{"v": tt.good}); errs != nil {
					t.Errorf("schema %s, value %q: got %s, want no errors", schema, tt.good, formatFieldErrors(errs))
				}
				want := []FieldError{{Path: "$.v", Message: tt.message, SchemaPath: "properties.v.format"}}
				if errs := s.Validate(map[string]any{"v": tt.bad}); !slices.Equal(errs, want) {
					t.Errorf("schema %s, value %q:\ngot  %s\nwant %s", schema, tt.bad, formatFieldErrors(errs), formatFieldErrors(want))
				}
			})
		}
	}
	// Formats newer than draft-04 are asserted where the draft knows them.
	s := mustCompile(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"id":{"format":"uuid"},"d":{"format":"date"}}}`)
	want := []FieldError{
		{Path: "$.d", Message: "'2026-13-01' is not a valid date", SchemaPath: "properties.d.format"},
		{Path: "$.id", Message: "'1234' is not a valid UUID", SchemaPath: "properties.id.format"},
	}
	if errs := s.Validate(map[string]any{"id": "1234", "d": "2026-13-01"}); !slices.Equal(errs, want) {
		t.Errorf("2020-12 uuid/date:\ngot  %s\nwant %s", formatFieldErrors(errs), formatFieldErrors(want))
	}
}

func TestValidatePaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, instance string
		want                   []FieldError
	}{
		{
			name:     "nested arrays",
			schema:   `{"properties":{"matrix":{"items":{"items":{"type":"integer"}}}}}`,
			instance: `{"matrix":[[1,2],[3,"x",5,"y"]]}`,
			want: []FieldError{
				{Path: "$.matrix[1][1]", Message: "'x' is not of type 'integer'", SchemaPath: "properties.matrix.items.items.type"},
				{Path: "$.matrix[1][3]", Message: "'y' is not of type 'integer'", SchemaPath: "properties.matrix.items.items.type"},
			},
		},
		{
			name:     "indexes sort numerically",
			schema:   `{"items":{"type":"integer"}}`,
			instance: `[0,1,2,3,4,5,6,7,8,9,"ten",11,"twelve",13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,"x"]`,
			want: []FieldError{
				{Path: "$[10]", Message: "'ten' is not of type 'integer'", SchemaPath: "items.type"},
				{Path: "$[12]", Message: "'twelve' is not of type 'integer'", SchemaPath: "items.type"},
				{Path: "$[34]", Message: "'x' is not of type 'integer'", SchemaPath: "items.type"},
			},
		},
		{
			name:     "objects in arrays",
			schema:   `{"properties":{"a":{"items":{"properties":{"b":{"items":{"properties":{"c":{"type":"string"}}}}}}}}}`,
			instance: `{"a":[{"b":[{"c":1}]}]}`,
			want: []FieldError{
				{Path: "$.a[0].b[0].c", Message: "1 is not of type 'string'", SchemaPath: "properties.a.items.properties.b.items.properties.c.type"},
			},
		},
		{
			name:     "keys that are not identifiers",
			schema:   `{"additionalProperties":{"type":"string"}}`,
			instance: `{"odd key":1,"a.b":2,"0":3,"it's":4,"_ok":5,"né":6,"":7,"back\\slash":8,"new\nline":9}`,
			want: []FieldError{
				{Path: "$['']", Message: "7 is not of type 'string'", SchemaPath: "additionalProperties.type"},
				{Path: "$['0']", Message: "3 is not of type 'string'", SchemaPath: "additionalProperties.type"},
				{Path: "$._ok", Message: "5 is not of type 'string'", SchemaPath: "additionalProperties.type"},
				{Path: "$['a.b']", Message: "2 is not of type 'string'", SchemaPath: "additionalProperties.type"},
				{Path: `$['back\\slash']`, Message: "8 is not of type 'string'", SchemaPath: "additionalProperties.type"},
				{Path: `$['it\'s']`, Message: "4 is not of type 'string'", SchemaPath: "additionalProperties.type"},
				{Path: `$['new\nline']`, Message: "9 is not of type 'string'", SchemaPath: "additionalProperties.type"},
				{Path: "$.né", Message: "6 is not of type 'string'", SchemaPath: "additionalProperties.type"},
				{Path: "$['odd key']", Message: "1 is not of type 'string'", SchemaPath: "additionalProperties.type"},
			},
		},
		{
			name:     "required is reported at the object",
			schema:   `{"properties":{"inner":{"required":["x","y"]}},"required":["inner"]}`,
			instance: `{"inner":{"y":1}}`,
			want: []FieldError{
				{Path: "$.inner", Message: "'x' is a required property", SchemaPath: "properties.inner.required"},
			},
		},
		{
			name:     "root",
			schema:   `{"type":"object"}`,
			instance: `[]`,
			want:     []FieldError{{Path: "$", Message: "[] is not of type 'object'", SchemaPath: "type"}},
		},
		{
			name:     "schema path through $ref",
			schema:   `{"definitions":{"port":{"type":"integer","maximum":65535}},"properties":{"ports":{"items":{"$ref":"#/definitions/port"}}}}`,
			instance: `{"ports":[80,70000]}`,
			want: []FieldError{
				{Path: "$.ports[1]", Message: "70000 is greater than the maximum of 65535", SchemaPath: "properties.ports.items.$ref.maximum"},
			},
		},
		{
			name:     "recursive schema",
			schema:   `{"properties":{"name":{"type":"string"},"children":{"items":{"$ref":"#"}}},"additionalProperties":false}`,
			instance: `{"name":"a","children":[{"name":"b","children":[{"name":3},{"extra":true}]}]}`,
			want: []FieldError{
				{Path: "$.children[0].children[0].name", Message: "3 is not of type 'string'",
					SchemaPath: "properties.children.items.$ref.properties.children.items.$ref.properties.name.type"},
				{Path: "$.children[0].children[1]", Message: "Additional properties are not allowed ('extra' was unexpected)",
					SchemaPath: "properties.children.items.$ref.properties.children.items.$ref.additionalProperties"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, tt.schema)
			var inst any
			if err := json.Unmarshal([]byte(tt.instance), &inst); err != nil {
				t.Fatal(err)
			}
			if got := s.Validate(inst); !slices.Equal(got, tt.want) {
				t.Errorf("schema %s\ninstance %s\ngot  %s\nwant %s", tt.schema, tt.instance, formatFieldErrors(got), formatFieldErrors(tt.want))
			}
		})
	}
}

// TestValidateMessages checks the wording of each kind of error, one failing keyword at a time.
func TestValidateMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema, instance string
		want             FieldError
	}{
		{`{"type":["integer","null"]}`, `"x"`, FieldError{"$", "'x' is not of type 'integer', 'null'", "type"}},
		{`{"type":"string"}`, `{"b":[1,2.5,true,null],"a":"it's"}`, FieldError{"$", `{'a': "it's", 'b': [1, 2.5, True, None]} is not of type 'string'`, "type"}},
		{`{"enum":[1,"two",null]}`, `3`, FieldError{"$", "3 is not one of [1, 'two', None]", "enum"}},
		{`{"const":"k"}`, `"j"`, FieldError{"$", "'k' was expected", "const"}},
		{`{"maxLength":2}`, `"abc"`, FieldError{"$", "'abc' is too long", "maxLength"}},
		{`{"minItems":2}`, `[1]`, FieldError{"$", "[1] is too short", "minItems"}},
		{`{"maxItems":1}`, `[1,2]`, FieldError{"$", "[1, 2] is too long", "maxItems"}},
		{`{"maximum":10}`, `10.5`, FieldError{"$", "10.5 is greater than the maximum of 10", "maximum"}},
		{`{"exclusiveMinimum":0}`, `0`, FieldError{"$", "0 is less than or equal to the minimum of 0", "exclusiveMinimum"}},
		{`{"exclusiveMaximum":1.5}`, `1.5`, FieldError{"$", "1.5 is greater than or equal to the maximum of 1.5", "exclusiveMaximum"}},
		{`{"multipleOf":0.5}`, `0.7`, FieldError{"$", "0.7 is not a multiple of 0.5", "multipleOf"}},
		{`{"pattern":"^[0-9]+$"}`, `"12a"`, FieldError{"$", "'12a' does not match '^[0-9]+$'", "pattern"}},
		{`{"minProperties":1}`, `{}`, FieldError{"$", "{} does not have enough properties", "minProperties"}},
		{`{"maxProperties":1}`, `{"a":1,"b":2}`, FieldError{"$", "{'a': 1, 'b': 2} has too many properties", "maxProperties"}},
		{`{"uniqueItems":true}`, `[1,2,1]`, FieldError{"$", "[1, 2, 1] has non-unique elements", "uniqueItems"}},
		{`{"contains":{"type":"string"}}`, `[1]`, FieldError{"$", "[1] does not contain items matching the given schema", "contains"}},
		{`{"items":[{"type":"integer"}],"additionalItems":false}`, `[1,"a",null]`, FieldError{"$", "Additional items are not allowed ('a', None were unexpected)", "additionalItems"}},
		{`{"dependencies":{"a":["b"]}}`, `{"a":1}`, FieldError{"$", "'b' is a dependency of 'a'", "dependencies.a"}},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","dependentRequired":{"a":["b"]}}`, `{"a":1}`, FieldError{"$", "'b' is a dependency of 'a'", "dependentRequired.a"}},
		{`{"not":{"type":"string"}}`, `"s"`, FieldError{"$", "'s' should not be valid under {'type': 'string'}", "not"}},
		{`{"properties":{"x":false}}`, `{"x":1}`, FieldError{"$.x", "False schema does not allow 1", "properties.x"}},
		{`{"if":{"required":["a"]},"then":{"required":["b"]}}`, `{"a":1}`, FieldError{"$", "'b' is a required property", "then.required"}},
		{`{"allOf":[{"minimum":1},{"maximum":5}]}`, `9`, FieldError{"$", "9 is greater than the maximum of 5", "allOf.1.maximum"}},
		{`{"propertyNames":{"pattern":"^[a-z]+$"}}`, `{"Bad":1}`, FieldError{"$", "'Bad' does not match '^[a-z]+$'", "propertyNames.pattern"}},
		{`{"type":"integer"}`, `"` + strings.Repeat("x", 300) + `"`, FieldError{"$", "'" + strings.Repeat("x", 119) + "... is not of type 'integer'", "type"}},
		{`{"type":"string"}`, `1e300`, FieldError{"$", "1e+300 is not of type 'string'", "type"}},
		{`{"type":"string"}`, `0.00001`, FieldError{"$", "1e-05 is not of type 'string'", "type"}},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, tt.schema)
			_, got, err := s.Normalize(json.RawMessage(tt.instance))
			if err != nil {
				t.Fatal(err)
			}
			if want := []FieldError{tt.want}; !slices.Equal(got, want) {
				t.Errorf("schema %s\ninstance %s\ngot  %s\nwant %s", tt.schema, tt.instance, formatFieldErrors(got), formatFieldErrors(want))
			}
		})
	}
}

func TestValidateAnyOfOneOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, instance string
		want                   []FieldError
	}{
		{
			name:     "nullable uri reports the uri error",
			schema:   `{"properties":{"u":{"anyOf":[{"type":"string","format":"uri"},{"type":"null"}]}}}`,
			instance: `{"u":"nope"}`,
			want:     []FieldError{{"$.u", "'nope' is not a valid URI", "properties.u.anyOf.0.format"}},
		},
		{
			name:     "no branch of the right type",
			schema:   `{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
			instance: `true`,
			want:     []FieldError{{"$", "True is not valid under any of the given schemas", "anyOf"}},
		},
		{
			name:     "value-only mismatch yields to a deeper branch",
			schema:   `{"oneOf":[{"const":"auto"},{"type":"integer","minimum":1}]}`,
			instance: `0`,
			want:     []FieldError{{"$", "0 is less than the minimum of 1", "oneOf.1.minimum"}},
		},
		{
			name:     "right type, wrong value",
			schema:   `{"oneOf":[{"const":"auto"},{"type":"integer","minimum":1}]}`,
			instance: `"manual"`,
			want:     []FieldError{{"$", "'auto' was expected", "oneOf.0.const"}},
		},
		{
			name:     "two plausible branches",
			schema:   `{"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
			instance: `{}`,
			want:     []FieldError{{"$", "{} is not valid under any of the given schemas", "anyOf"}},
		},
		{
			name:     "oneOf matching twice",
			schema:   `{"oneOf":[{"type":"number"},{"type":"integer"}]}`,
			instance: `3`,
			want:     []FieldError{{"$", "3 is valid under each of {'type': 'number'}, {'type': 'integer'}", "oneOf"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, tt.schema)
			_, got, err := s.Normalize(json.RawMessage(tt.instance))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("schema %s\ninstance %s\ngot  %s\nwant %s", tt.schema, tt.instance, formatFieldErrors(got), formatFieldErrors(tt.want))
			}
		})
	}
}

// TestValidatePropertyNamesLocation covers the workaround for the validator keeping a propertyNames error's
// location in a slice that validating later siblings overwrites.
func TestValidatePropertyNamesLocation(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"properties":{
		"a":{"properties":{"b":{"propertyNames":{"maxLength":3}}}},
		"z1":{"type":"string"},"z2":{"type":"string"},"z3":{"type":"string"},
		"list":{"items":{"propertyNames":{"maxLength":3}}}}}`)
	inst := map[string]any{
		"a":    map[string]any{"b": map[string]any{"long-name": 1.0}},
		"z1":   map[string]any{"x": 1.0},
		"z2":   map[string]any{"y": 1.0},
		"z3":   map[string]any{"w": 1.0},
		"list": []any{map[string]any{"ok": 1.0}, map[string]any{"toolong": 1.0}},
	}
	want := []FieldError{
		{Path: "$.a.b", Message: "'long-name' is too long", SchemaPath: "properties.a.properties.b.propertyNames.maxLength"},
		// Inside "items" the item cannot be told from the error: the array is reported.
		{Path: "$.list", Message: "'toolong' is too long", SchemaPath: "properties.list.items.propertyNames.maxLength"},
		{Path: "$.z1", Message: "{'x': 1} is not of type 'string'", SchemaPath: "properties.z1.type"},
		{Path: "$.z2", Message: "{'y': 1} is not of type 'string'", SchemaPath: "properties.z2.type"},
		{Path: "$.z3", Message: "{'w': 1} is not of type 'string'", SchemaPath: "properties.z3.type"},
	}
	for i := 0; i < 20; i++ { // map order varies between runs
		if got := s.Validate(inst); !slices.Equal(got, want) {
			t.Fatalf("run %d:\ngot  %s\nwant %s", i, formatFieldErrors(got), formatFieldErrors(want))
		}
	}
}

func TestNormalizeDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, params, want string
		wantErrs                   []FieldError
	}{
		{
			name:   "empty params mean {}",
			schema: `{"properties":{"n":{"type":"integer","default":1}}}`,
			params: ``, want: `{"n":1}`,
		},
		{
			name:   "null params mean {}",
			schema: `{"properties":{"n":{"type":"integer","default":1}}}`,
			params: ` null `, want: `{"n":1}`,
		},
		{
			name:   "given values win",
			schema: `{"properties":{"n":{"type":"integer","default":1},"s":{"default":"x"}}}`,
			params: `{"n":5}`, want: `{"n":5,"s":"x"}`,
		},
		{
			name:   "structured defaults",
			schema: `{"properties":{"tags":{"type":"array","default":["a","b"]},"opts":{"type":"object","default":{"k":true}}}}`,
			params: `{}`, want: `{"opts":{"k":true},"tags":["a","b"]}`,
		},
		{
			name:   "missing object created to hold nested defaults",
			schema: `{"properties":{"opts":{"type":"object","properties":{"verbose":{"type":"boolean","default":false},"level":{"default":3}}}}}`,
			params: `{}`, want: `{"opts":{"level":3,"verbose":false}}`,
		},
		{
			name:   "nested defaults fill a given object",
			schema: `{"properties":{"opts":{"type":"object","properties":{"verbose":{"default":false},"level":{"default":3}}}}}`,
			params: `{"opts":{"level":1}}`, want: `{"opts":{"level":1,"verbose":false}}`,
		},
		{
			name:   "defaults inside a required object",
			schema: `{"required":["req"],"properties":{"req":{"type":"object","properties":{"n":{"default":5}}}}}`,
			params: `{"req":{}}`, want: `{"req":{"n":5}}`,
		},
		{
			name:     "a required property is never filled from its default",
			schema:   `{"required":["n"],"properties":{"n":{"type":"integer","default":1}}}`,
			params:   `{}`,
			wantErrs: []FieldError{{Path: "$", Message: "'n' is a required property", SchemaPath: "required"}},
		},
		{
			name:     "required object missing is an error, not created",
			schema:   `{"required":["req"],"properties":{"req":{"type":"object","properties":{"n":{"default":5}}}}}`,
			params:   `{}`,
			wantErrs: []FieldError{{Path: "$", Message: "'req' is a required property", SchemaPath: "required"}},
		},
		{
			name:   "defaults not applied where the value is not an object",
			schema: `{"properties":{"opts":{"properties":{"n":{"default":5}}}}}`,
			params: `{"opts":[1]}`, want: `{"opts":[1]}`,
		},
		{
			name:   "defaults that would make valid params invalid are dropped",
			schema: `{"properties":{"opts":{"required":["x"],"properties":{"y":{"default":1}}},"z":{"default":"zz"}}}`,
			params: `{"a":1}`, want: `{"a":1}`,
		},
		{
			name:   "a default tripping dependencies is dropped",
			schema: `{"properties":{"a":{"default":1},"b":{}},"dependencies":{"a":["b"]}}`,
			params: `{}`, want: `{}`,
		},
		{
			name:   "a default tripping maxProperties is dropped",
			schema: `{"maxProperties":1,"properties":{"a":{"default":1}}}`,
			params: `{"b":2}`, want: `{"b":2}`,
		},
		{
			name:   "a default beside a draft-07 root $ref is applied when the target allows it",
			schema: `{"$ref":"#/definitions/base","definitions":{"base":{"additionalProperties":false,"properties":{"x":{},"n":{}}}},"properties":{"n":{"default":1}}}`,
			params: `{"x":0}`, want: `{"n":1,"x":0}`,
		},
		{
			name:   "a default beside a draft-07 root $ref is dropped when the target forbids it",
			schema: `{"$ref":"#/definitions/base","definitions":{"base":{"additionalProperties":false,"properties":{"x":{}}}},"properties":{"n":{"default":1}}}`,
			params: `{"x":0}`, want: `{"x":0}`,
		},
		{
			name:   "defaults behind $ref are not applied",
			schema: `{"definitions":{"d":{"default":7}},"properties":{"n":{"$ref":"#/definitions/d"}}}`,
			params: `{}`, want: `{}`,
		},
		{
			name:   "non-object params pass through",
			schema: `{"properties":{"n":{"default":1}}}`,
			params: `[1, 2]`, want: `[1,2]`,
		},
		{
			name:   "large integers stay exact, HTML is not escaped",
			schema: `{"properties":{"id":{"type":"integer"},"s":{"type":"string"}}}`,
			params: `{"id": 12345678901234567890123, "s": "<a&b>", "f": 1.50, "e": 1E3, "neg": -0}`,
			want:   `{"e":1000,"f":1.5,"id":12345678901234567890123,"neg":-0,"s":"<a&b>"}`,
		},
		{
			name:   "2020-12",
			schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n","default":3}}}`,
			params: `{}`, want: `{"a":3}`,
		},
		{
			name:   "draft-04",
			schema: `{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"a":{"type":"integer","minimum":0,"exclusiveMinimum":true,"default":3}}}`,
			params: `{}`, want: `{"a":3}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, tt.schema)
			out, errs, err := s.Normalize(json.RawMessage(tt.params))
			if err != nil {
				t.Fatalf("schema %s, params %s: %v", tt.schema, tt.params, err)
			}
			if !slices.Equal(errs, tt.wantErrs) {
				t.Errorf("schema %s, params %s errors:\ngot  %s\nwant %s", tt.schema, tt.params, formatFieldErrors(errs), formatFieldErrors(tt.wantErrs))
			}
			if string(out) != tt.want {
				t.Errorf("schema %s, params %s: got %s, want %s", tt.schema, tt.params, out, tt.want)
			}
		})
	}
}

func TestNormalizeInvalidJSON(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, crawlerSchema)
	for _, params := range []string{`{`, `[1,2`, `{"url":"x"} {}`, `{"url":"x"}]`, `{"n":1e400}`, `{"n":-1e999999999}`, `nul`, `'x'`} {
		out, errs, err := s.Normalize(json.RawMessage(params))
		if err == nil || out != nil || errs != nil {
			t.Errorf("Normalize(%s) = %s, %s, %v; want an invalid_json error", params, out, formatFieldErrors(errs), err)
			continue
		}
		if !errors.Is(err, ErrInvalid) || ErrorCode(err) != "invalid_json" {
			t.Errorf("Normalize(%s) error %v: code %q, Is(ErrInvalid)=%v; want invalid_json wrapping ErrInvalid",
				params, err, ErrorCode(err), errors.Is(err, ErrInvalid))
		}
	}
}

func TestCompileSchemaRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema, want string
	}{
		{``, "schema is empty"},
		{`{`, "schema is not valid JSON"},
		{`{} {}`, "schema is not valid JSON"},
		{`{"type":"strang"}`, "at type: 'strang' is not one of ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string']"},
		{`{"minLength":-1}`, "at minLength: -1 is less than the minimum of 0"},
		{`{"required":"x"}`, "at required: 'x' is not of type 'array'"},
		{`{"properties":{"url":{"type":"strang"}}}`, "at properties.url.type: 'strang' is not one of"},
		{`{"type":["string","strang"]}`, "at type.1: 'strang' is not one of"},
		{`{"properties":{"x":{"minItems":"3"}},"required":[1]}`, "at properties.x.minItems: '3' is not of type 'integer'; at required.0: 1 is not of type 'string'"},
		{`5`, "at the root: 5 is not of type 'boolean', 'object'"},
		{`{"pattern":"("}`, "at pattern: '(' is not a valid regular expression"},
		{`{"properties":{"a":{"pattern":"(?=x)"}}}`, "at properties.a.pattern: '(?=x)' is not a valid regular expression"},
		{`{"patternProperties":{"(":{}}}`, "at patternProperties: '(' is not a valid regular expression"},
		{`{"$ref":"http://example.com/s.json"}`, `refers to "http://example.com/s.json", outside the schema`},
		{`{"properties":{"a":{"$ref":"other.json#/x"}}}`, `refers to "mem:///other.json", outside the schema`},
		{`{"$ref":"file:///etc/passwd"}`, `refers to "file:///etc/passwd", outside the schema`},
		{`{"$schema":"http://example.com/my-meta-schema"}`, `refers to "http://example.com/my-meta-schema"`},
		{`{"$ref":"#/definitions/missing"}`, `"#/definitions/missing" not found`},
		{`{"$ref":"#"}`, "at $ref: the reference loops back to the root without validating anything"},
		{`{"properties":{"d":{"type":"integer","default":"two"}}}`, "at properties.d.default: the default does not match its schema: 'two' is not of type 'integer'"},
		{`{"properties":{"o":{"properties":{"u":{"format":"uri","default":"x"}}}}}`, "at properties.o.properties.u.default: the default does not match its schema: 'x' is not a valid URI"},
		{`{"properties":{"o":{"properties":{"a":{"type":"integer"}},"default":{"a":"x"}}}}`, "at properties.o.default: the default does not match its schema: $.a: 'x' is not of type 'integer'"},
		{`{"minimum":1e999999}`, "number 1e999999 is out of range"},
		{`{"maximum":1` + strings.Repeat("0", 500) + `}`, "is too long"},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			t.Parallel()
			s, err := CompileSchema(json.RawMessage(tt.schema))
			if err == nil {
				t.Fatalf("CompileSchema(%s) = %v, want an error containing %q", tt.schema, s, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CompileSchema(%s) error:\ngot  %v\nwant it to contain %q", tt.schema, err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) || ErrorCode(err) != "invalid_schema" {
				t.Errorf("CompileSchema(%s) error %v: code %q, Is(ErrInvalid)=%v; want invalid_schema wrapping ErrInvalid",
					tt.schema, err, ErrorCode(err), errors.Is(err, ErrInvalid))
			}
		})
	}
}

// TestSchemaLimitsAreTheValidators: the exported limits are the ones internal/validate applies.
func TestSchemaLimitsAreTheValidators(t *testing.T) {
	t.Parallel()
	if MaxSchemaDepth != validate.MaxDepth || SchemaCompileCostPerByte != validate.CompileCostPerByte ||
		MinSchemaCompileCost != validate.MinCompileCost || MaxSchemaCompileCost != validate.MaxCompileCost ||
		MaxSchemaEvaluations != validate.MaxEvaluations {
		t.Error("the exported schema limits differ from internal/validate's")
	}
}

// deepSchema nests n property subschemas: 21 bytes a level, the shape that took seconds to compile.
func deepSchema(n int) json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"properties":{"a":`, n) + `{}` + strings.Repeat(`}}`, n))
}

// TestCompileSchemaTooComplex: a schema beyond a limit is schema_too_complex, wrapping ErrInvalid, with
// the limit, its value and what the schema reaches in its details; and it stays so wherever it is found
// (a blueprint, an output schema, the cache).
func TestCompileSchemaTooComplex(t *testing.T) {
	t.Parallel()
	fanOut := `{"$ref":"#/definitions/d0","definitions":{` + func() string {
		var b strings.Builder
		for i := range 12 {
			fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/definitions/d%d"},{"$ref":"#/definitions/d%d"}]},`, i, i+1, i+1)
		}
		return b.String()
	}() + `"d12":{}}}`
	tests := []struct {
		schema  json.RawMessage
		details map[string]any
		message string
	}{
		{deepSchema(800), map[string]any{"measure": "depth", "limit": int64(MaxSchemaDepth), "measured": int64(1601)},
			"the schema nests arrays and objects 1601 levels deep; the limit is 64"},
		{json.RawMessage(fanOut), map[string]any{"measure": "evaluations", "limit": int64(MaxSchemaEvaluations), "measured": int64(2045)},
			"the schema fans out too much"},
		{json.RawMessage(`{"allOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}}}]}`),
			map[string]any{"measure": "evaluations", "limit": int64(MaxSchemaEvaluations), "unbounded": true},
			"the schema's recursion multiplies"},
	}
	for _, tt := range tests {
		_, err := CompileSchema(tt.schema)
		var e *Error
		if !errors.As(err, &e) || e.Code != "schema_too_complex" || !errors.Is(err, ErrInvalid) {
			t.Fatalf("CompileSchema(%.60s...) = %v, want schema_too_complex wrapping ErrInvalid", tt.schema, err)
		}
		if !strings.Contains(e.Message, tt.message) || fmt.Sprint(e.Details) != fmt.Sprint(tt.details) {
			t.Errorf("CompileSchema(%.60s...): message %q, details %v; want a message with %q, details %v",
				tt.schema, e.Message, e.Details, tt.message, tt.details)
		}
		b := &Blueprint{Name: "deep", Type: AgentTypeDeterministic, Command: "true", OutputSchema: tt.schema}
		err = b.Validate()
		if !errors.As(err, &e) || e.Code != "schema_too_complex" || !strings.HasPrefix(e.Message, `blueprint "deep": output_schema: `) ||
			fmt.Sprint(e.Details) != fmt.Sprint(tt.details) {
			t.Errorf("Blueprint.Validate = %v, want schema_too_complex naming the blueprint and output_schema", err)
		}
	}
	// The body the HTTP API and the MCP server send.
	_, err := CompileSchema(deepSchema(800))
	body, _ := json.Marshal(err)
	want := `{"error":"schema_too_complex","message":"the schema nests arrays and objects 1601 levels deep; the limit is 64: ` +
		`move deep parts into definitions and refer to them with $ref","limit":64,"measure":"depth","measured":1601}`
	if string(body) != want {
		t.Errorf("error body:\n got %s\nwant %s", body, want)
	}
	// Within the limits, the same shapes compile.
	if _, err := CompileSchema(deepSchema(31)); err != nil {
		t.Errorf("CompileSchema of 31 nested levels: %v", err)
	}
}

func TestCompileSchemaAccepts(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{
		`{}`, `true`, `false`,
		string(ImplicitPromptSchema),
		crawlerSchema,
		`{"$schema":"http://json-schema.org/draft-07/schema","type":"object"}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"a":{"type":"string"}},"prefixItems":[{"$ref":"#/$defs/a"}],"items":false}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","unevaluatedProperties":false}`,
		`{"$schema":"http://json-schema.org/draft-06/schema#","exclusiveMinimum":0}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/s","exclusiveMinimum":true,"minimum":0}`,
		`{"$id":"http://example.com/root.json","definitions":{"a":{"$id":"a.json","type":"string"}},"properties":{"x":{"$ref":"a.json"}}}`,
		`{"properties":{"tree":{"$ref":"#/definitions/node"}},"definitions":{"node":{"properties":{"kids":{"items":{"$ref":"#/definitions/node"}}}}}}`,
		`{"x-vendor":{"anything":[1,2]},"properties":{"a":{"format":"no-such-format"}}}`,
	} {
		if _, err := CompileSchema(json.RawMessage(schema)); err != nil {
			t.Errorf("CompileSchema(%s): %v", schema, err)
		}
	}
}

func TestDraft2020(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"$defs": {"when": {"type": "string", "format": "date-time"}},
		"properties": {
			"at": {"$ref": "#/$defs/when"},
			"pair": {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false},
			"n": {"type": "integer", "default": 7}
		},
		"unevaluatedProperties": false
	}`)
	params := `{"at":"soon","pair":["a","b",3],"other":1}`
	_, errs, err := s.Normalize(json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	want := []FieldError{
		{Path: "$", Message: "Unevaluated properties are not allowed ('other' was unexpected)", SchemaPath: "unevaluatedProperties"},
		{Path: "$.at", Message: "'soon' is not a valid date-time", SchemaPath: "properties.at.$ref.format"},
		{Path: "$.pair", Message: "Additional items are not allowed (3 was unexpected)", SchemaPath: "properties.pair.items"},
		{Path: "$.pair[1]", Message: "'b' is not of type 'integer'", SchemaPath: "properties.pair.prefixItems.1.type"},
	}
	if !slices.Equal(errs, want) {
		t.Errorf("Normalize(%s):\ngot  %s\nwant %s", params, formatFieldErrors(errs), formatFieldErrors(want))
	}
	out, errs, err := s.Normalize(json.RawMessage(`{"at":"2026-01-08T10:00:00Z","pair":["a",1]}`))
	if err != nil || errs != nil {
		t.Fatalf("Normalize(valid): %s %v", formatFieldErrors(errs), err)
	}
	if got, want := string(out), `{"at":"2026-01-08T10:00:00Z","n":7,"pair":["a",1]}`; got != want {
		t.Errorf("Normalize(valid) = %s, want %s", got, want)
	}
}

func TestSchemaRaw(t *testing.T) {
	t.Parallel()
	raw := []byte(" {\"type\": \"object\"}\n")
	s := mustCompile(t, string(raw))
	raw[2] = 'X' // the caller's buffer is not retained
	if got := string(s.Raw()); got != " {\"type\": \"object\"}\n" {
		t.Errorf("Raw() = %q, want the schema as given", got)
	}
}

// TestValidateRobustness feeds values that could crash or hang a careless validator.
func TestValidateRobustness(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	tests := []struct {
		name, schema, params string
		wantErrs             int
	}{
		{"deep array, recursive schema", `{"items":{"$ref":"#"}}`, deep, 0},
		{"deep array, typed leaves", `{"type":"array","items":{"$ref":"#"}}`, strings.Repeat("[", 3000) + "1" + strings.Repeat("]", 3000), 1},
		{"deep object", `{"additionalProperties":{"$ref":"#"},"type":"object"}`, strings.Repeat(`{"a":`, 3000) + "1" + strings.Repeat("}", 3000), 1},
		{"huge integer", `{"type":"integer","minimum":0,"multipleOf":3}`, strings.Repeat("9", 99), 0},
		{"huge integer beyond exact range", `{"type":"integer","maximum":1}`, strings.Repeat("9", 300), 1},
		{"tiny number", `{"type":"number","exclusiveMinimum":0}`, `1e-320`, 0},
		{"many errors", `{"items":{"type":"string"}}`, "[" + strings.Repeat("1,", 5000) + "1]", 5001},
		{"long string against pattern", `{"pattern":"^(a+)+$"}`, `"` + strings.Repeat("a", 100000) + `!"`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, tt.schema)
			_, errs, err := s.Normalize(json.RawMessage(tt.params))
			if err != nil {
				t.Fatalf("Normalize: %v", err)
			}
			if len(errs) != tt.wantErrs {
				t.Errorf("schema %s: got %d errors, want %d: %.500s", tt.schema, len(errs), tt.wantErrs, formatFieldErrors(errs))
			}
		})
	}

	// Values encoding/json never produces still get an answer, not a panic.
	s := mustCompile(t, `{"minimum":0}`)
	if errs := s.Validate(json.Number("1e999999999")); len(errs) != 1 || errs[0].Path != "$" {
		t.Errorf("Validate(json.Number(1e999999999)) = %s, want one error at $", formatFieldErrors(errs))
	}
	if errs := s.Validate(struct{}{}); len(errs) != 1 {
		t.Errorf("Validate(struct{}{}) = %s, want one error", formatFieldErrors(errs))
	}
}

// FuzzNormalize: no input panics; what Normalize accepts it accepts again unchanged (normalizing is
// idempotent); errors are well-formed.
func FuzzNormalize(f *testing.F) {
	for _, c := range []struct{ schema, params string }{
		{crawlerSchema, `{"url":"not-a-url","depth":"deep"}`},
		{crawlerSchema, `{"url":"https://x"}`},
		{string(ImplicitPromptSchema), `{"prompt":""}`},
		{`{"properties":{"opts":{"properties":{"v":{"default":false}}}},"required":["r"]}`, `{"r":[1,{"a":null}]}`},
		{`{"items":{"$ref":"#"},"minItems":1}`, `[[[[]]]]`},
		{`{"anyOf":[{"type":"string","format":"email"},{"type":"null"}],"oneOf":[{"const":1},{"minimum":0}]}`, `"x"`},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"integer"}],"items":false,"unevaluatedItems":false}`, `[1,2]`},
		{`{"propertyNames":{"pattern":"^[a-z]$"},"additionalProperties":{"enum":[1,"a",null,{"k":[]}]}}`, `{"A":1,"b":{"k":[]}}`},
		{`{"dependencies":{"a":["b"],"c":{"required":["d"]}},"if":{"required":["x"]},"then":{"maxProperties":1}}`, `{"a":1,"c":2,"x":3}`},
		{`{"type":"number","multipleOf":0.01,"maximum":1e308}`, `123456789012345678901234567890.5`},
	} {
		f.Add(c.schema, c.params)
	}
	f.Fuzz(func(t *testing.T, schema, params string) {
		s, err := CompileSchema(json.RawMessage(schema))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("CompileSchema(%q): error %v does not wrap ErrInvalid", schema, err)
			}
			return
		}
		out, errs, err := s.Normalize(json.RawMessage(params))
		switch {
		case err != nil:
			if ErrorCode(err) != "invalid_json" || out != nil || errs != nil {
				t.Fatalf("Normalize(%q) = %s, %v, %v", params, out, errs, err)
			}
		case len(errs) > 0:
			if out != nil {
				t.Fatalf("Normalize(%q) returned JSON %s with errors", params, out)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Path, "$") || e.Message == "" || strings.HasPrefix(e.Message, "the value could not be validated") {
					t.Fatalf("schema %q, params %q: malformed error %+v", schema, params, e)
				}
				if i > 0 && errs[i-1] == e {
					t.Fatalf("schema %q, params %q: duplicate error %+v", schema, params, e)
				}
			}
		default:
			if !json.Valid(out) {
				t.Fatalf("Normalize(%q) = %q, not JSON", params, out)
			}
			again, errs2, err2 := s.Normalize(out)
			if err2 != nil || errs2 != nil || string(again) != string(out) {
				t.Fatalf("schema %q: Normalize(%q) = %s, but Normalize(%s) = %s, %v, %v", schema, params, out, out, again, errs2, err2)
			}
		}
	})
}

// BenchmarkNormalize is the per-run cost of parameter validation at run creation (schema already compiled
// and cached): the web-crawler schema with typical parameters.
func BenchmarkNormalize(b *testing.B) {
	s := mustCompile(b, crawlerSchema)
	for _, bc := range []struct{ name, params string }{
		{"all-given", `{"url":"https://example.com/docs","depth":3}`},
		{"default-applied", `{"url":"https://example.com/docs"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			params := json.RawMessage(bc.params)
			b.ReportAllocs()
			for b.Loop() {
				if _, errs, err := s.Normalize(params); err != nil || errs != nil {
					b.Fatal(errs, err)
				}
			}
		})
	}
}

func BenchmarkNormalizeInvalid(b *testing.B) {
	s := mustCompile(b, crawlerSchema)
	params := json.RawMessage(`{"url":"not-a-url","depth":"deep"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, errs, _ := s.Normalize(params); len(errs) != 2 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkCompileSchema(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileSchema(json.RawMessage(crawlerSchema)); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAgentInfoSchemas(t *testing.T) {
	t.Parallel()
	p, o := (&AgentInfo{Type: AgentTypeAgent}).Schemas()
	if string(p) != string(ImplicitPromptSchema) || string(o) != "null" {
		t.Errorf("AI agent without schemas: %s, %s", p, o)
	}
	p, o = (&AgentInfo{Type: AgentTypeDeterministic}).Schemas()
	if string(p) != "null" || string(o) != "null" {
		t.Errorf("deterministic agent without schemas: %s, %s", p, o)
	}
	p, o = (&AgentInfo{Type: AgentTypeAgent, ParametersSchema: json.RawMessage(`{}`), OutputSchema: json.RawMessage(`{"type":"object"}`)}).Schemas()
	if string(p) != `{}` || string(o) != `{"type":"object"}` {
		t.Errorf("declared schemas: %s, %s", p, o)
	}
}
