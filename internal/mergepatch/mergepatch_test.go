package mergepatch

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestApply runs the examples of RFC 7386, Appendix A.
func TestApply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	} {
		var target, patch, want any
		for _, p := range []struct {
			s string
			v *any
		}{{tc.target, &target}, {tc.patch, &patch}, {tc.want, &want}} {
			if err := json.Unmarshal([]byte(p.s), p.v); err != nil {
				t.Fatal(err)
			}
		}
		if got := Apply(target, patch); !reflect.DeepEqual(got, want) {
			t.Errorf("Apply(%s, %s) = %v, want %s", tc.target, tc.patch, got, tc.want)
		}
	}
}
