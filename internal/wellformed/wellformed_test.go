package wellformed

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"":             true,
		"plain":        true,
		"héllo 日本 🎉":   true,
		"\ufffd":       true,
		"a\x00":        false,
		"\x00":         false,
		"\xff":         false,
		"ok\xc3":       false, // truncated sequence
		"\xed\xa0\x80": false, // an encoded surrogate is not UTF-8
	} {
		if err := String(s); (err == nil) != ok {
			t.Errorf("String(%q) = %v, want ok=%v", s, err, ok)
		}
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	for data, ok := range map[string]bool{
		`{}`:                         true,
		`{"a":"b","c":[1,"d"]}`:      true,
		`{"a":"\n\t\"\\\/\b\f\r"}`:   true,
		`{"a":"\u0001\u00e9\uFFFD"}`: true,
		`{"a":"\ud83c\udf89"}`:       true, // a surrogate pair: 🎉
		`{"a":"\\u0000"}`:            true, // an escaped backslash, then the text u0000
		`{"a":"\\\\u0000"}`:          true,
		`{"a":"🎉 日本"}`:               true,
		`{"a":"\u0000"}`:             false,
		`{"\u0000":1}`:               false,
		`["x","\\\u0000"]`:           false, // \\ then \u0000
		`{"a":"\ud83c"}`:             false,
		`{"a":"\ud83cx"}`:            false,
		`{"a":"\ud83c\u0041"}`:       false,
		`{"a":"\udf89"}`:             false,
		`{"a":"\udf89\ud83c"}`:       false,
		"{\"a\":\"\xff\"}":           false,
		"{\"a\":\"\xc3\"}":           false,
	} {
		if err := JSON([]byte(data)); (err == nil) != ok {
			t.Errorf("JSON(%s) = %v, want ok=%v", data, err, ok)
		}
	}
}

// FuzzJSON: for valid JSON, JSON accepts only text whose decoded strings hold no NUL and whose bytes are
// UTF-8, and accepts every document made of such strings without surrogate escapes.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"\u0000"}`, `["\ud83c\udf89"]`, `{"k\\u0000":"\\"}`, "\"\xff\"", `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := JSON(data)
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		hasNUL := false
		walk(v, func(s string) { hasNUL = hasNUL || strings.ContainsRune(s, 0) })
		if err == nil && (hasNUL || !utf8.Valid(data)) {
			t.Fatalf("JSON(%q) accepted it, but it decodes to a NUL or is not UTF-8", data)
		}
		if err != nil && !hasNUL && utf8.Valid(data) && !strings.Contains(strings.ToLower(string(data)), `\ud`) {
			t.Fatalf("JSON(%q) = %v, but it decodes to well-formed text and has no surrogate escapes", data, err)
		}
	})
}

func walk(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	case map[string]any:
		for k, e := range x {
			f(k)
			walk(e, f)
		}
	}
}
