package validate

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestPyRepr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   any
		want string
	}{
		{nil, "None"},
		{true, "True"},
		{false, "False"},
		{"plain", "'plain'"},
		{"it's", `"it's"`},
		{`it's "x"`, `'it\'s "x"'`},
		{"back\\slash", `'back\\slash'`},
		{"tab\tnl\ncr\rnul\x00del\x7f", `'tab\tnl\ncr\rnul\x00del\x7f'`},
		{"zero\u200bwidth", `'zero\u200bwidth'`},
		{"héllo 日本", "'héllo 日本'"},
		{2.0, "2"},
		{-0.5, "-0.5"},
		{1e21, "1e+21"},
		{1e20, "100000000000000000000"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{123456789.5, "123456789.5"},
		{1.5e300, "1.5e+300"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{json.Number("12345678901234567890"), "12345678901234567890"},
		{[]any{}, "[]"},
		{[]any{1.0, "a", nil, []any{true}}, "[1, 'a', None, [True]]"},
		{map[string]any{}, "{}"},
		{map[string]any{"b": 1.0, "a": map[string]any{"c": "d"}}, "{'a': {'c': 'd'}, 'b': 1}"},
		{[]string{"x", "y"}, "['x', 'y']"},
		{strings.Repeat("a", 200), "'" + strings.Repeat("a", 119) + "..."},
		{[]any{strings.Repeat("a", 200), 1.0}, "['" + strings.Repeat("a", 118) + "..."},
	}
	for _, tt := range tests {
		if got := pyRepr(tt.in); got != tt.want {
			t.Errorf("pyRepr(%#v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestJSONPath(t *testing.T) {
	t.Parallel()
	var inst any
	if err := json.Unmarshal([]byte(`{"a":[{"b":[0,{"c":1}]}],"0":{"1":[5]},"m":{"2":3}}`), &inst); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tokens []string
		want   string
	}{
		{nil, "$"},
		{[]string{"a", "0", "b", "1", "c"}, "$.a[0].b[1].c"},
		{[]string{"0", "1", "0"}, "$['0']['1'][0]"}, // object keys that look like indexes stay keys
		{[]string{"m", "2"}, "$.m['2']"},
		{[]string{"a", "7"}, "$.a['7']"}, // no such item: not claimed to be an index
		{[]string{"missing", "0"}, "$.missing['0']"},
		{[]string{"a b", "x'y", "é", "_1", "1_", ""}, `$['a b']['x\'y'].é._1['1_']['']`},
		{[]string{"ctl\x01"}, `$['ctl\u0001']`},
	}
	for _, tt := range tests {
		if got := jsonPath(inst, tt.tokens); got != tt.want {
			t.Errorf("jsonPath(%q) = %s, want %s", tt.tokens, got, tt.want)
		}
	}
}

func TestPointerTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ptr  string
		want []string
	}{
		{"", nil},
		{"/properties/a%20b/~1x~0y/~01", []string{"properties", "a b", "/x~y", "~1"}},
		{"/properties/%25", []string{"properties", "%"}},
	}
	for _, tt := range tests {
		if got := pointerTokens(tt.ptr); !slices.Equal(got, tt.want) {
			t.Errorf("pointerTokens(%q) = %q, want %q", tt.ptr, got, tt.want)
		}
		if tt.want != nil {
			if got := encodePointer(tt.want); got != tt.ptr {
				t.Errorf("encodePointer(%q) = %q, want %q", tt.want, got, tt.ptr)
			}
		}
	}
}

func TestPropertyNamesLocation(t *testing.T) {
	t.Parallel()
	var inst any
	if err := json.Unmarshal([]byte(`{"a":{"b":[{"k":1},{"k":2}]},"t":[{"x":1},{"y":2}]}`), &inst); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		parent, rel, want []string
	}{
		{nil, []string{"properties", "a", "properties", "b", "propertyNames"}, []string{"a", "b"}},
		{nil, []string{"properties", "a", "allOf", "0", "$ref", "properties", "b", "propertyNames"}, []string{"a", "b"}},
		{[]string{"a"}, []string{"properties", "b", "items", "propertyNames"}, []string{"a", "b"}}, // any item: stop at the array
		{nil, []string{"properties", "t", "items", "1", "propertyNames"}, []string{"t", "1"}},      // tuple item
		{nil, []string{"properties", "t", "prefixItems", "0", "propertyNames"}, []string{"t", "0"}},
		{nil, []string{"additionalProperties", "propertyNames"}, nil},
		{nil, []string{"properties", "missing", "propertyNames"}, nil},
	}
	for _, tt := range tests {
		if got := propertyNamesLocation(inst, tt.parent, tt.rel); !slices.Equal(got, tt.want) {
			t.Errorf("propertyNamesLocation(%q, %q) = %q, want %q", tt.parent, tt.rel, got, tt.want)
		}
	}
}
